import Foundation
import Security
import Testing

@Suite("Apple's CoreFoundation idioms run unchanged", .serialized)
struct CoreFoundationSnippetsTests {
    @Test(
        "[String: AnyObject], NSMutableDictionary, [CFString: Any] and [String?: AnyObject] queries add, find and delete a password"
    )
    func queriesOfEveryShape() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let secret = Data("hunter2".utf8)
            #expect(
                addPassword(account: "alice", service: "com.example.cf", password: secret) == errSecSuccess)
            #expect(
                addPassword(account: "alice", service: "com.example.cf", password: secret)
                    == errSecDuplicateItem)
            let found = findPassword(account: "alice", service: "com.example.cf")
            #expect(found.status == errSecSuccess)
            #expect(found.password == secret)
            let attributes = passwordAttributes(service: "com.example.cf")
            #expect(attributes.status == errSecSuccess)
            #expect(attributes.typeID == CFDictionaryGetTypeID())
            #expect(attributes.account == "alice")
            #expect(deletePassword(account: "alice", service: "com.example.cf") == errSecSuccess)
            #expect(findPassword(account: "alice", service: "com.example.cf").status == errSecItemNotFound)
        }
    }

    @Test("CFErrorGetCode, CFErrorGetDomain and CFErrorCopyUserInfo read a SecKey error")
    func keyErrorThroughCoreFoundation() throws {
        let key = try #require(makeMemoryKey())
        let error = signingErrorCode(key)
        #expect(error.code == CFIndex(errSecParam))
        #expect(error.domain == NSOSStatusErrorDomain)
        #expect(error.domain == kCFErrorDomainOSStatus as String)
        #expect(error.description?.isEmpty == false)
    }

    @Test("SecRandomCopyBytes fills the buffer with fresh bytes each call")
    func randomBytes() throws {
        let first = try #require(randomKeyBytes())
        let second = try #require(randomKeyBytes())
        #expect(first.count == 32 && second.count == 32)
        #expect(first != second)
        #expect(first != Data(count: 32))
        var nothing: [UInt8] = []
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, &nothing) == errSecSuccess)
    }

    @Test(
        "kSec constants are objects that compare as strings; CF type IDs, CFEqual, CFRetain and CFRelease behave"
    )
    func constantsAreObjects() {
        let values: [AnyObject] = [kSecClassGenericPassword, kSecMatchLimitAll, kCFBooleanTrue]
        #expect(values.count == 3)
        #expect((kSecClass as String) == "class")
        #expect(kSecClassGenericPassword as String == "genp")
        #expect(CFEqual(kSecAttrAccount, "acct" as CFString))
        #expect(!CFEqual(kSecAttrAccount, kSecAttrService))
        #expect(CFGetTypeID(kSecClass) == CFStringGetTypeID())
        #expect(CFGetTypeID(kCFBooleanTrue) == CFBooleanGetTypeID())
        #expect(CFGetTypeID(32 as NSNumber) == CFNumberGetTypeID())
        #expect(CFGetTypeID(Data([1]) as CFData) == CFDataGetTypeID())
        #expect(CFGetTypeID([1, 2] as CFArray) == CFArrayGetTypeID())
        #expect(CFRetain(kSecClass) === kSecClass)
        CFRelease(kSecClass)
        #expect(noErr == errSecSuccess)
        let flags: CFOptionFlags = 0
        #expect(flags == 0)
    }

    /// Apple's values and texts (SecBase.h and the SecErrorMessages.strings made from it).
    static let appleMessages: [(OSStatus, OSStatus, String)] = [
        (errSecSuccess, 0, "No error."),
        (errSecUnimplemented, -4, "Function or operation not implemented."),
        (errSecDiskFull, -34, "The disk is full."),
        (errSecIO, -36, "I/O error."),
        (errSecParam, -50, "One or more parameters passed to a function were not valid."),
        (errSecWrPerm, -61, "Write permissions error."),
        (errSecAllocate, -108, "Failed to allocate memory."),
        (errSecUserCanceled, -128, "User canceled the operation."),
        (errSecBadReq, -909, "Bad parameter or invalid state for operation."),
        (errSecMissingEntitlement, -34018, "A required entitlement isn't present."),
        (errSecNotAvailable, -25291, "No keychain is available. You may need to restart your computer."),
        (errSecReadOnly, -25292, "This keychain cannot be modified."),
        (errSecAuthFailed, -25293, "The user name or passphrase you entered is not correct."),
        (errSecNoSuchKeychain, -25294, "The specified keychain could not be found."),
        (errSecInvalidKeychain, -25295, "The specified keychain is not a valid keychain file."),
        (errSecDuplicateItem, -25299, "The specified item already exists in the keychain."),
        (errSecItemNotFound, -25300, "The specified item could not be found in the keychain."),
        (errSecBufferTooSmall, -25301, "There is not enough memory available to use the specified item."),
        (
            errSecInvalidItemRef, -25304,
            "The specified item is no longer valid. It may have been deleted from the keychain."
        ),
        (errSecNoSuchClass, -25306, "The specified item does not appear to be a valid keychain item."),
        (errSecInteractionNotAllowed, -25308, "User interaction is not allowed."),
        (errSecReadOnlyAttr, -25309, "The specified attribute could not be modified."),
        (errSecDecode, -26275, "Unable to decode the provided data."),
        (errSecInternal, -26276, "An internal error occurred in the Security framework."),
        (errSecVerifyFailed, -67808, "A cryptographic verification failure has occurred."),
        (errSecNotTrusted, -67843, "The certificate was not trusted."),
        (errSecCertificateExpired, -67818, "An expired certificate was detected."),
        (errSecHostNameMismatch, -67602, "A host name mismatch has occurred."),
        (errSecPkcs12VerifyFailure, -25264, "MAC verification failed during PKCS12 import (wrong password?)"),
        (errSecInternalComponent, -2070, "OSStatus -2070"),
        (-1, -1, "OSStatus -1"),
    ]

    @Test("SecCopyErrorMessageString gives Apple's words for Apple's codes, and no details")
    func appleMessageTexts() {
        for (code, value, text) in Self.appleMessages {
            #expect(code == value, "\(text)")
            #expect(describe(code) == text, "\(code)")
        }
    }

    @Test("a failure's details go to SecCopyErrorDiagnostic, not into Apple's text")
    func detailsStaySeparate() throws {
        try withPINKeychain { _ in
            let status = SecItemAdd(
                [kSecClass as String: kSecClassGenericPassword, "nonsense": 1] as CFDictionary, nil)
            #expect(status == errSecParam)
            #expect(describe(status) == "One or more parameters passed to a function were not valid.")
            #expect((SecCopyErrorDiagnostic(status) as String?)?.contains("nonsense") == true)
            #expect(SecCopyErrorDiagnostic(errSecItemNotFound) == nil)
            let numberKey = NSMutableDictionary()
            numberKey[kSecClass] = kSecClassGenericPassword
            numberKey[NSNumber(value: 7)] = "seven"
            #expect(SecItemAdd(numberKey, nil) == errSecParam)
            #expect((SecCopyErrorDiagnostic(errSecParam) as String?)?.contains("CFString") == true)
            var byte: UInt8 = 0
            #expect(SecRandomCopyBytes(kSecRandomDefault, -1, &byte) == errSecParam)
        }
    }
}
