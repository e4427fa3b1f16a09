import CPKCS11
import Testing

// C_EncryptInit and C_DecryptInit read a mechanism's parameter by the layout the
// registry gives it, as C_SignInit does: CKM_RSA_PKCS and CKM_RSA_X_509 take none, so a
// parameter of any length is CKR_MECHANISM_PARAM_INVALID before a key is looked at (the
// module used to ignore it here while C_SignInit refused it).

extension ModuleTests {
    @Suite("Encryption mechanisms without a parameter refuse one, as signing does")
    struct EncryptionParameters {
        @Test(
            "CKM_RSA_PKCS and CKM_RSA_X_509 with a parameter are CKR_MECHANISM_PARAM_INVALID in C_EncryptInit and C_DecryptInit"
        )
        func rsaTakesNoParameter() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                for mechanism in [UInt(CKM_RSA_PKCS), UInt(CKM_RSA_X_509)] {
                    let box = MechanismBox(mechanism, parameter: [UInt8](repeating: 0, count: 16))
                    for length: CK_ULONG in [1, 8, 16] {
                        box.mechanism.ulParameterLen = length
                        #expect(
                            try token.m.C_EncryptInit(session, &box.mechanism, 0)
                                == CKR_MECHANISM_PARAM_INVALID,
                            "C_EncryptInit, \(mechanism), \(length) bytes")
                        #expect(
                            try token.m.C_DecryptInit(session, &box.mechanism, 0)
                                == CKR_MECHANISM_PARAM_INVALID,
                            "C_DecryptInit, \(mechanism), \(length) bytes")
                    }
                    // No parameter: the key is looked at (handle 0 names none).
                    box.mechanism.ulParameterLen = 0
                    #expect(try token.m.C_EncryptInit(session, &box.mechanism, 0) == CKR_KEY_HANDLE_INVALID)
                }
            }
        }
    }
}
