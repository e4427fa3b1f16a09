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
            case .encryptedDataLengthRange: CKR_ENCRYPTED_DATA_LEN_RANGE
            case .dataLengthRange: CKR_DATA_LEN_RANGE
            case .signatureInvalid: CKR_SIGNATURE_INVALID
            case .signatureLengthRange: CKR_SIGNATURE_LEN_RANGE
            case .mechanismParameterInvalid: CKR_MECHANISM_PARAM_INVALID
            case .wrappedKeyLengthRange: CKR_WRAPPED_KEY_LEN_RANGE
            case .operationFailed: CKR_FUNCTION_FAILED
            case .domainParametersInvalid: CKR_DOMAIN_PARAMS_INVALID
            }
        self.init(rv, error.message)
    }
}
