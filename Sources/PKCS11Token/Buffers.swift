internal import CPKCS11
internal import KeychainCore

/// The two-call convention of v2.40 §5.2, in one place for every function that returns
/// bytes: with a NULL buffer, report the length and succeed; with a short buffer, report
/// the length and fail with CKR_BUFFER_TOO_SMALL; else copy.
func writeBytes(
    _ bytes: [UInt8], to buffer: UnsafeMutablePointer<CK_BYTE>?,
    length: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    try writeArray(bytes, to: buffer, count: length)
}

/// The same convention for arrays of handles, slot IDs and mechanism types.
func writeArray<Element>(
    _ elements: [Element], to buffer: UnsafeMutablePointer<Element>?,
    count: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    guard let buffer else {
        count.pointee = CK_ULONG(elements.count)
        return
    }
    guard count.pointee >= CK_ULONG(elements.count) else {
        count.pointee = CK_ULONG(elements.count)
        throw P11Error(CKR_BUFFER_TOO_SMALL, "buffer holds fewer than \(elements.count) elements")
    }
    elements.withUnsafeBufferPointer { source in
        if let base = source.baseAddress { buffer.update(from: base, count: source.count) }
    }
    count.pointee = CK_ULONG(elements.count)
}

/// Values larger than this in a template are refused: no certificate or data object needs
/// them, and a wild length must not make the module read far past a caller's buffer end.
let maximumAttributeLength: CK_ULONG = 16 << 20

/// Reads a caller's template into an attribute set. Every pointer and length is checked;
/// a type given twice makes the template inconsistent.
func readTemplate(_ pointer: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ count: CK_ULONG)
    throws(P11Error) -> AttributeSet
{
    guard count > 0 else { return [:] }
    guard let pointer else { throw P11Error(CKR_ARGUMENTS_BAD, "template is NULL with \(count) entries") }
    var set: AttributeSet = [:]
    for entry in UnsafeBufferPointer(start: pointer, count: Int(count)) {
        let type = AttributeType(UInt64(entry.type))
        let value: [UInt8]
        if entry.ulValueLen == 0 {
            value = []
        } else {
            guard let data = entry.pValue else {
                throw P11Error(
                    CKR_ARGUMENTS_BAD, "attribute \(type) has a NULL value and length \(entry.ulValueLen)")
            }
            guard entry.ulValueLen <= maximumAttributeLength else {
                throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) is longer than 16 MiB")
            }
            value = Array(UnsafeRawBufferPointer(start: data, count: Int(entry.ulValueLen)))
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
            | (CK_OBJECT_HANDLE(reference.rowID) & rowMask)
    }

    static func reference(_ handle: CK_OBJECT_HANDLE, slot: Slot) throws(P11Error) -> ObjectReference {
        guard handle >> 56 == slot.id + 1, handle & rowMask != 0 else {
            throw P11Error(CKR_OBJECT_HANDLE_INVALID, "handle \(handle) names no object of this slot")
        }
        return ObjectReference(isSessionObject: handle & sessionBit != 0, rowID: Int64(handle & rowMask))
    }
}
