import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension ModuleTests {
    @Suite("A P11KEYCHAIN_CONF that names no file (ARCHITECTURE.md §5)")
    struct MissingConfigurationFile {
        @Test(
            "A P11KEYCHAIN_CONF that does not exist fails C_Initialize as any configuration error does, naming the file"
        )
        func missingFileIsAConfigurationError() throws {
            try withStore { token throws in
                let missing = token.storePath + ".missing.conf"
                setenv("P11KEYCHAIN_CONF", missing, 1)
                let (rv, output) = try capturingStandardError { try token.m.C_Initialize(nil) }
                #expect(rv == CKR_GENERAL_ERROR)
                #expect(
                    output.contains("configuration error: \(missing): does not exist"), "stderr: \(output)")
                #expect(output.contains("P11KEYCHAIN_CONF"), "stderr: \(output)")
                // Said once, not per call.
                #expect(output.components(separatedBy: missing).count == 2, "stderr: \(output)")
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
                // The default store was not opened in its place.
                #expect(!FileManager.default.fileExists(atPath: token.storePath))
                // With the file there, the module starts.
                try token.configure("debug = no\n")
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
            }
        }
    }
}
