import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Registering the PKCS#11 module with p11-kit (ARCHITECTURE.md §5), so that p11-kit's clients
/// (p11tool, certtool, GnuTLS and NSS through p11-kit-proxy) find the token unasked.
enum ModuleCommands {
    static let all = [register, unregister, modulePath]

    static let moduleFileName = "p11keychain.module"
    /// The registration with `trust-policy: yes`. It replaces the plain one rather than sitting
    /// beside it: p11-kit loads one module per library, and with both files it keeps the plain
    /// registration and drops the trust-policy flag (measured with p11-kit 0.24).
    static let trustModuleFileName = "p11keychain-trust.module"
    static let libraryName = "libp11keychain-pkcs11.so"
    /// p11-kit's own directory of module files, where the Debian package and `make install`
    /// put p11keychain.module. A file of the same name in /etc/pkcs11/modules or the user's
    /// directory overrides it; a file of another name is a second registration of the library.
    static let packageModulesDirectory = "/usr/share/p11-kit/modules"

    private static let user = Option(
        long: "user", help: "for this user: $XDG_CONFIG_HOME/pkcs11/modules (default ~/.config/...)")
    private static let system = Option(
        long: "system", help: "for every user: /etc/pkcs11/modules (the default for root)")
    private static let module = Option(
        long: "module", value: "PATH", help: "the module library (default: see module-path)")
    private static let trust = Option(
        long: "trust", help: "a trust source too: trust-policy: yes, in \(trustModuleFileName)")

    private static let scopeNote = """
        p11-kit reads ~/.config/pkcs11/modules/ and /etc/pkcs11/modules/, but when it runs as
        root only the latter: so the default is --system for root and --user for anyone else.
        """

    private static let lookupNote = """
        The module is, in this order: --module PATH; $P11KEYCHAIN_MODULE;
        \(libraryName) in the directory of the p11keychain program; or, from that
        directory, in ../lib/pkcs11/ (make install: /usr/local/bin, /usr/local/lib/pkcs11),
        ../lib/<multiarch>/pkcs11/ (the Debian package: /usr/lib/x86_64-linux-gnu/pkcs11)
        or ../lib/p11keychain/.
        """

    // MARK: register

    static let register = Command(
        name: "register", synopsis: "[--user | --system] [--trust] [--module PATH]",
        summary: "Register the PKCS#11 module with p11-kit (write \(moduleFileName))",
        options: [user, system, trust, module],
        notes: [
            """
            Writes \(moduleFileName) with the module's absolute path and "critical: no" (a
            module that fails to load never stops p11-kit from offering the others). Running it
            again updates the path. Check with: p11-kit list-modules
            """,
            """
            With --trust, writes \(trustModuleFileName) instead, which also says
            "trust-policy: yes": p11-kit's trust tools (trust list) and GnuTLS then read the
            keychain's anchors and distrusted certificates. Only one of the two files is kept:
            p11-kit loads a library once, and with both files it ignores the trust policy. Where
            the package's \(packageModulesDirectory)/\(moduleFileName) exists, --trust writes
            \(moduleFileName) (with the trust policy), which overrides it.
            """,
            scopeNote, lookupNote,
        ],
        run: { invocation throws(Failure) in try registerModule(invocation) })

    private static func registerModule(_ invocation: Invocation) throws(Failure) {
        let directory = try modulesDirectory(invocation)
        let library = try modulePath(invocation)
        let asTrustSource = invocation.flag("trust")
        // Beside the package's p11keychain.module, a p11keychain-trust.module would be a second
        // registration of the library, and p11-kit would keep the package's, without the trust
        // policy: the trust registration then takes the package file's name and overrides it.
        let packaged = Files.exists(packageModulesDirectory + "/" + moduleFileName)
        let name = asTrustSource && !packaged ? trustModuleFileName : moduleFileName
        let file = directory + "/" + name
        let text = """
            # The p11keychain token, registered by `p11keychain register\(asTrustSource ? " --trust" : "")`.
            # Remove with `p11keychain unregister`; see pkcs11.conf(5).
            module: \(library)
            critical: no

            """ + (asTrustSource ? "trust-policy: yes\n" : "")
        let hint = invocation.flag("user") || getuid() == 0 ? "" : " (run as root, or use --user)"
        try Files.makeDirectories(directory)
        do {
            try Files.write(Array(text.utf8), to: file)
        } catch {
            throw .failed(error.message + hint)
        }
        // The other kind of registration goes: with both, p11-kit drops the trust policy.
        let other = directory + "/" + (name == moduleFileName ? trustModuleFileName : moduleFileName)
        guard unlink(other) == 0 || errno == ENOENT else {
            throw .failed("cannot remove \(other): \(Files.reason())\(hint)")
        }
        Console.print("registered \(library) with p11-kit in \(file)\n")
    }

    // MARK: unregister

