// swift-tools-version:6.0
//
// Layout and layering: see docs/ARCHITECTURE.md §2.2. Arrows only point down:
//   p11keychain → Security → Keychain → KeychainCore → {KeychainStorage, KeychainCrypto}
//   PKCS11Token → KeychainCore;  p11/ (C) ⇢ PKCS11Token at link time.
import Foundation
import PackageDescription

/// Absolute path of the package root: linker flags that name files must not depend on the
/// directory `swift build` is started from.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

/// The module's targets reach the metadata of concrete generic types (a `[String: String]`, a
/// `Set` of a struct) through accessors, not by mangled name: the runtime builds a type named
/// by mangled name only after finding each requirement's conformance by a scan of every
/// conformance record in the image, about 30 µs per type, the first time a process uses it;
/// a module load used a dozen such types (ARCHITECTURE.md §11.1).
let directMetadata: [SwiftSetting] = [
    .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])
]

let package = Package(
    name: "p11keychain",
    products: [
        // The PKCS#11 module: .build/<config>/libp11keychain-pkcs11.so
        .library(name: "p11keychain-pkcs11", type: .dynamic, targets: ["P11KeychainModule"]),
        // The Swift faces (ARCHITECTURE.md §1): a typed API and Apple's Security API on the same store.
        .library(name: "Keychain", targets: ["Keychain"]),
        // The command-line tool: .build/<config>/p11keychain
        .executable(name: "p11keychain", targets: ["p11keychain"]),
        .library(name: "Security", targets: ["Security"]),
        // The PAM module (docs/pam.md): .build/<config>/libpam_p11keychain.so, installed as
        // pam_p11keychain.so; C alone, it runs its helper, installed as
        // /usr/libexec/p11keychain/pam-helper.
        .library(name: "pam_p11keychain", type: .dynamic, targets: ["CPAM"]),
        .executable(name: "p11keychain-pam-helper", targets: ["PAMKeychain"]),
        // Apple's LAContext over the keychain PIN (ARCHITECTURE.md §7.4).
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // libpq's declarations for the PostgreSQL engine (ARCHITECTURE.md §4.5). Headers only:
        // libpq itself is opened with dlopen when a PostgreSQL store is first used, not linked.
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The kernel key retention service: the session keyring `p11keychain unlock` fills.
        // keyutils.h only: libkeyutils is opened with dlopen when the keyring is first used.
        .systemLibrary(name: "CKeyutils", providers: [.apt(["libkeyutils-dev"])]),
        // libp11-kit's RFC 7512 URI parser and formatter, for the CLI's pkcs11: URIs.
        .systemLibrary(name: "CP11Kit", pkgConfig: "p11-kit-1", providers: [.apt(["libp11-kit-dev"])]),
        // The PKCS#11 module's C: function tables and the C_Get*Interface* entry points.
        .target(name: "CPKCS11", path: "p11", exclude: ["exports.map"]),
        .target(name: "KeychainStorage", dependencies: ["CSQLite", "CLibPQ"], swiftSettings: directMetadata),
        .target(name: "KeychainCrypto", dependencies: ["COpenSSL"], swiftSettings: directMetadata),
        .target(
            name: "KeychainCore", dependencies: ["KeychainStorage", "KeychainCrypto", "CKeyutils"],
            swiftSettings: directMetadata),
        // The C ABI adapter: pointers, buffers, handles and CK_RV; every operation is the core's.
        .target(
            name: "PKCS11Token", dependencies: ["KeychainCore", "CPKCS11"], swiftSettings: directMetadata),
        // Carries the module's linker flags (ARCHITECTURE.md §11.1): they must not reach test binaries.
        .target(
            name: "P11KeychainModule",
            dependencies: ["PKCS11Token"],
            linkerSettings: [
                .unsafeFlags([
                    "-static-stdlib",
                    "-Xlinker", "--version-script=\(root)/p11/exports.map",
                    "-Xlinker", "-Bsymbolic",
                    "-Xlinker", "-z", "-Xlinker", "now",
                ]),
                // The Swift runtime's C++ library and GCC's support library (its unwinder)
                // linked in, not loaded beside the module: in release only, the module hosts
                // load; the test and sanitizer builds keep the toolchain's shared ones.
                // libgcc_s.so.1's initialiser alone was 0.1 ms of a host's dlopen
                // (ARCHITECTURE.md §11.1).
                .unsafeFlags(
                    [
                        "-Xclang-linker", "--ld-path=\(root)/scripts/ld-static-libstdcxx.sh",
                        "-Xclang-linker", "-static-libgcc",
                    ],
                    .when(configuration: .release)),
            ]
        ),
        // The PAM module (ARCHITECTURE.md §6.5), C alone: its entry points (pam_sm_*) keep the
        // password from auth to the session and exec the helper as the target user, so that
        // no Swift runs in the host (a multithreaded one may not run it after fork). Its
        // linker flags reach nothing else: no other target depends on it.
        .target(
            name: "CPAM", path: "pam", exclude: ["exports.map"],
            linkerSettings: [
                .linkedLibrary("pam"),
                .unsafeFlags([
                    "-Xlinker", "--version-script=\(root)/pam/exports.map",
                    // swiftc links every product with the Swift runtime and its start-up
                    // object; this C one uses neither: without the object nothing asks for the
                    // static runtime, so none of it is linked in.
                    "-nostartfiles", "-static-stdlib",
                    "-Xlinker", "-Bsymbolic",
                    "-Xlinker", "-z", "-Xlinker", "now",
                ]),
            ]),
        // The PAM module's helper: the password from a socket, one KeychainCore call
        // (LoginKeychain.swift), a log line and an exit status out. Static as the CLI is, for
        // the same reason.
        .executableTarget(
            name: "PAMKeychain", dependencies: ["KeychainCore"],
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // Typed Swift API over KeychainCore; Foundation is allowed from here up (ARCHITECTURE.md §2.2).
        .target(name: "Keychain", dependencies: ["KeychainCore"]),
        // The command-line tool over Keychain; KeychainCore only to count the objects of every
        // class a token holds and read the PIN state of tokens not opened (list-tokens), and for
        // the PIN length limits.
        // The release program links the Swift runtime and Foundation statically, so that the
        // installed program (make install, the .deb) runs where no Swift toolchain is (issue
        // 12). Linking alone is not enough: the target must be compiled against swift_static's
        // Foundation too, whose module names what it needs (CoreFoundation, ICU) to the linker.
        // Debug builds stay dynamic (fast links for the tests).
        .executableTarget(
            name: "p11keychain", dependencies: ["Keychain", "KeychainCore", "CP11Kit"],
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // Apple-compatible façade (SecItem*, SecCertificate*, kSec*, OSStatus) over Keychain.
        .target(name: "Security", dependencies: ["Keychain", "LocalAuthentication"]),
        // Apple's LocalAuthentication: the device owner is the keychain's user, asked through pinentry.
        .target(name: "LocalAuthentication", dependencies: ["Keychain"]),
        // Apple's "Storing a Certificate in the Keychain", written as on Apple platforms.
        .executableTarget(
            name: "store-certificate-example", dependencies: ["Security"],
            path: "Examples/StoreCertificate"),
        // Apple-style code that never unlocks: it relies on `p11keychain unlock` for the login
        // session (Tests/Integration/test_session_unlock.sh, bench/session.sh).
        .executableTarget(
            name: "session-unlock-example", dependencies: ["Security"], path: "Examples/SessionUnlock"),
        // The Swift API's benchmark (bench/session.sh): SecItemAdd and SecItemCopyMatching rates.
        .executableTarget(
            name: "secitem-bench", dependencies: ["Security", "LocalAuthentication"],
            path: "bench/SecItemBench"),
        // What the test targets share (temporary directories, named inputs, the program runner,
        // the test PINs): one copy. It links nothing of the project, so any test target may use it.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "KeychainStorageTests", dependencies: ["KeychainStorage", "TestSupport"]),
        .testTarget(name: "KeychainCryptoTests", dependencies: ["KeychainCrypto", "TestSupport"]),
        // Run by KeychainCryptoTests as a child process under a hostile OPENSSL_CONF: OpenSSL's
        // default context is configured once per process, so the test needs a fresh one.
        .executableTarget(
            name: "crypto-context-probe", dependencies: ["KeychainCrypto"], path: "Tests/KeychainCryptoProbe"),
        // KeychainStorage and KeychainCrypto: to lay out a store as an older version wrote it.
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: ["KeychainCore", "KeychainStorage", "KeychainCrypto", "TestSupport"]),
        // Drives the built .so through dlopen, as every PKCS#11 host does. It must not depend
        // on P11KeychainModule: that target's -static-stdlib would reach the test bundle and
        // break its link (ARCHITECTURE.md §11.1). `swift build --build-tests` and `swift test` build the
        // product anyway, next to the test bundle. PKCS11Token is linked only because CPKCS11's
        // tables name the C_* entry points; the tests call nothing but the dlopen'ed module.
        // TestSupport links no project code and no linker flags.
        .testTarget(name: "PKCS11ModuleTests", dependencies: ["CPKCS11", "PKCS11Token", "TestSupport"]),
        .testTarget(name: "KeychainTests", dependencies: ["Keychain", "TestSupport"]),
        // Runs the built p11keychain program as a subprocess and hands the built .so to p11tool;
        // it links no project target (TestSupport only): `swift test` builds every product next
        // to the test bundle.
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
        // The cross-face tests hand the built .so to p11tool; they do not depend on
        // P11KeychainModule (its linker flags must not reach a test bundle).
        .testTarget(
            name: "SecurityTests",
            dependencies: ["Security", "Keychain", "LocalAuthentication", "TestSupport"]),
        // Apple's documented snippets, compiled with only `import Foundation` and `import Security`
        // (the tests beside them also use TestSupport's trust fixtures and `openssl verify`).
        .testTarget(
            name: "AppleSnippetsTests", dependencies: ["Security", "LocalAuthentication", "TestSupport"]),
        // The same Apple-style snippets (symbolic links to AppleSnippetsTests' files) compiled in
        // Swift 5 language mode: Apple code is written in both.
        .testTarget(
            name: "AppleSnippetsSwift5Tests", dependencies: ["Security", "LocalAuthentication"],
            swiftSettings: [.swiftLanguageMode(.v5)]),
        // bench/trust.sh: SecTrustEvaluateWithError in a loop, beside bench/trust.c's X509_verify_cert.
        .executableTarget(name: "trust-bench", dependencies: ["Security"], path: "bench/TrustBench"),
        // Apple-style files that import only Foundation: on Apple platforms Foundation brings
        // Security's names along; here one build setting does (README, "Swift API").
        .testTarget(
            name: "FoundationOnlyTests", dependencies: ["Security"],
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-import-module", "-Xfrontend", "Security"])]),
    ],
    swiftLanguageModes: [.v6]
)
