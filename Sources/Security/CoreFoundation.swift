public import Foundation

// The CoreFoundation names Apple's Security snippets use (DESIGN §5).
//
// On Linux `import Foundation` exposes no CFDictionary, CFString, CFData or CFTypeRef, and
// `as CFDictionary` does not bridge. Defining the names here as the Swift types they bridge
// to on Apple platforms makes Apple's documented code compile and run unchanged:
//
//     let query = [kSecClass as String: kSecClassCertificate, ...] as CFDictionary
//     var item: CFTypeRef?
//     let status = SecItemCopyMatching(query as CFDictionary, &item)
//     let certificate = item as! SecCertificate
//
// A result stored in a `CFTypeRef` is an object, as on Apple platforms: an array becomes an
// NSArray, a dictionary an NSDictionary, data NSData; `as! [SecCertificate]`,
// `as? [String: Any]` and `as? Data` turn them back.

/// Any object: what Security functions return through their `result` pointers.
public typealias CFTypeRef = AnyObject
/// A dictionary of keychain keys (`kSec…`) and values.
public typealias CFDictionary = [String: Any]
/// A string; the `kSec…` constants are `CFString`s.
public typealias CFString = String
/// Bytes.
public typealias CFData = Data
/// An array.
public typealias CFArray = [Any]
/// A Boolean (Apple's `kCFBooleanTrue` / `kCFBooleanFalse`).
public typealias CFBoolean = Bool
/// A date (`kSecMatchValidOnDate`).
public typealias CFDate = Date
/// A number (a numeric `kSecMatchLimit`, `kSecAttrCertificateType`).
public typealias CFNumber = NSNumber
/// An error object, as the `error` out-parameters of some functions carry it.
public typealias CFError = NSError
/// A type identifier, as `CFGetTypeID` returns it.
public typealias CFTypeID = UInt
/// A count or index.
public typealias CFIndex = Int

/// A memory allocator. Only `nil` (the default allocator) is ever passed on Linux; the type
/// exists so that `SecCertificateCreateWithData(nil, data)` and `kCFAllocatorDefault` compile.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator: `nil`.
public let kCFAllocatorDefault: CFAllocator? = nil

/// The Boolean true, as Apple declares it (implicitly unwrapped, so that Apple's
/// `kCFBooleanTrue!` compiles).
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public let kCFBooleanTrue: CFBoolean! = true
/// The Boolean false, as Apple declares it (implicitly unwrapped).
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public let kCFBooleanFalse: CFBoolean! = false

/// Type identifiers of the object kinds the Security façade hands out. The values are this
/// implementation's; compare them only with the matching `…GetTypeID()`.
enum TypeIdentifier {
    static let certificate: CFTypeID = 0x5EC0_0001
    static let key: CFTypeID = 0x5EC0_0002
    static let identity: CFTypeID = 0x5EC0_0003
    static let keychain: CFTypeID = 0x5EC0_0004
    static let data: CFTypeID = 0xCF00_0014
    static let string: CFTypeID = 0xCF00_0007
    static let array: CFTypeID = 0xCF00_0013
    static let dictionary: CFTypeID = 0xCF00_0012
    static let number: CFTypeID = 0xCF00_0016
    static let date: CFTypeID = 0xCF00_002A
    static let other: CFTypeID = 0xCF00_0001
}

/// The type identifier of an object: compare it with `SecCertificateGetTypeID()`,
/// `CFDataGetTypeID()` and so on.
public func CFGetTypeID(_ cf: CFTypeRef!) -> CFTypeID {
    switch cf {
    case is SecCertificate: TypeIdentifier.certificate
    case is SecKey: TypeIdentifier.key
    case is SecIdentity: TypeIdentifier.identity
    case is SecKeychain: TypeIdentifier.keychain
    case is NSData: TypeIdentifier.data
    case is NSString: TypeIdentifier.string
    case is NSArray: TypeIdentifier.array
    case is NSDictionary: TypeIdentifier.dictionary
    case is NSNumber: TypeIdentifier.number
    case is NSDate: TypeIdentifier.date
    default: TypeIdentifier.other
    }
}

/// The type identifier of data objects.
public func CFDataGetTypeID() -> CFTypeID { TypeIdentifier.data }
/// The type identifier of strings.
public func CFStringGetTypeID() -> CFTypeID { TypeIdentifier.string }
/// The type identifier of arrays.
public func CFArrayGetTypeID() -> CFTypeID { TypeIdentifier.array }
/// The type identifier of dictionaries.
public func CFDictionaryGetTypeID() -> CFTypeID { TypeIdentifier.dictionary }
/// The type identifier of numbers (Booleans included).
public func CFNumberGetTypeID() -> CFTypeID { TypeIdentifier.number }
/// The type identifier of dates.
public func CFDateGetTypeID() -> CFTypeID { TypeIdentifier.date }
