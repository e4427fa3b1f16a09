import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension ModuleTests {
    @Suite("A configuration error is said once per process (ARCHITECTURE.md §5)")
    struct ConfigurationErrorOnce {
        @Test(
            "A host that calls C_Initialize again on a bad configuration gets CKR_GENERAL_ERROR each time, one stderr line"
        )
        func saidOnce() throws {
            try withStore { token throws in
                let path = try token.configure("[token login]\nbogus = 1\n")
                let (rv, output) = try capturingStandardError { () throws -> CK_RV in
                    let first = try token.m.C_Initialize(nil)
                    let second = try token.m.C_Initialize(nil)
                    let third = try token.m.C_Initialize(nil)
                    return first == second && second == third ? first : CKR_FUNCTION_FAILED
                }
                #expect(rv == CKR_GENERAL_ERROR)
                #expect(output.contains("configuration error: \(path):2:"), "stderr: \(output)")
                #expect(output.components(separatedBy: "configuration error").count == 2, "stderr: \(output)")
                try token.configure("debug = no\n")
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
            }
        }
    }
}
