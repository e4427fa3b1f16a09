/// Runs `body` on the bytes of `array`, with the typed error `Array.withUnsafeBytes` does not
/// carry through.
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(CoreError) -> R) throws(CoreError)
    -> R
{
    var result: Result<R, CoreError>?
    array.withUnsafeBytes { buffer in
        result = Result { () throws(CoreError) in try body(buffer) }
    }
    guard let result else { throw CoreError(.operationFailed, "the bytes could not be read") }
    return try result.get()
}
