import KeychainCore
import Testing

@Suite("The record of the types Apple attributes were given as")
struct AppleValueTypesTests {
    @Test("a record reads back as written, and only unusual types are stored")
    func roundTrip() {
        let record = AppleValueTypes([.account: .data, .generic: .string, .label: .string])
        let read = AppleValueTypes(stored: [.valueTypes: record.encoded])
        #expect(read.type(of: .account) == .data)
        #expect(read.type(of: .generic) == .string)
        #expect(read.type(of: .label) == .string)
        #expect(read.types[.label] == nil)
        #expect(AppleValueTypes([.label: .string, .generic: .data]).encoded.isEmpty)
    }

    @Test("a damaged record reads as every attribute of its usual type")
    func damagedRecordReadsAsUsual() {
        let truncated = AppleValueTypes(stored: [.valueTypes: [1, 2, 3]])
        #expect(truncated.types.isEmpty)
        var unknown = AppleValueTypes([.account: .data]).encoded
        unknown[unknown.count - 1] = 9
        #expect(AppleValueTypes(stored: [.valueTypes: unknown]).types.isEmpty)
    }
}
