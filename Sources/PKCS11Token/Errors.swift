internal import CPKCS11
internal import KeychainCore

/// A failed PKCS#11 call: the CK_RV to return and a message for the trace. The message
/// never contains an attribute value, a PIN or key material.
struct P11Error: Error {
    var rv: CK_RV
    var message: String

    init(_ rv: CK_RV, _ message: String = "") {
        self.rv = rv
        self.message = message
    }

    static let argumentsBad = P11Error(CKR_ARGUMENTS_BAD, "a required pointer is NULL")

    /// The one table from item-model errors to CK_RV.
    init(_ error: CoreError) {
        let rv: CK_RV =
            switch error.code {
            case .attributeTypeInvalid: CKR_ATTRIBUTE_TYPE_INVALID
            case .attributeValueInvalid: CKR_ATTRIBUTE_VALUE_INVALID
            case .attributeReadOnly: CKR_ATTRIBUTE_READ_ONLY
            case .attributeSensitive: CKR_ATTRIBUTE_SENSITIVE
            case .templateIncomplete: CKR_TEMPLATE_INCOMPLETE
            case .templateInconsistent: CKR_TEMPLATE_INCONSISTENT
            // PKCS#11 has no "duplicate" code: the value of the template (the certificate)
            // is what cannot be stored again. Documented in README.
            case .duplicateItem: CKR_ATTRIBUTE_VALUE_INVALID
            case .objectNotFound: CKR_OBJECT_HANDLE_INVALID
            case .actionProhibited: CKR_ACTION_PROHIBITED
            case .sessionReadOnly: CKR_SESSION_READ_ONLY
            case .userNotLoggedIn: CKR_USER_NOT_LOGGED_IN
            case .tokenWriteProtected: CKR_TOKEN_WRITE_PROTECTED
            case .tokenNotPresent: CKR_TOKEN_NOT_PRESENT
            case .storageFull: CKR_DEVICE_MEMORY
            case .storageBusy, .storageCorrupt, .storageFailure: CKR_DEVICE_ERROR
            case .unsupported: CKR_FUNCTION_FAILED
            case .invalidArgument: CKR_ARGUMENTS_BAD
            case .pinIncorrect: CKR_PIN_INCORRECT
            case .pinLocked: CKR_PIN_LOCKED
            case .pinLengthRange: CKR_PIN_LEN_RANGE
            case .userPINNotInitialized: CKR_USER_PIN_NOT_INITIALIZED
            case .userAlreadyLoggedIn: CKR_USER_ALREADY_LOGGED_IN
            case .userAnotherAlreadyLoggedIn: CKR_USER_ANOTHER_ALREADY_LOGGED_IN
            case .keyTypeInconsistent: CKR_KEY_TYPE_INCONSISTENT
            case .keyFunctionNotPermitted: CKR_KEY_FUNCTION_NOT_PERMITTED
            case .keySizeRange: CKR_KEY_SIZE_RANGE
            case .curveNotSupported: CKR_CURVE_NOT_SUPPORTED
            case .mechanismInvalid: CKR_MECHANISM_INVALID
            case .keyUnextractable: CKR_KEY_UNEXTRACTABLE
            case .keyNotWrappable: CKR_KEY_NOT_WRAPPABLE
            case .wrappedKeyInvalid: CKR_WRAPPED_KEY_INVALID
            case .keyIndigestible: CKR_KEY_INDIGESTIBLE
            case .encryptedDataInvalid: CKR_ENCRYPTED_DATA_INVALID
            }
        self.init(rv, error.message)
    }
}

