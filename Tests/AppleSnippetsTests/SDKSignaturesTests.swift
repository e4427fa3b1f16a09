import Foundation
import Testing

@Suite("Security's functions have the types of Apple's SDK in Swift 6 mode")
struct SDKSignaturesTests {
    /// The public `Sec…` functions of Sources/Security.
    private func implemented() throws -> Set<String> {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "Sources/Security")
        var names: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: sources.path)
        where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("public func Sec") {
                let name = line.dropFirst("public func ".count).prefix { $0.isLetter || $0.isNumber }
                names.insert(String(name))
            }
        }
        return names
    }

    /// Functions this module has that are not in Apple's public headers (no SDK type to match).
    private let notInTheSDK: Set<String> = ["SecAccessControlGetProtection", "SecCopyErrorDiagnostic"]

    @Test("every public Sec function of the module is bound to its SDK type, once")
    func everyFunctionIsChecked() throws {
        let checked = sdkSignatures()
        #expect(Set(checked).count == checked.count)
        let implemented = try implemented()
        #expect(implemented.count > 60)
        #expect(implemented.subtracting(notInTheSDK) == Set(checked))
    }
}
