internal import KeychainCrypto
internal import KeychainStorage

/// An error of the item model, shared by every face. The PKCS#11 adapter maps `code` to a
/// CK_RV and the Swift API to an OSStatus, each with one table. Messages help the user fix
/// the problem and never contain attribute values, PINs or keys.
public struct CoreError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        case attributeTypeInvalid
        case attributeValueInvalid
        case attributeReadOnly
        case attributeSensitive
        case templateIncomplete
        case templateInconsistent
        /// An item with the same unique key (certificate type, issuer, serial) exists.
        case duplicateItem
        case objectNotFound
        /// CKA_MODIFIABLE, CKA_COPYABLE or CKA_DESTROYABLE forbids the operation.
        case actionProhibited
        case sessionReadOnly
        case userNotLoggedIn
        case tokenWriteProtected
        /// The store cannot be opened or created.
        case tokenNotPresent
        case storageFull
        case storageBusy
        case storageCorrupt
        case storageFailure
        case unsupported
        case invalidArgument
        /// The PIN is wrong; the failure was counted.
        case pinIncorrect
        /// Too many wrong PINs: only the security officer can set a new user PIN.
        case pinLocked
        /// The PIN is shorter or longer than the token accepts.
        case pinLengthRange
        /// No user PIN is set yet (C_InitPIN sets it).
        case userPINNotInitialized
        case userAlreadyLoggedIn
        case userAnotherAlreadyLoggedIn
        /// The key's type does not fit the mechanism.
        case keyTypeInconsistent
        /// The key's usage attribute forbids the operation (CKA_SIGN, CKA_DECRYPT…).
        case keyFunctionNotPermitted
        /// A key size outside what the mechanism supports.
        case keySizeRange
        /// An elliptic curve the token does not support.
        case curveNotSupported
        /// A mechanism that cannot do what was asked, or one the key's CKA_ALLOWED_MECHANISMS
        /// leaves out.
        case mechanismInvalid
        /// The key to wrap is not extractable (CKA_EXTRACTABLE false).
        case keyUnextractable
        /// The key may be wrapped only by a trusted key (CKA_WRAP_WITH_TRUSTED), and the
        /// wrapping key is not one.
        case keyNotWrappable
        /// Unwrapped bytes that are not a key of the kind the template asks for.
        case wrappedKeyInvalid
        /// A key C_DigestKey may not digest.
        case keyIndigestible
        /// Ciphertext that does not decrypt: an authentication tag that does not verify, or bad
        /// padding. No plaintext is released.
        case encryptedDataInvalid
        /// Ciphertext of a length the mechanism cannot have produced.
        case encryptedDataLengthRange
        /// Input of a length the mechanism or key cannot take.
        case dataLengthRange
        /// A signature or MAC that does not verify.
        case signatureInvalid
        /// A signature or MAC of a length the mechanism cannot have produced.
        case signatureLengthRange
        /// A mechanism parameter that is malformed or asks for what the token does not do.
        case mechanismParameterInvalid
        /// Wrapped bytes of a length the mechanism cannot have produced.
        case wrappedKeyLengthRange
        /// The cryptographic library failed an operation that should have worked.
        case operationFailed
        /// A peer's public value that is not a point of the key's curve (or no public key of
        /// its kind): a key agreement cannot run with it.
        case domainParametersInvalid
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The one table from storage errors to item-model errors.
    init(_ error: StorageError) {
        switch error.code {
        case .cannotOpen: self.init(.tokenNotPresent, error.message)
        case .readOnly: self.init(.tokenWriteProtected, error.message)
        case .full: self.init(.storageFull, error.message)
        case .busy: self.init(.storageBusy, error.message)
        case .corrupt, .newerSchema: self.init(.storageCorrupt, error.message)
        case .constraint: self.init(.duplicateItem, error.message)
        case .failed: self.init(.storageFailure, error.message)
        }
    }

    init(_ error: CryptoError) {
        switch error.code {
        case .invalidInput: self.init(.attributeValueInvalid, error.message)
        case .unsupported: self.init(.unsupported, error.message)
        case .failed: self.init(.storageFailure, error.message)
        case .wrongPassword: self.init(.pinIncorrect, error.message)
        // Data that does not authenticate or unpad: the caller's input, not the store's.
        case .authenticationFailed, .invalidPadding: self.init(.encryptedDataInvalid, error.message)
        }
    }

    /// Runs `body`, turning lower layers' errors into `CoreError`.
    static func mapping<T>(_ body: () throws -> T) throws(CoreError) -> T {
        do {
            return try body()
        } catch let error as CoreError {
            throw error
        } catch let error as StorageError {
            throw CoreError(error)
        } catch let error as CryptoError {
            throw CoreError(error)
        } catch {
            throw CoreError(.storageFailure, "\(error)")
        }
    }
}
