public import Foundation

// The CoreFoundation names Apple's Security snippets use (ARCHITECTURE.md §7.4).
//
// On Linux `import Foundation` exposes no CoreFoundation types. Each CF type is defined here
// as the Foundation class it is toll-free bridged with on Apple platforms (CFString is
// NSString, CFDictionary NSDictionary, …), so that Apple's code compiles and runs unchanged:
//
//     let query = [kSecClass as String: kSecClassCertificate, ...] as CFDictionary
//     var item: CFTypeRef?
//     let status = SecItemCopyMatching(query as CFDictionary, &item)
//     let certificate = item as! SecCertificate
//
// What Swift on Linux allows with class-backed types (measured with Swift 6.3): the `kSec…`
// constants are objects, so they go where `AnyObject`/`CFTypeRef` is expected
// (`[String: AnyObject]`, `NSMutableDictionary`); `kSecClass as String` and `as CFDictionary`
// of `[String: Any]`, `[String: AnyObject]`, `[String?: AnyObject]` and `[CFString: Any]`
// are bridging casts, as on Apple platforms. What it does not allow: a `case kSecFoo as String:`
// pattern (write `case String(kSecFoo):` or compare with `==`), and the implicit conversions
// Objective-C interop gives on Apple platforms (pass `data as CFData`, as Apple's own samples do).
//
// A result stored in a `CFTypeRef` is an object, as on Apple platforms: an array becomes an
// NSArray, a dictionary an NSDictionary, data NSData; `as! [SecCertificate]`,
// `as? [String: Any]` and `as? Data` turn them back. Dictionaries given to Security functions
// are read through one function, `swiftDictionary(_:)` (DictionaryBridging.swift).
//
// The constants are immutable NSStrings shared by every thread: `nonisolated(unsafe)` only
// tells Swift 6 what NSString's declaration does not (NSString is not marked Sendable on Linux).

/// Any object: what Security functions return through their `result` pointers.
public typealias CFTypeRef = AnyObject
/// A dictionary of keychain keys (`kSec…`) and values.
public typealias CFDictionary = NSDictionary
/// A dictionary that can change.
public typealias CFMutableDictionary = NSMutableDictionary
/// A string; the `kSec…` constants are `CFString`s.
public typealias CFString = NSString
/// A string that can change.
public typealias CFMutableString = NSMutableString
/// Bytes.
public typealias CFData = NSData
/// Bytes that can change.
public typealias CFMutableData = NSMutableData
/// An array.
public typealias CFArray = NSArray
/// An array that can change.
public typealias CFMutableArray = NSMutableArray
/// A Boolean (`kCFBooleanTrue` / `kCFBooleanFalse`): a number object, as in Foundation.
public typealias CFBoolean = NSNumber
/// A date (`kSecMatchValidOnDate`).
public typealias CFDate = NSDate
/// A number (a numeric `kSecMatchLimit`, `kSecAttrCertificateType`).
public typealias CFNumber = NSNumber
/// The null object (`kCFNull`).
public typealias CFNull = NSNull
/// An error object, as the `error` out-parameters of some functions carry it.
public typealias CFError = NSError
/// An error domain, such as `kCFErrorDomainOSStatus`.
public typealias CFErrorDomain = CFString
/// A type identifier, as `CFGetTypeID` returns it.
public typealias CFTypeID = UInt
/// A count or index.
public typealias CFIndex = Int
/// Option bits, as some CoreFoundation and Security functions take them.
public typealias CFOptionFlags = UInt
/// A hash code, as `CFHash` returns it.
public typealias CFHashCode = UInt

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
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// The Boolean false, as Apple declares it (implicitly unwrapped).
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)
/// The null object, as Apple declares it (implicitly unwrapped).
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public let kCFNull: CFNull! = NSNull()

/// The domain of errors whose code is an `OSStatus`: every `CFError` Security functions return.
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFErrorDomain = NSOSStatusErrorDomain as NSString

// MARK: - Type identifiers

/// Type identifiers of the object kinds the Security façade hands out. The values are this
/// implementation's; compare them only with the matching `…GetTypeID()`.
enum TypeIdentifier {
    static let certificate: CFTypeID = 0x5EC0_0001
    static let key: CFTypeID = 0x5EC0_0002
    static let identity: CFTypeID = 0x5EC0_0003
    static let keychain: CFTypeID = 0x5EC0_0004
    static let accessControl: CFTypeID = 0x5EC0_0005
    static let data: CFTypeID = 0xCF00_0014
    static let string: CFTypeID = 0xCF00_0007
    static let array: CFTypeID = 0xCF00_0013
    static let dictionary: CFTypeID = 0xCF00_0012
    static let number: CFTypeID = 0xCF00_0016
    static let boolean: CFTypeID = 0xCF00_0015
    static let date: CFTypeID = 0xCF00_002A
    static let null: CFTypeID = 0xCF00_0001
    static let error: CFTypeID = 0xCF00_001E
    static let other: CFTypeID = 0xCF00_0000
}

