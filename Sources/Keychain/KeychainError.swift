internal import KeychainCore

/// An error from a keychain operation: an OSStatus-compatible code and a message that says
/// what went wrong and, where it can, what to do about it.
///
/// The code's raw value is the `OSStatus` Apple's Security framework returns for the same
/// condition (`errSecItemNotFound` is -25300, `errSecDuplicateItem` -25299…), so the
/// `Security` façade passes it through unchanged. Messages never contain attribute values,
/// PINs or key material.
public struct KeychainError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as an `OSStatus`. An open set: codes from later versions round-trip.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The `OSStatus` value.
        public var rawValue: Int32

        /// Wraps an `OSStatus` value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// A parameter or query is wrong: a missing or unknown key, a value of the wrong type,
        /// contradictory options (`errSecParam`).
        public static let parameter = Code(rawValue: -50)
        /// Not implemented yet (`errSecUnimplemented`).
        public static let unimplemented = Code(rawValue: -4)
        /// The disk or the quota is full (`errSecDiskFull`).
        public static let diskFull = Code(rawValue: -34)
        /// An I/O error, or the store stayed busy too long (`errSecIO`).
        public static let io = Code(rawValue: -36)
        /// Memory could not be allocated (`errSecAllocate`).
        public static let allocate = Code(rawValue: -108)
        /// No keychain is available: the configuration cannot be read (`errSecNotAvailable`).
        public static let notAvailable = Code(rawValue: -25291)
        /// The keychain cannot be modified by this process (`errSecReadOnly`).
        public static let readOnly = Code(rawValue: -25292)
        /// Authentication failed (`errSecAuthFailed`).
        public static let authFailed = Code(rawValue: -25293)
        /// The keychain does not exist or cannot be opened (`errSecNoSuchKeychain`).
        public static let noSuchKeychain = Code(rawValue: -25294)
        /// The file is not a valid keychain, or was written by a newer version
        /// (`errSecInvalidKeychain`).
        public static let invalidKeychain = Code(rawValue: -25295)
        /// The item already exists (`errSecDuplicateItem`).
        public static let duplicateItem = Code(rawValue: -25299)
        /// No item matches (`errSecItemNotFound`).
        public static let itemNotFound = Code(rawValue: -25300)
        /// The item class is not known (`errSecNoSuchClass`).
        public static let noSuchClass = Code(rawValue: -25306)
        /// The keychain is locked and no user interaction is possible
        /// (`errSecInteractionNotAllowed`).
        public static let interactionNotAllowed = Code(rawValue: -25308)
        /// The attribute cannot be changed (`errSecReadOnlyAttr`).
        public static let readOnlyAttribute = Code(rawValue: -25309)
        /// The data does not decode, e.g. bytes that are not a DER certificate (`errSecDecode`).
        public static let decode = Code(rawValue: -26275)
        /// An internal error (`errSecInternal`).
        public static let `internal` = Code(rawValue: -26276)

        /// The `OSStatus` value as a number.
        public var description: String { String(rawValue) }
    }

    /// What went wrong.
    public var code: Code
    /// What went wrong, for a person: names the file or item concerned and never a secret.
    public var message: String

    /// The `OSStatus` equivalent of ``code``.
    public var status: Int32 { code.rawValue }

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension KeychainError {
    /// The one table from item-model errors to OSStatus codes.
    init(_ error: CoreError) {
        let code: Code
        switch error.code {
        case .attributeTypeInvalid, .attributeValueInvalid, .templateIncomplete,
            .templateInconsistent, .invalidArgument, .wrappedKeyInvalid, .keyIndigestible:
            code = .parameter
        case .attributeReadOnly: code = .readOnlyAttribute
        case .attributeSensitive, .userNotLoggedIn, .keyUnextractable, .keyNotWrappable:
            code = .interactionNotAllowed
        case .duplicateItem: code = .duplicateItem
        case .objectNotFound: code = .itemNotFound
        case .actionProhibited, .sessionReadOnly, .tokenWriteProtected: code = .readOnly
        case .tokenNotPresent: code = .noSuchKeychain
        case .storageFull: code = .diskFull
        case .storageBusy, .storageFailure: code = .io
        case .storageCorrupt: code = .invalidKeychain
        case .encryptedDataInvalid, .encryptedDataLengthRange: code = .decode
        case .dataLengthRange, .signatureLengthRange, .mechanismParameterInvalid, .wrappedKeyLengthRange:
            code = .parameter
        // A signature that does not verify is an answer (false) where the API has one.
        case .signatureInvalid: code = .decode
        case .operationFailed: code = .internal
        case .unsupported: code = .unimplemented
        case .pinIncorrect, .pinLocked: code = .authFailed
        case .pinLengthRange, .userAlreadyLoggedIn, .userAnotherAlreadyLoggedIn, .keyTypeInconsistent,
            .keyFunctionNotPermitted, .keySizeRange, .curveNotSupported, .mechanismInvalid,
            .domainParametersInvalid:
            code = .parameter
        case .userPINNotInitialized: code = .notAvailable
        }
        self.init(code, error.message)
    }

    /// Runs `body`, turning item-model errors into keychain errors.
    static func mapping<T>(_ body: () throws(CoreError) -> T) throws(KeychainError) -> T {
        do {
            return try body()
        } catch {
            throw KeychainError(error)
        }
    }
}
