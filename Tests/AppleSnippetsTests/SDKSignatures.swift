import Dispatch
import Foundation
import Security
import Testing

// Every function of Apple's Security framework that this module implements, bound to the type
// Apple's Swift interface gives it on macOS, read from the nullability of the SDK's headers
// (SecItem.h, SecKey.h, SecCertificate.h, SecIdentity.h, SecTrust.h, SecPolicy.h,
// SecAccessControl.h, SecImportExport.h, SecRandom.h, SecBase.h, SecKeychain.h,
// SecTrustSettings.h): a pointer the header marks nullable, or leaves unmarked outside an
// assume-nonnull region, is optional here; an out parameter marked nonnull is a non-optional
// pointer to an optional; a `CFErrorRef *` is a nullable pointer to an optional Unmanaged.
//
// `exactly` takes the function as `inout`, which admits no conversion: an optional result
// where Apple's is not, a parameter that is wider than Apple's (`Any` for `CFTypeRef`), or an
// `@Sendable` closure parameter where Apple's is not, each fails the build. Swift 6 language
// mode only (this file is not among the Swift 5 target's links): there a global function's
// type is `@Sendable`, which the types below say.

/// Compiles only when `function`'s type is exactly `type` (an `inout` argument is never
/// converted); records `name`.
func exactly<Function>(
    _ function: inout Function, _ type: Function.Type, _ name: String, into names: inout [String]
) {
    names.append(name)
}

/// Apple's `SecTrustWithErrorCallback`, as its header declares the block (not `@Sendable`).
typealias AppleTrustCallback = (SecTrust, Bool, CFError?) -> Void
/// Apple's `CFErrorRef *` parameter.
typealias AppleErrorOut = UnsafeMutablePointer<Unmanaged<CFError>?>?

/// The names of the functions bound below.
func sdkSignatures() -> [String] {
    currentSignatures() + (DeprecatedSignatures.self as any SignatureList.Type).names()
}