    static let unregister = Command(
        name: "unregister", synopsis: "[--user | --system]",
        summary: "Unregister the PKCS#11 module from p11-kit (remove \(moduleFileName))",
        options: [user, system],
        notes: [
            """
            Removes \(trustModuleFileName) too (register --trust). When nothing is registered
            there is nothing to do, and that is not an error.
            """,
            scopeNote,
        ],
        run: { invocation throws(Failure) in try unregisterModule(invocation) })

    private static func unregisterModule(_ invocation: Invocation) throws(Failure) {
        let directory = try modulesDirectory(invocation)
        var removed = false
        for name in [moduleFileName, trustModuleFileName] {
            let file = directory + "/" + name
            guard Files.exists(file) else { continue }
            guard unlink(file) == 0 else {
                let hint = invocation.flag("user") || getuid() == 0 ? "" : " (run as root, or use --user)"
                throw .failed("cannot remove \(file): \(Files.reason())\(hint)")
            }
            Console.print("removed \(file)\n")
            removed = true
        }
        if !removed {
            Console.print("not registered: \(directory + "/" + moduleFileName) does not exist\n")
        }
    }

    // MARK: module-path

    static let modulePath = Command(
        name: "module-path", synopsis: "[--module PATH]",
        summary: "Print the path of the PKCS#11 module library",
        options: [module],
        notes: [lookupNote, "A module that cannot be found is a failure (exit status 1)."],
        run: { invocation throws(Failure) in Console.print(try modulePath(invocation) + "\n") })

    /// The module library's absolute path, links resolved.
    private static func modulePath(_ invocation: Invocation) throws(Failure) -> String {
        // An explicit choice that names nothing is an error, never a reason to look elsewhere.
        let explicit: [(String?, String)] = [
            (invocation.value("module"), "--module"),
            (
                invocation.environment["P11KEYCHAIN_MODULE"].flatMap { $0.isEmpty ? nil : $0 },
                "P11KEYCHAIN_MODULE"
            ),
        ]
        for case (let path?, let source) in explicit {
            guard Files.isRegularFile(path), let resolved = Files.canonical(path) else {
                throw .failed("no module library at \(path) (from \(source))")
            }
            guard isSharedObject(resolved) else {
                throw .failed("\(path) (from \(source)) is not a shared library; name \(libraryName)")
            }
            return resolved
        }
        guard let program = Files.canonical("/proc/self/exe") else {
            throw .failed("cannot find the p11keychain program's directory (give --module PATH)")
        }
        let directory = String(program[..<(program.lastIndex(of: "/") ?? program.startIndex)])
        let candidates =
            [directory + "/" + libraryName, directory + "/../lib/pkcs11/" + libraryName]
            + (multiarch.map { [directory + "/../lib/\($0)/pkcs11/" + libraryName] } ?? [])
            + [directory + "/../lib/p11keychain/" + libraryName]
        for candidate in candidates where Files.isRegularFile(candidate) {
            if let resolved = Files.canonical(candidate) { return resolved }
        }
        throw .failed(
            "no \(libraryName) in \(directory) or \(directory)/../lib/{pkcs11,<multiarch>/pkcs11,p11keychain} "
                + "(build it: swift build --product p11keychain-pkcs11; "
                + "or give --module PATH or set P11KEYCHAIN_MODULE)"
        )
    }

    /// Debian's multiarch tuple, the library directory of an install with PREFIX=/usr (the
    /// package), where p11-kit looks for modules.
    #if arch(x86_64)
        private static let multiarch: String? = "x86_64-linux-gnu"
    #elseif arch(arm64)
        private static let multiarch: String? = "aarch64-linux-gnu"
    #else
        private static let multiarch: String? = nil
    #endif

    /// True when the file starts like an ELF shared object: a cheap check that catches a
    /// wrong path before p11-kit meets it (the command never loads the module itself).
    private static func isSharedObject(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var header = [UInt8](repeating: 0, count: 18)
        let count = header.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        // "\x7fELF", then e_type (offset 16, little-endian on Linux x86-64 and arm64): ET_DYN = 3.
        return count == header.count && header[0..<4] == [0x7F, 0x45, 0x4C, 0x46] && header[16] == 3
    }

    /// The p11-kit module directory for the scope asked for.
    private static func modulesDirectory(_ invocation: Invocation) throws(Failure) -> String {
        if invocation.flag("user"), invocation.flag("system") {
            throw .usage("--user and --system exclude each other")
        }
        let systemScope = invocation.flag("system") || (!invocation.flag("user") && getuid() == 0)
        if systemScope { return "/etc/pkcs11/modules" }
        // p11-kit expands ~/.config through $XDG_CONFIG_HOME when it is set.
        if let configHome = invocation.environment["XDG_CONFIG_HOME"], !configHome.isEmpty {
            return configHome + "/pkcs11/modules"
        }
        guard let home = invocation.environment["HOME"], !home.isEmpty else {
            throw .failed(
                "HOME is not set, so the user's p11-kit directory is unknown (set HOME, or use --system)")
        }
        return home + "/.config/pkcs11/modules"
    }
}