/// Names of return codes for the trace.
enum ReturnCodeName {
    static func of(_ rv: CK_RV) -> String {
        switch rv {
        case CKR_OK: "CKR_OK"
        case CKR_ARGUMENTS_BAD: "CKR_ARGUMENTS_BAD"
        case CKR_ATTRIBUTE_READ_ONLY: "CKR_ATTRIBUTE_READ_ONLY"
        case CKR_ATTRIBUTE_SENSITIVE: "CKR_ATTRIBUTE_SENSITIVE"
        case CKR_ATTRIBUTE_TYPE_INVALID: "CKR_ATTRIBUTE_TYPE_INVALID"
        case CKR_ATTRIBUTE_VALUE_INVALID: "CKR_ATTRIBUTE_VALUE_INVALID"
        case CKR_ACTION_PROHIBITED: "CKR_ACTION_PROHIBITED"
        case CKR_BUFFER_TOO_SMALL: "CKR_BUFFER_TOO_SMALL"
        case CKR_CRYPTOKI_NOT_INITIALIZED: "CKR_CRYPTOKI_NOT_INITIALIZED"
        case CKR_CRYPTOKI_ALREADY_INITIALIZED: "CKR_CRYPTOKI_ALREADY_INITIALIZED"
        case CKR_DEVICE_ERROR: "CKR_DEVICE_ERROR"
        case CKR_DEVICE_MEMORY: "CKR_DEVICE_MEMORY"
        case CKR_FUNCTION_FAILED: "CKR_FUNCTION_FAILED"
        case CKR_FUNCTION_NOT_SUPPORTED: "CKR_FUNCTION_NOT_SUPPORTED"
        case CKR_FUNCTION_NOT_PARALLEL: "CKR_FUNCTION_NOT_PARALLEL"
        case CKR_GENERAL_ERROR: "CKR_GENERAL_ERROR"
        case CKR_KEY_HANDLE_INVALID: "CKR_KEY_HANDLE_INVALID"
        case CKR_MECHANISM_INVALID: "CKR_MECHANISM_INVALID"
        case CKR_MECHANISM_PARAM_INVALID: "CKR_MECHANISM_PARAM_INVALID"
        case CKR_OBJECT_HANDLE_INVALID: "CKR_OBJECT_HANDLE_INVALID"
        case CKR_OPERATION_ACTIVE: "CKR_OPERATION_ACTIVE"
        case CKR_OPERATION_NOT_INITIALIZED: "CKR_OPERATION_NOT_INITIALIZED"
        case operationCancelFailed: "CKR_OPERATION_CANCEL_FAILED"
        case CKR_DATA_LEN_RANGE: "CKR_DATA_LEN_RANGE"
        case CKR_ENCRYPTED_DATA_LEN_RANGE: "CKR_ENCRYPTED_DATA_LEN_RANGE"
        case CKR_SIGNATURE_LEN_RANGE: "CKR_SIGNATURE_LEN_RANGE"
        case CKR_RANDOM_SEED_NOT_SUPPORTED: "CKR_RANDOM_SEED_NOT_SUPPORTED"
        case CKR_SESSION_HANDLE_INVALID: "CKR_SESSION_HANDLE_INVALID"
        case CKR_SESSION_PARALLEL_NOT_SUPPORTED: "CKR_SESSION_PARALLEL_NOT_SUPPORTED"
        case CKR_SESSION_READ_ONLY: "CKR_SESSION_READ_ONLY"
        case CKR_SLOT_ID_INVALID: "CKR_SLOT_ID_INVALID"
        case CKR_TEMPLATE_INCOMPLETE: "CKR_TEMPLATE_INCOMPLETE"
        case CKR_TEMPLATE_INCONSISTENT: "CKR_TEMPLATE_INCONSISTENT"
        case CKR_TOKEN_NOT_PRESENT: "CKR_TOKEN_NOT_PRESENT"
        case CKR_TOKEN_WRITE_PROTECTED: "CKR_TOKEN_WRITE_PROTECTED"
        case CKR_USER_NOT_LOGGED_IN: "CKR_USER_NOT_LOGGED_IN"
        case CKR_USER_PIN_NOT_INITIALIZED: "CKR_USER_PIN_NOT_INITIALIZED"
        case CKR_USER_TYPE_INVALID: "CKR_USER_TYPE_INVALID"
        case CKR_CANT_LOCK: "CKR_CANT_LOCK"
        case CKR_PIN_INCORRECT: "CKR_PIN_INCORRECT"
        case CKR_PIN_LOCKED: "CKR_PIN_LOCKED"
        case CKR_PIN_LEN_RANGE: "CKR_PIN_LEN_RANGE"
        case CKR_SESSION_EXISTS: "CKR_SESSION_EXISTS"
        case CKR_SESSION_READ_ONLY_EXISTS: "CKR_SESSION_READ_ONLY_EXISTS"
        case CKR_SESSION_READ_WRITE_SO_EXISTS: "CKR_SESSION_READ_WRITE_SO_EXISTS"
        case CKR_USER_ALREADY_LOGGED_IN: "CKR_USER_ALREADY_LOGGED_IN"
        case CKR_USER_ANOTHER_ALREADY_LOGGED_IN: "CKR_USER_ANOTHER_ALREADY_LOGGED_IN"
        case CKR_KEY_SIZE_RANGE: "CKR_KEY_SIZE_RANGE"
        case CKR_KEY_TYPE_INCONSISTENT: "CKR_KEY_TYPE_INCONSISTENT"
        case CKR_KEY_FUNCTION_NOT_PERMITTED: "CKR_KEY_FUNCTION_NOT_PERMITTED"
        case CKR_KEY_UNEXTRACTABLE: "CKR_KEY_UNEXTRACTABLE"
        case CKR_KEY_NOT_WRAPPABLE: "CKR_KEY_NOT_WRAPPABLE"
        case CKR_KEY_INDIGESTIBLE: "CKR_KEY_INDIGESTIBLE"
        case CKR_WRAPPED_KEY_INVALID: "CKR_WRAPPED_KEY_INVALID"
        case CKR_WRAPPED_KEY_LEN_RANGE: "CKR_WRAPPED_KEY_LEN_RANGE"
        case CKR_WRAPPING_KEY_HANDLE_INVALID: "CKR_WRAPPING_KEY_HANDLE_INVALID"
        case CKR_WRAPPING_KEY_TYPE_INCONSISTENT: "CKR_WRAPPING_KEY_TYPE_INCONSISTENT"
        case CKR_UNWRAPPING_KEY_HANDLE_INVALID: "CKR_UNWRAPPING_KEY_HANDLE_INVALID"
        case CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT: "CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT"
        case CKR_DOMAIN_PARAMS_INVALID: "CKR_DOMAIN_PARAMS_INVALID"
        case CKR_CURVE_NOT_SUPPORTED: "CKR_CURVE_NOT_SUPPORTED"
        case CKR_ENCRYPTED_DATA_INVALID: "CKR_ENCRYPTED_DATA_INVALID"
        case CKR_SIGNATURE_INVALID: "CKR_SIGNATURE_INVALID"
        default: "CKR_0x" + String(rv, radix: 16)
        }
    }
}
