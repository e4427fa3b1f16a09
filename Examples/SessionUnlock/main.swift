// Apple-style code that never unlocks the keychain, as apps on macOS never do: the login
// keychain is unlocked by the user's login. Here `p11keychain unlock` unlocks it for the
// login session:
//
//     p11keychain unlock --pin-file pin.txt
//     session-unlock-example my.service alice s3cret     # prints SecItemAdd: 0 …
//     p11keychain lock
//     session-unlock-example my.service alice s3cret     # SecItemAdd: -25308
//
// It adds a generic password (or updates it when it is there), reads it back by service and
// account, and prints each OSStatus. Exit status 0 when both succeed and the password read is
// the one written, else 1. With --key it also makes a permanent P-256 key tagged SERVICE.key,
// finds it again by its tag and signs with what it found (docs/pam.md: after a PAM login).

import Foundation
import Security

var arguments = CommandLine.arguments
// --lock-first: SecKeychainLock before anything else. The process then stays locked, whatever
// the session says, until it calls SecKeychainUnlock.
let lockFirst = arguments.count > 1 && arguments[1] == "--lock-first"
if lockFirst { arguments.remove(at: 1) }
let withKey = arguments.count > 1 && arguments[1] == "--key"
if withKey { arguments.remove(at: 1) }
guard arguments.count == 4 else {
    FileHandle.standardError.write(
        Data("usage: session-unlock-example [--lock-first] [--key] SERVICE ACCOUNT PASSWORD\n".utf8))
    exit(2)
}
let service = arguments[1]
let account = arguments[2]
let password = Data(arguments[3].utf8)

func report(_ name: String, _ status: OSStatus) {
    let text = SecCopyErrorMessageString(status, nil) as String? ?? ""
    print("\(name): \(status) (\(text))")
}

if lockFirst { report("SecKeychainLock", SecKeychainLock(nil)) }

// Add the password; if it is there already, update it.
let query: [String: Any] = [
    kSecClass as String: kSecClassGenericPassword,
    kSecAttrService as String: service,
    kSecAttrAccount as String: account,
]
var addStatus = SecItemAdd(query.merging([kSecValueData as String: password]) { $1 } as CFDictionary, nil)
if addStatus == errSecDuplicateItem {
    addStatus = SecItemUpdate(query as CFDictionary, [kSecValueData as String: password] as CFDictionary)
}
report("SecItemAdd", addStatus)

// Read it back.
var item: CFTypeRef?
let readQuery = query.merging([
    kSecReturnData as String: kCFBooleanTrue!,
    kSecMatchLimit as String: kSecMatchLimitOne,
]) { $1 }
let readStatus = SecItemCopyMatching(readQuery as CFDictionary, &item)
report("SecItemCopyMatching", readStatus)

let matches = (item as? Data) == password
print("password: \(matches ? "matches" : "does not match")")
var keyWorks = true
if withKey {
    // A key, as Apple's "Generating New Cryptographic Keys" makes one, then found by its tag.
    let tag = Data("\(service).key".utf8)
    let keyAttributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecPrivateKeyAttrs as String: [
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: tag,
        ],
    ]
    var error: Unmanaged<CFError>?
    let created = SecKeyCreateRandomKey(keyAttributes as CFDictionary, &error)
    print("SecKeyCreateRandomKey: \(created == nil ? "failed" : "ok")")
    var found: CFTypeRef?
    let keyQuery: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecReturnRef as String: true,
    ]
    let keyStatus = SecItemCopyMatching(keyQuery as CFDictionary, &found)
    report("SecItemCopyMatching(key)", keyStatus)
    var signature: CFData?
    if keyStatus == errSecSuccess, let found {
        let key = found as! SecKey
        signature = SecKeyCreateSignature(
            key, .ecdsaSignatureMessageX962SHA256, Data("signed".utf8) as CFData, &error)
    }
    print("signature: \(signature == nil ? "none" : "made")")
    keyWorks = created != nil && keyStatus == errSecSuccess && signature != nil
}

exit(addStatus == errSecSuccess && readStatus == errSecSuccess && matches && keyWorks ? 0 : 1)
