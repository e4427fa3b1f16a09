/// Runs `body` on the bytes of `array`, with the typed error `Array.withUnsafeBytes` does not
/// carry through.
package func withBytes<R, E: Error>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> R)
    throws(E) -> R
{
    let result = array.withUnsafeBytes { buffer in Result { () throws(E) in try body(buffer) } }
    return try result.get()
}

/// A byte array of at most `capacity` bytes that `body` writes in place, returning how many it
/// wrote: `Array(unsafeUninitializedCapacity:initializingWith:)` with the typed error it does
/// not carry through. After an error no array is made.
package func writtenBytes<E: Error>(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int)
    throws(E) -> [UInt8]
{
    var failure: E?
    let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
        do throws(E) {
            count = min(max(try body(UnsafeMutableRawBufferPointer(buffer)), 0), buffer.count)
        } catch {
            failure = error
            count = 0
        }
    }
    if let failure { throw failure }
    return bytes
}
