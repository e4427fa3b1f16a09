internal import CPKCS11
internal import KeychainCore

/// The most entries a template may have: far more than there are attribute types, and small
/// enough that a wild count cannot make the module walk far past a caller's array.
let maximumTemplateCount = 1 << 16

/// The longest data one call may pass (C_Digest, C_Sign, C_Encrypt… and their parts): 1 GiB.
/// Longer messages go in several parts; a wild length near 2^63 or 2^64 − 1 is refused
/// before anything reads the caller's buffer.
let maximumDataLength = 1 << 30

/// The one conversion of a number a host passed (a CK_ULONG count or length) into an Int.
///
/// Every count and length the module uses to walk a caller's memory, or to size its own,
/// comes through here: `Int(x)` traps for x ≥ 2^63 and a plain sum can overflow, and a
/// PKCS#11 module must return a CK_RV for any input (v2.40 §5.1). A value that is not an Int
/// or exceeds `limit` is refused with `rv`: CKR_ARGUMENTS_BAD for counts, CKR_DATA_LEN_RANGE
/// (or the operation's own length code) for data.
func hostCount(
    _ value: CK_ULONG, limit: Int, _ rv: CK_RV = CKR_ARGUMENTS_BAD, what: @autoclosure () -> String
) throws(P11Error) -> Int {
    guard let count = Int(exactly: value), count <= limit else {
        throw P11Error(rv, "\(what()) of \(value) is more than the \(limit) this token accepts")
    }
    return count
}

/// The two-call convention of v2.40 §5.2 in one place, for every function that returns bytes
/// or an array (signatures, ciphertexts, digests, attribute values, slot and mechanism
/// lists):
///
/// - a NULL `buffer` is a length query: `*length` becomes `size`, the result is false and
///   the caller's operation goes on;
/// - a buffer shorter than the output: `*length` becomes the output's length (or
///   `shortLength`), CKR_BUFFER_TOO_SMALL is thrown and the operation goes on;
/// - otherwise the output is copied, `*length` becomes its length and the result is true:
///   the caller ends its operation.
///
/// `size` is the output's length, or with `sizeIsExact` false an upper bound only (RSA
/// decryption, whose length is known afterwards). `produce` runs only once the buffer was
/// found large enough for an exact size; an operation it starts to consume (a signature
/// the key makes) is the caller's to end inside it.
@discardableResult
func writeOutput<Element>(
    into buffer: UnsafeMutablePointer<Element>?, length: UnsafeMutablePointer<CK_ULONG>, size: Int,
    sizeIsExact: Bool = true, shortLength: CK_ULONG? = nil, _ produce: () throws(P11Error) -> [Element]
) throws(P11Error) -> Bool {
    guard let buffer else {
        length.pointee = CK_ULONG(size)
        return false
    }
    let capacity = length.pointee
    if sizeIsExact { _ = try room(buffer, length: length, size: size, shortLength: shortLength) }
    let output = try produce()
    guard capacity >= CK_ULONG(output.count) else {
        length.pointee = shortLength ?? CK_ULONG(output.count)
        throw P11Error(
            CKR_BUFFER_TOO_SMALL, "the buffer holds fewer than the \(output.count) elements of the output")
    }
    output.withUnsafeBufferPointer { source in
        if let base = source.baseAddress { buffer.update(from: base, count: source.count) }
    }
    length.pointee = CK_ULONG(output.count)
    return true
}

/// `writeOutput` for an output of exactly `size` bytes that `produce` writes straight into the
/// caller's buffer (a MAC: no array made and copied for a few bytes). Same convention, same
/// answers.
@discardableResult
func writeOutput(
    into buffer: UnsafeMutablePointer<CK_BYTE>?, length: UnsafeMutablePointer<CK_ULONG>, exactly size: Int,
    _ produce: (UnsafeMutableRawBufferPointer) throws(P11Error) -> Void
) throws(P11Error) -> Bool {
    guard let buffer else {
        length.pointee = CK_ULONG(size)
        return false
    }
    try produce(UnsafeMutableRawBufferPointer(try room(buffer, length: length, size: size)))
    length.pointee = CK_ULONG(size)
    return true
}

/// The first `size` elements of the caller's `buffer`, after the convention's check that it
/// holds them: CKR_BUFFER_TOO_SMALL, with `*length` set to `size` (or `shortLength`), when not.
private func room<Element>(
    _ buffer: UnsafeMutablePointer<Element>, length: UnsafeMutablePointer<CK_ULONG>, size: Int,
    shortLength: CK_ULONG? = nil
) throws(P11Error) -> UnsafeMutableBufferPointer<Element> {
    guard length.pointee >= CK_ULONG(size) else {
        length.pointee = shortLength ?? CK_ULONG(size)
        throw P11Error(CKR_BUFFER_TOO_SMALL, "the buffer holds fewer than the \(size) elements of the output")
    }
    return UnsafeMutableBufferPointer(start: buffer, count: size)
}

