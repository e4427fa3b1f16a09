import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every test that drives the built `libp11keychain-pkcs11.so` through its function list.
///
/// The module's state is process-global and it reads `P11KEYCHAIN_DIR` / `P11KEYCHAIN_CONF`
/// from the environment in C_Initialize, so all its suites live under this one and run one
/// test at a time; each test initialises and finalises the module on a fresh store.
@Suite("The PKCS#11 module, driven through dlopen", .serialized)
struct ModuleTests {
    @Test("The function list comes from the built .so, not from the test bundle")
    func functionsComeFromTheBuiltModule() throws {
        let module = try LoadedModule.load()
        let address = unsafeBitCast(try module.functions.C_Initialize, to: UnsafeRawPointer.self)
        let file = try #require(mappedFile(containing: address))
        #expect(
            URL(fileURLWithPath: file).resolvingSymlinksInPath().path
                == URL(fileURLWithPath: module.path).resolvingSymlinksInPath().path)
    }
}
