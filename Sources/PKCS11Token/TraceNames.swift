internal import CPKCS11
internal import KeychainCore

// The trace and the error messages name PKCS#11 constants from KeychainCore's tables
// (PKCS11Names): one table per code space, shared with the messages KeychainCore writes.

/// Names of return codes for the trace: `CKR_KEY_SIZE_RANGE`, a vendor code in hexadecimal.
enum ReturnCodeName {
    static func of(_ rv: CK_RV) -> String { PKCS11Names.returnCode(UInt64(rv)) }
}

/// A mechanism's name for an error message: `CKM_ECDSA_SHA256`, a vendor one in hexadecimal.
func mechanismName(_ type: CK_MECHANISM_TYPE) -> String {
    PKCS11Names.mechanism(UInt64(type))
}
