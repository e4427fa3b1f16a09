#if canImport(Glibc)
    import Glibc
#endif

/// A system library opened with `dlopen` when it is first needed instead of linked, and its
/// functions looked up by name: libpq for a PostgreSQL store (LibPQ.swift, ARCHITECTURE.md
/// §4.5) and libkeyutils for the session keyring (KeychainCore/Keyutils.swift, §11.1).
/// Linked, each was loaded into every host of the module, used or not. Never closed: a
/// host's dlclose of the module leaves it loaded.
package struct DynamicLibrary {
    private let handle: UnsafeMutableRawPointer
    /// The names `function(_:as:)` did not find, in the order asked.
    package private(set) var missing: [String] = []

    /// Why a library could not be opened: dlerror's text.
    package struct OpenFailure: Error {
        package let reason: String
    }

    private init(handle: UnsafeMutableRawPointer) { self.handle = handle }

    /// Opens `soname` (RTLD_NOW, RTLD_LOCAL: its symbols stay out of the host's scope).
    package static func open(_ soname: String) -> Result<DynamicLibrary, OpenFailure> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            return .failure(OpenFailure(reason: dlerror().map { String(cString: $0) } ?? "not found"))
        }
        return .success(DynamicLibrary(handle: handle))
    }

    /// The function `name` as a C function pointer of `type` (a `__typeof__` of the header's
    /// declaration), or nil, and `name` added to `missing`.
    package mutating func function<F>(_ name: String, as type: F.Type) -> F? {
        guard let address = dlsym(handle, name) else {
            missing.append(name)
            return nil
        }
        return unsafeBitCast(address, to: type)
    }
}
