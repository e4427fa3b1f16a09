import Testing

@Suite("list-mechanisms columns")
struct MechanismListColumnsTests {
    @Test("list-mechanisms shows every column its header names, the functions last")
    func everyColumnIsShown() throws {
        let listing = try Sandbox().p11keychain("list-mechanisms")
        #expect(listing.status == 0, "\(listing.error)")
        let lines = listing.output.split(separator: "\n")
        #expect(
            lines.first?.split(separator: " ") == [
                "MECHANISM", "VALUE", "KEY", "TYPES", "KEY", "SIZES", "FUNCTIONS",
            ])
        let hmac = lines.first { $0.hasPrefix("CKM_SHA256_HMAC ") }.map(String.init)
        #expect(hmac?.hasSuffix(" sign, verify") == true, "\(hmac ?? "no CKM_SHA256_HMAC row")")
        let digest = lines.first { $0.hasPrefix("CKM_SHA256 ") }.map(String.init)
        #expect(digest?.hasSuffix(" digest") == true, "\(digest ?? "no CKM_SHA256 row")")
    }
}