/// Binds each function that Apple has not deprecated.
private func currentSignatures() -> [String] {
    var names: [String] = []
    // SecItem.h
    var secItemAdd = SecItemAdd
    exactly(
        &secItemAdd, (@Sendable (CFDictionary, UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus).self,
        "SecItemAdd", into: &names)
    var secItemCopyMatching = SecItemCopyMatching
    exactly(
        &secItemCopyMatching, (@Sendable (CFDictionary, UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus).self,
        "SecItemCopyMatching", into: &names)
    var secItemUpdate = SecItemUpdate
    exactly(
        &secItemUpdate, (@Sendable (CFDictionary, CFDictionary) -> OSStatus).self, "SecItemUpdate",
        into: &names)
    var secItemDelete = SecItemDelete
    exactly(&secItemDelete, (@Sendable (CFDictionary) -> OSStatus).self, "SecItemDelete", into: &names)
    // SecKey.h
    var secKeyGetTypeID = SecKeyGetTypeID
    exactly(&secKeyGetTypeID, (@Sendable () -> CFTypeID).self, "SecKeyGetTypeID", into: &names)
    var secKeyCreateRandomKey = SecKeyCreateRandomKey
    exactly(
        &secKeyCreateRandomKey, (@Sendable (CFDictionary, AppleErrorOut) -> SecKey?).self,
        "SecKeyCreateRandomKey", into: &names)
    var secKeyCreateWithData = SecKeyCreateWithData
    exactly(
        &secKeyCreateWithData, (@Sendable (CFData, CFDictionary, AppleErrorOut) -> SecKey?).self,
        "SecKeyCreateWithData", into: &names)
    var secKeyGetBlockSize = SecKeyGetBlockSize
    exactly(&secKeyGetBlockSize, (@Sendable (SecKey) -> Int).self, "SecKeyGetBlockSize", into: &names)
    var secKeyCopyExternalRepresentation = SecKeyCopyExternalRepresentation
    exactly(
        &secKeyCopyExternalRepresentation, (@Sendable (SecKey, AppleErrorOut) -> CFData?).self,
        "SecKeyCopyExternalRepresentation", into: &names)
    var secKeyCopyAttributes = SecKeyCopyAttributes
    exactly(
        &secKeyCopyAttributes, (@Sendable (SecKey) -> CFDictionary?).self, "SecKeyCopyAttributes",
        into: &names)
    var secKeyCopyPublicKey = SecKeyCopyPublicKey
    exactly(&secKeyCopyPublicKey, (@Sendable (SecKey) -> SecKey?).self, "SecKeyCopyPublicKey", into: &names)
    var secKeyCreateSignature = SecKeyCreateSignature
    exactly(
        &secKeyCreateSignature, (@Sendable (SecKey, SecKeyAlgorithm, CFData, AppleErrorOut) -> CFData?).self,
        "SecKeyCreateSignature", into: &names)
    var secKeyVerifySignature = SecKeyVerifySignature
    exactly(
        &secKeyVerifySignature,
        (@Sendable (SecKey, SecKeyAlgorithm, CFData, CFData, AppleErrorOut) -> Bool).self,
        "SecKeyVerifySignature", into: &names)
    var secKeyCreateEncryptedData = SecKeyCreateEncryptedData
    exactly(
        &secKeyCreateEncryptedData,
        (@Sendable (SecKey, SecKeyAlgorithm, CFData, AppleErrorOut) -> CFData?).self,
        "SecKeyCreateEncryptedData", into: &names)
    var secKeyCreateDecryptedData = SecKeyCreateDecryptedData
    exactly(
        &secKeyCreateDecryptedData,
        (@Sendable (SecKey, SecKeyAlgorithm, CFData, AppleErrorOut) -> CFData?).self,
        "SecKeyCreateDecryptedData", into: &names)
    var secKeyCopyKeyExchangeResult = SecKeyCopyKeyExchangeResult
    exactly(
        &secKeyCopyKeyExchangeResult,
        (@Sendable (SecKey, SecKeyAlgorithm, SecKey, CFDictionary, AppleErrorOut) -> CFData?).self,
        "SecKeyCopyKeyExchangeResult", into: &names)
    var secKeyIsAlgorithmSupported = SecKeyIsAlgorithmSupported
    exactly(
        &secKeyIsAlgorithmSupported, (@Sendable (SecKey, SecKeyOperationType, SecKeyAlgorithm) -> Bool).self,
        "SecKeyIsAlgorithmSupported", into: &names)
    // SecCertificate.h
    var secCertificateGetTypeID = SecCertificateGetTypeID
    exactly(
        &secCertificateGetTypeID, (@Sendable () -> CFTypeID).self, "SecCertificateGetTypeID", into: &names)
    var secCertificateCreateWithData = SecCertificateCreateWithData
    exactly(
        &secCertificateCreateWithData, (@Sendable (CFAllocator?, CFData) -> SecCertificate?).self,
        "SecCertificateCreateWithData", into: &names)
    var secCertificateCopyData = SecCertificateCopyData
    exactly(
        &secCertificateCopyData, (@Sendable (SecCertificate) -> CFData).self, "SecCertificateCopyData",
        into: &names)
    var secCertificateCopySubjectSummary = SecCertificateCopySubjectSummary
    exactly(
        &secCertificateCopySubjectSummary, (@Sendable (SecCertificate) -> CFString?).self,
        "SecCertificateCopySubjectSummary", into: &names)
    var secCertificateCopyCommonName = SecCertificateCopyCommonName
    exactly(
        &secCertificateCopyCommonName,
        (@Sendable (SecCertificate, UnsafeMutablePointer<CFString?>) -> OSStatus).self,
        "SecCertificateCopyCommonName", into: &names)
    var secCertificateCopyEmailAddresses = SecCertificateCopyEmailAddresses
    exactly(
        &secCertificateCopyEmailAddresses,
        (@Sendable (SecCertificate, UnsafeMutablePointer<CFArray?>) -> OSStatus).self,
        "SecCertificateCopyEmailAddresses", into: &names)
    var secCertificateCopyNormalizedIssuerSequence = SecCertificateCopyNormalizedIssuerSequence
    exactly(
        &secCertificateCopyNormalizedIssuerSequence, (@Sendable (SecCertificate) -> CFData?).self,
        "SecCertificateCopyNormalizedIssuerSequence", into: &names)
    var secCertificateCopyNormalizedSubjectSequence = SecCertificateCopyNormalizedSubjectSequence
    exactly(
        &secCertificateCopyNormalizedSubjectSequence, (@Sendable (SecCertificate) -> CFData?).self,
        "SecCertificateCopyNormalizedSubjectSequence", into: &names)
    var secCertificateCopyKey = SecCertificateCopyKey
    exactly(
        &secCertificateCopyKey, (@Sendable (SecCertificate) -> SecKey?).self, "SecCertificateCopyKey",
        into: &names)
    var secCertificateCopySerialNumberData = SecCertificateCopySerialNumberData
    exactly(
        &secCertificateCopySerialNumberData, (@Sendable (SecCertificate, AppleErrorOut) -> CFData?).self,
        "SecCertificateCopySerialNumberData", into: &names)
    var secCertificateCopyNotValidBeforeDate = SecCertificateCopyNotValidBeforeDate
    exactly(
        &secCertificateCopyNotValidBeforeDate, (@Sendable (SecCertificate) -> CFDate?).self,
        "SecCertificateCopyNotValidBeforeDate", into: &names)
    var secCertificateCopyNotValidAfterDate = SecCertificateCopyNotValidAfterDate
    exactly(
        &secCertificateCopyNotValidAfterDate, (@Sendable (SecCertificate) -> CFDate?).self,
        "SecCertificateCopyNotValidAfterDate", into: &names)
    var secCertificateCopyLongDescription = SecCertificateCopyLongDescription
    exactly(
        &secCertificateCopyLongDescription,
        (@Sendable (CFAllocator?, SecCertificate, AppleErrorOut) -> CFString?).self,
        "SecCertificateCopyLongDescription", into: &names)
    var secCertificateCopyShortDescription = SecCertificateCopyShortDescription
    exactly(
        &secCertificateCopyShortDescription,
        (@Sendable (CFAllocator?, SecCertificate, AppleErrorOut) -> CFString?).self,
        "SecCertificateCopyShortDescription", into: &names)
    // SecIdentity.h
    var secIdentityGetTypeID = SecIdentityGetTypeID
    exactly(&secIdentityGetTypeID, (@Sendable () -> CFTypeID).self, "SecIdentityGetTypeID", into: &names)
    var secIdentityCreateWithCertificate = SecIdentityCreateWithCertificate
    exactly(
        &secIdentityCreateWithCertificate,
        (@Sendable (CFTypeRef?, SecCertificate, UnsafeMutablePointer<SecIdentity?>) -> OSStatus).self,
        "SecIdentityCreateWithCertificate", into: &names)
    var secIdentityCreate = SecIdentityCreate
    exactly(
        &secIdentityCreate, (@Sendable (CFAllocator?, SecCertificate, SecKey) -> SecIdentity?).self,
        "SecIdentityCreate", into: &names)
    var secIdentityCopyCertificate = SecIdentityCopyCertificate
    exactly(
        &secIdentityCopyCertificate,
        (@Sendable (SecIdentity, UnsafeMutablePointer<SecCertificate?>) -> OSStatus).self,
        "SecIdentityCopyCertificate", into: &names)
    var secIdentityCopyPrivateKey = SecIdentityCopyPrivateKey
    exactly(
        &secIdentityCopyPrivateKey, (@Sendable (SecIdentity, UnsafeMutablePointer<SecKey?>) -> OSStatus).self,
        "SecIdentityCopyPrivateKey", into: &names)
    // SecTrust.h
    var secTrustGetTypeID = SecTrustGetTypeID
    exactly(&secTrustGetTypeID, (@Sendable () -> CFTypeID).self, "SecTrustGetTypeID", into: &names)
    var secTrustCreateWithCertificates = SecTrustCreateWithCertificates
    exactly(
        &secTrustCreateWithCertificates,
        (@Sendable (CFTypeRef, CFTypeRef?, UnsafeMutablePointer<SecTrust?>) -> OSStatus).self,
        "SecTrustCreateWithCertificates", into: &names)
    var secTrustSetPolicies = SecTrustSetPolicies
    exactly(
        &secTrustSetPolicies, (@Sendable (SecTrust, CFTypeRef) -> OSStatus).self, "SecTrustSetPolicies",
        into: &names)
    var secTrustCopyPolicies = SecTrustCopyPolicies
    exactly(
        &secTrustCopyPolicies, (@Sendable (SecTrust, UnsafeMutablePointer<CFArray?>) -> OSStatus).self,
        "SecTrustCopyPolicies", into: &names)
    var secTrustSetNetworkFetchAllowed = SecTrustSetNetworkFetchAllowed
    exactly(
        &secTrustSetNetworkFetchAllowed, (@Sendable (SecTrust, Bool) -> OSStatus).self,
        "SecTrustSetNetworkFetchAllowed", into: &names)
    var secTrustSetAnchorCertificates = SecTrustSetAnchorCertificates
    exactly(
        &secTrustSetAnchorCertificates, (@Sendable (SecTrust, CFArray?) -> OSStatus).self,
        "SecTrustSetAnchorCertificates", into: &names)
    var secTrustSetAnchorCertificatesOnly = SecTrustSetAnchorCertificatesOnly
    exactly(
        &secTrustSetAnchorCertificatesOnly, (@Sendable (SecTrust, Bool) -> OSStatus).self,
        "SecTrustSetAnchorCertificatesOnly", into: &names)
    var secTrustSetVerifyDate = SecTrustSetVerifyDate
    exactly(
        &secTrustSetVerifyDate, (@Sendable (SecTrust, CFDate) -> OSStatus).self, "SecTrustSetVerifyDate",
        into: &names)
    var secTrustEvaluateWithError = SecTrustEvaluateWithError
    exactly(
        &secTrustEvaluateWithError, (@Sendable (SecTrust, UnsafeMutablePointer<CFError?>?) -> Bool).self,
        "SecTrustEvaluateWithError", into: &names)
    var secTrustEvaluateAsyncWithError = SecTrustEvaluateAsyncWithError
    exactly(
        &secTrustEvaluateAsyncWithError,
        (@Sendable (SecTrust, DispatchQueue, @escaping AppleTrustCallback) -> OSStatus).self,
        "SecTrustEvaluateAsyncWithError", into: &names)
    var secTrustGetTrustResult = SecTrustGetTrustResult
    exactly(
        &secTrustGetTrustResult,
        (@Sendable (SecTrust, UnsafeMutablePointer<SecTrustResultType>) -> OSStatus).self,
        "SecTrustGetTrustResult", into: &names)
    var secTrustCopyKey = SecTrustCopyKey
    exactly(&secTrustCopyKey, (@Sendable (SecTrust) -> SecKey?).self, "SecTrustCopyKey", into: &names)
    var secTrustGetCertificateCount = SecTrustGetCertificateCount
    exactly(
        &secTrustGetCertificateCount, (@Sendable (SecTrust) -> CFIndex).self, "SecTrustGetCertificateCount",
        into: &names)
    var secTrustCopyCertificateChain = SecTrustCopyCertificateChain
    exactly(
        &secTrustCopyCertificateChain, (@Sendable (SecTrust) -> CFArray?).self,
        "SecTrustCopyCertificateChain", into: &names)
    var secTrustCopyProperties = SecTrustCopyProperties
    exactly(
        &secTrustCopyProperties, (@Sendable (SecTrust) -> CFArray?).self, "SecTrustCopyProperties",
        into: &names)
    var secTrustCopyResult = SecTrustCopyResult
    exactly(
        &secTrustCopyResult, (@Sendable (SecTrust) -> CFDictionary?).self, "SecTrustCopyResult", into: &names)
    // SecPolicy.h
    var secPolicyGetTypeID = SecPolicyGetTypeID
    exactly(&secPolicyGetTypeID, (@Sendable () -> CFTypeID).self, "SecPolicyGetTypeID", into: &names)
    var secPolicyCopyProperties = SecPolicyCopyProperties
    exactly(
        &secPolicyCopyProperties, (@Sendable (SecPolicy) -> CFDictionary?).self, "SecPolicyCopyProperties",
        into: &names)
    var secPolicyCreateBasicX509 = SecPolicyCreateBasicX509
    exactly(
        &secPolicyCreateBasicX509, (@Sendable () -> SecPolicy).self, "SecPolicyCreateBasicX509", into: &names)
    var secPolicyCreateSSL = SecPolicyCreateSSL
    exactly(
        &secPolicyCreateSSL, (@Sendable (Bool, CFString?) -> SecPolicy).self, "SecPolicyCreateSSL",
        into: &names)
    var secPolicyCreateRevocation = SecPolicyCreateRevocation
    exactly(
        &secPolicyCreateRevocation, (@Sendable (CFOptionFlags) -> SecPolicy?).self,
        "SecPolicyCreateRevocation",
        into: &names)
    // SecAccessControl.h
    var secAccessControlCreateWithFlags = SecAccessControlCreateWithFlags
    exactly(
        &secAccessControlCreateWithFlags,
        (@Sendable (CFAllocator?, CFTypeRef, SecAccessControlCreateFlags, AppleErrorOut) -> SecAccessControl?)
            .self,
        "SecAccessControlCreateWithFlags", into: &names)
    // SecImportExport.h
    var secPKCS12Import = SecPKCS12Import
    exactly(
        &secPKCS12Import, (@Sendable (CFData, CFDictionary, UnsafeMutablePointer<CFArray?>) -> OSStatus).self,
        "SecPKCS12Import", into: &names)
    // SecRandom.h
    var secRandomCopyBytes = SecRandomCopyBytes
    exactly(
        &secRandomCopyBytes, (@Sendable (SecRandomRef?, Int, UnsafeMutableRawPointer) -> Int32).self,
        "SecRandomCopyBytes", into: &names)
    // SecBase.h
    var secCopyErrorMessageString = SecCopyErrorMessageString
    exactly(
        &secCopyErrorMessageString, (@Sendable (OSStatus, UnsafeMutableRawPointer?) -> CFString?).self,
        "SecCopyErrorMessageString", into: &names)
    // SecKeychain.h (deprecated on Apple, kept for the code that still calls it)
    var secKeychainGetTypeID = SecKeychainGetTypeID
    exactly(&secKeychainGetTypeID, (@Sendable () -> CFTypeID).self, "SecKeychainGetTypeID", into: &names)
    var secKeychainCopyDefault = SecKeychainCopyDefault
    exactly(
        &secKeychainCopyDefault, (@Sendable (UnsafeMutablePointer<SecKeychain?>) -> OSStatus).self,
        "SecKeychainCopyDefault", into: &names)
    var secKeychainUnlock = SecKeychainUnlock
    exactly(
        &secKeychainUnlock, (@Sendable (SecKeychain?, UInt32, UnsafeRawPointer?, Bool) -> OSStatus).self,
        "SecKeychainUnlock", into: &names)
    var secKeychainLock = SecKeychainLock
    exactly(&secKeychainLock, (@Sendable (SecKeychain?) -> OSStatus).self, "SecKeychainLock", into: &names)
    var secKeychainGetStatus = SecKeychainGetStatus
    exactly(
        &secKeychainGetStatus,
        (@Sendable (SecKeychain?, UnsafeMutablePointer<SecKeychainStatus>) -> OSStatus).self,
        "SecKeychainGetStatus", into: &names)
    // SecTrustSettings.h
    var secTrustSettingsCopyTrustSettings = SecTrustSettingsCopyTrustSettings
    exactly(
        &secTrustSettingsCopyTrustSettings,
        (@Sendable (SecCertificate, SecTrustSettingsDomain, UnsafeMutablePointer<CFArray?>) -> OSStatus).self,
        "SecTrustSettingsCopyTrustSettings", into: &names)
    var secTrustSettingsSetTrustSettings = SecTrustSettingsSetTrustSettings
    exactly(
        &secTrustSettingsSetTrustSettings,
        (@Sendable (SecCertificate, SecTrustSettingsDomain, CFTypeRef?) -> OSStatus).self,
        "SecTrustSettingsSetTrustSettings", into: &names)
    var secTrustSettingsRemoveTrustSettings = SecTrustSettingsRemoveTrustSettings
    exactly(
        &secTrustSettingsRemoveTrustSettings,
        (@Sendable (SecCertificate, SecTrustSettingsDomain) -> OSStatus).self,
        "SecTrustSettingsRemoveTrustSettings", into: &names)
    var secTrustSettingsCopyCertificates = SecTrustSettingsCopyCertificates
    exactly(
        &secTrustSettingsCopyCertificates,
        (@Sendable (SecTrustSettingsDomain, UnsafeMutablePointer<CFArray?>?) -> OSStatus).self,
        "SecTrustSettingsCopyCertificates", into: &names)
    return names
}

/// A list of bound functions, reached through this protocol so that the deprecated ones are
/// bound without a deprecation warning at the call.
private protocol SignatureList {
    static func names() -> [String]
}

/// The functions Apple has deprecated, which Apple code still calls.
private enum DeprecatedSignatures: SignatureList {
    @available(*, deprecated, message: "binds Apple's deprecated functions to their types")
    static func names() -> [String] {
        var names: [String] = []
        var secCertificateCopySerialNumber = SecCertificateCopySerialNumber
        exactly(
            &secCertificateCopySerialNumber, (@Sendable (SecCertificate, AppleErrorOut) -> CFData?).self,
            "SecCertificateCopySerialNumber", into: &names)
        var secTrustEvaluate = SecTrustEvaluate
        exactly(
            &secTrustEvaluate,
            (@Sendable (SecTrust, UnsafeMutablePointer<SecTrustResultType>) -> OSStatus).self,
            "SecTrustEvaluate", into: &names)
        var secTrustCopyPublicKey = SecTrustCopyPublicKey
        exactly(
            &secTrustCopyPublicKey, (@Sendable (SecTrust) -> SecKey?).self, "SecTrustCopyPublicKey",
            into: &names)
        return names
    }
}