/// The type identifier of an object: compare it with `SecCertificateGetTypeID()`,
/// `CFDataGetTypeID()` and so on. A Boolean is a `CFBoolean`, not a `CFNumber`, as on Apple
/// platforms.
public func CFGetTypeID(_ cf: CFTypeRef!) -> CFTypeID {
    guard let cf else { return TypeIdentifier.other }
    switch cf {
    case is SecCertificate: return TypeIdentifier.certificate
    case is SecKey: return TypeIdentifier.key
    case is SecIdentity: return TypeIdentifier.identity
    case is SecKeychain: return TypeIdentifier.keychain
    case is NSNull: return TypeIdentifier.null
    case is NSError: return TypeIdentifier.error
    case let number as NSNumber:
        return isBoolean(number) ? TypeIdentifier.boolean : TypeIdentifier.number
    case is Bool: return TypeIdentifier.boolean
    case is NSData: return TypeIdentifier.data
    case is NSString: return TypeIdentifier.string
    case is NSArray: return TypeIdentifier.array
    case is NSDictionary: return TypeIdentifier.dictionary
    case is NSDate: return TypeIdentifier.date
    default: return TypeIdentifier.other
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
/// The type identifier of numbers (not Booleans: see `CFBooleanGetTypeID`).
public func CFNumberGetTypeID() -> CFTypeID { TypeIdentifier.number }
/// The type identifier of Booleans.
public func CFBooleanGetTypeID() -> CFTypeID { TypeIdentifier.boolean }
/// The type identifier of dates.
public func CFDateGetTypeID() -> CFTypeID { TypeIdentifier.date }
/// The type identifier of the null object.
public func CFNullGetTypeID() -> CFTypeID { TypeIdentifier.null }
/// The type identifier of errors.
public func CFErrorGetTypeID() -> CFTypeID { TypeIdentifier.error }

// MARK: - Objects

/// Whether two objects are equal: the same object, equal Foundation values (strings, data,
/// numbers…) or equal Security objects (the same certificate, key, identity).
public func CFEqual(_ cf1: CFTypeRef!, _ cf2: CFTypeRef!) -> Bool {
    switch (cf1, cf2) {
    case (nil, nil): return true
    case (nil, _), (_, nil): return false
    case (let lhs?, let rhs?):
        if lhs === rhs { return true }
        if let lhs = lhs as? NSObject { return lhs.isEqual(rhs) }
        if let lhs = lhs as? AnyHashable, let rhs = rhs as? AnyHashable { return lhs == rhs }
        return false
    }
}

/// A hash code of an object, equal for objects `CFEqual` says are equal.
public func CFHash(_ cf: CFTypeRef!) -> CFHashCode {
    guard let cf else { return 0 }
    if let object = cf as? NSObject { return CFHashCode(bitPattern: object.hash) }
    if let hashable = cf as? AnyHashable { return CFHashCode(bitPattern: hashable.hashValue) }
    return CFHashCode(bitPattern: ObjectIdentifier(cf).hashValue)
}

/// Does nothing and returns `cf`: Swift manages the memory of CoreFoundation objects (Apple's
/// Swift marks the call unavailable; C-minded code that calls it anyway compiles here).
@discardableResult
public func CFRetain(_ cf: CFTypeRef!) -> CFTypeRef! { cf }

/// Does nothing: Swift manages the memory of CoreFoundation objects.
public func CFRelease(_ cf: CFTypeRef!) {}

// MARK: - Errors

/// An error's code: for the errors Security functions return, the `OSStatus`.
public func CFErrorGetCode(_ err: CFError!) -> CFIndex { err?.code ?? 0 }

/// An error's domain: `kCFErrorDomainOSStatus` for the errors Security functions return.
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! { err.map { $0.domain as NSString } }

/// An error's user information: `kCFErrorDescriptionKey` (`NSLocalizedDescriptionKey`) holds
/// what went wrong.
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    err.map { $0.userInfo as NSDictionary }
}

/// An error's description: what went wrong, in words.
// swift-format-ignore: NeverUseImplicitlyUnwrappedOptionals
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    err.map { $0.localizedDescription as NSString }
}

/// The user-information key of an error's description.
nonisolated(unsafe) public let kCFErrorDescriptionKey: CFString = NSLocalizedDescriptionKey as NSString

// MARK: - Strings

/// The encodings `CFStringCreateWithCString` and `CFStringGetCString` take.
public typealias CFStringEncoding = UInt32

/// UTF-8 (`kCFStringEncodingUTF8`).
public let kCFStringEncodingUTF8: CFStringEncoding = 0x0800_0100

/// A string from a NUL-terminated UTF-8 C string; `nil` when it is not UTF-8 or another
/// encoding is asked for.
public func CFStringCreateWithCString(
    _ alloc: CFAllocator?, _ cStr: UnsafePointer<CChar>!, _ encoding: CFStringEncoding
) -> CFString! {
    guard let cStr, encoding == kCFStringEncodingUTF8, let string = String(validatingCString: cStr) else {
        return nil
    }
    return string as NSString
}

/// Whether a number object is a Boolean (`kCFBooleanTrue`, `true as NSNumber`) rather than a
/// number that happens to be 0 or 1: Foundation stores Booleans with the type code of `char`.
func isBoolean(_ number: NSNumber) -> Bool {
    String(cString: number.objCType) == "c"
}