/// Reads a caller's data buffer; NULL is allowed only with length zero. A length above
/// `limit` is refused with `rv` before the buffer is touched.
func input(
    _ pointer: UnsafeMutablePointer<CK_BYTE>?, _ length: CK_ULONG, limit: Int = maximumDataLength,
    _ rv: CK_RV = CKR_DATA_LEN_RANGE
) throws(P11Error) -> UnsafeRawBufferPointer {
    guard length > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    guard let pointer else { throw P11Error(CKR_ARGUMENTS_BAD, "data is NULL with length \(length)") }
    let count = try hostCount(length, limit: limit, rv, what: "a data length")
    return UnsafeRawBufferPointer(start: pointer, count: count)
}

/// Values larger than this in a template are refused: no certificate or data object needs
/// them, and a wild length must not make the module read far past a caller's buffer end.
let maximumAttributeLength = 16 << 20

/// Reads a caller's template into an attribute set. Every pointer and length is checked;
/// a type given twice makes the template inconsistent.
func readTemplate(_ pointer: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ count: CK_ULONG)
    throws(P11Error) -> AttributeSet
{
    try readEntries(pointer, count, nested: false)
}

/// Reads template entries. An attribute-array attribute (CKA_WRAP_TEMPLATE…) holds entries of
/// its own, read the same way (one level deep) and kept in `AttributeArray`'s form.
private func readEntries(_ pointer: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ count: CK_ULONG, nested: Bool)
    throws(P11Error) -> AttributeSet
{
    guard count > 0 else { return [:] }
    guard let pointer else { throw P11Error(CKR_ARGUMENTS_BAD, "template is NULL with \(count) entries") }
    let entries = try hostCount(
        count, limit: nested ? AttributeArray.maximumCount : maximumTemplateCount,
        nested ? CKR_ATTRIBUTE_VALUE_INVALID : CKR_ARGUMENTS_BAD, what: "a template count")
    // Sized once: grown entry by entry, a certificate's template was rehashed three times.
    var set = AttributeSet(minimumCapacity: entries)
    for entry in UnsafeBufferPointer(start: pointer, count: entries) {
        let type = AttributeType(UInt64(entry.type))
        let value: [UInt8]
        if type.isAttributeArray {
            guard !nested else {
                throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) cannot be nested")
            }
            let size = CK_ULONG(MemoryLayout<CK_ATTRIBUTE>.size)
            guard entry.ulValueLen % size == 0 else {
                throw P11Error(
                    CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) is not a whole array of CK_ATTRIBUTE")
            }
            // The inner array is read unaligned-safe: copied out entry by entry.
            let inner = entry.ulValueLen / size
            guard inner == 0 || entry.pValue != nil else {
                throw P11Error(
                    CKR_ARGUMENTS_BAD, "attribute \(type) has a NULL value and length \(entry.ulValueLen)")
            }
            let innerCount = try hostCount(
                inner, limit: AttributeArray.maximumCount, CKR_ATTRIBUTE_VALUE_INVALID,
                what: "the length of attribute \(type)")
            var copies = (0..<innerCount).map { index in
                entry.pValue?.loadUnaligned(fromByteOffset: index * Int(size), as: CK_ATTRIBUTE.self)
                    ?? CK_ATTRIBUTE()
            }
            let attributes = try copies.withUnsafeMutableBufferPointer { (buffer) throws(P11Error) in
                try readEntries(buffer.baseAddress, CK_ULONG(buffer.count), nested: true)
            }
            value = AttributeArray.encode(attributes)
        } else if entry.ulValueLen == 0 {
            value = []
        } else {
            guard let data = entry.pValue else {
                throw P11Error(
                    CKR_ARGUMENTS_BAD, "attribute \(type) has a NULL value and length \(entry.ulValueLen)")
            }
            let length = try hostCount(
                entry.ulValueLen, limit: maximumAttributeLength, CKR_ATTRIBUTE_VALUE_INVALID,
                what: "the length of attribute \(type)")
            value = Array(UnsafeRawBufferPointer(start: data, count: length))
        }
        guard set.updateValue(value, forKey: type) == nil else {
            throw P11Error(CKR_TEMPLATE_INCONSISTENT, "attribute \(type) appears twice in the template")
        }
    }
    return set
}

/// Object handles: the slot, whether the object is a session object, and its row ID, so a
/// handle is valid for the life of the object and never comes to mean another object.
enum ObjectHandle {
    private static let sessionBit: CK_OBJECT_HANDLE = 1 << 55
    private static let rowMask: CK_OBJECT_HANDLE = (1 << 55) - 1

    static func make(_ reference: ObjectReference, slot: Slot) -> CK_OBJECT_HANDLE {
        ((slot.id + 1) << 56) | (reference.isSessionObject ? sessionBit : 0)
            | (CK_OBJECT_HANDLE(truncatingIfNeeded: reference.rowID) & rowMask)
    }

    static func reference(_ handle: CK_OBJECT_HANDLE, slot: Slot) throws(P11Error) -> ObjectReference {
        guard handle >> 56 == slot.id + 1, handle & rowMask != 0 else {
            throw P11Error(CKR_OBJECT_HANDLE_INVALID, "handle \(handle) names no object of this slot")
        }
        return ObjectReference(isSessionObject: handle & sessionBit != 0, rowID: Int64(handle & rowMask))
    }
}
