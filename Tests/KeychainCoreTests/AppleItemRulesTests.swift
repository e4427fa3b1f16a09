import KeychainCore
import Testing

/// The core rules of Apple's item attributes: dates the token keeps, each password
/// class's identity, and access control that needs the PIN for each use.
@Suite("Apple item attributes: dates, password identities and access control")
struct AppleItemRulesTests {
    static func internet(
        server: String = "example.com", account: String = "alice", port: UInt64 = 443,
        _ extra: AttributeSet = [:]
    ) -> AttributeSet {
        var template = dataTemplate(
            label: "i",
            [
                .private: yes, .itemClass: bytes("inet"), .application: bytes(server),
                .account: bytes(account),
                .internetProtocol: bytes("htps"), .port: ulong(port), .path: bytes("/"),
                .authenticationType: bytes("dflt"), .value: bytes("secret"),
            ])
        template.merge(extra) { $1 }
        return template
    }

    static func generic(_ extra: AttributeSet = [:]) -> AttributeSet {
        var template = dataTemplate(
            label: "g",
            [.private: yes, .application: bytes("example.com"), .account: bytes("alice"), .value: [1]])
        template.merge(extra) { $1 }
        return template
    }

    @Test("the token dates every new object and renews the modification date on each change")
    func datesAreTheTokens() throws {
        try withToken { token, _ in
            try logInUser(token)
            let object = try token.createObject(Self.generic(), context: Contexts.user)
            let created = try token.attributes(of: object, context: Contexts.user)
            let creation = try #require(created.ulong(.creationDate))
            #expect(created.ulong(.modificationDate) == creation)
            // A date within a minute of now, in milliseconds since 1970.
            #expect(creation > 1_700_000_000_000)
            try token.updateObject(object, with: [.comment: bytes("changed")], context: Contexts.user)
            let changed = try token.attributes(of: object, context: Contexts.user)
            #expect(changed.ulong(.creationDate) == creation)
            #expect(try #require(changed.ulong(.modificationDate)) >= creation)
        }
    }

    @Test("no caller sets a creation or modification date, nor changes an item's class or access control")
    func datesClassAndAccessControlAreNotSettable() throws {
        try withToken { token, _ in
            try logInUser(token)
            expectKeychainError(.attributeReadOnly) {
                _ = try token.createObject(Self.generic([.creationDate: ulong(1)]), context: Contexts.user)
            }
            let object = try token.createObject(
                Self.generic([.accessControl: ulong(AccessControl.userPresence)]), context: Contexts.user)
            for change: AttributeSet in [
                [.modificationDate: ulong(1)], [.accessControl: ulong(0)], [.itemClass: bytes("inet")],
            ] {
                expectKeychainError(.attributeReadOnly) {
                    try token.updateObject(object, with: change, context: Contexts.user)
                }
            }
        }
    }

    @Test(
        "an internet password is one per server, account, protocol, port, path, authentication type and domain"
    )
    func internetPasswordIdentity() throws {
        try withToken { token, _ in
            try logInUser(token)
            _ = try token.createObject(Self.internet(), context: Contexts.user)
            expectKeychainError(.duplicateItem, containing: "internet password") {
                _ = try token.createObject(Self.internet(), context: Contexts.user)
            }
            _ = try token.createObject(Self.internet(port: 8443), context: Contexts.user)
            _ = try token.createObject(Self.internet([.path: bytes("/other")]), context: Contexts.user)
            _ = try token.createObject(
                Self.internet([.securityDomain: bytes("realm")]), context: Contexts.user)
            // A generic password with the same service and account is another item.
            _ = try token.createObject(Self.generic(), context: Contexts.user)
            let moved = try token.createObject(Self.internet(port: 1), context: Contexts.user)
            expectKeychainError(.duplicateItem, containing: "internet password") {
                try token.updateObject(moved, with: [.port: ulong(443)], context: Contexts.user)
            }
        }
    }

    @Test("a generic password's access group and synchronizable flag are part of its identity")
    func genericPasswordIdentityHasGroupAndSync() throws {
        try withToken { token, _ in
            try logInUser(token)
            _ = try token.createObject(Self.generic(), context: Contexts.user)
            _ = try token.createObject(Self.generic([.synchronizable: yes]), context: Contexts.user)
            _ = try token.createObject(
                Self.generic([.accessGroup: bytes("team.group")]), context: Contexts.user)
            expectKeychainError(.duplicateItem, containing: "generic password") {
                _ = try token.createObject(Self.generic([.synchronizable: no]), context: Contexts.user)
            }
            expectKeychainError(.duplicateItem, containing: "generic password") {
                _ = try token.createObject(
                    Self.generic([.accessGroup: bytes("team.group")]), context: Contexts.user)
            }
        }
    }

    @Test("access control asking for biometry or a watch is refused")
    func biometryIsRefused() throws {
        try withToken { token, _ in
            try logInUser(token)
            for flags in [
                AccessControl.biometryAny, AccessControl.biometryCurrentSet, AccessControl.watch, 1 << 8,
            ] {
                expectKeychainError(.attributeValueInvalid) {
                    _ = try token.createObject(
                        Self.generic([.accessControl: ulong(flags)]), context: Contexts.user)
                }
            }
        }
    }

    @Test("a password whose access control needs presence reads only with the PIN, checked again")
    func presenceNeedsThePINForEachRead() throws {
        try withToken { token, _ in
            try logInUser(token)
            let object = try token.createObject(
                Self.generic([.accessControl: ulong(AccessControl.userPresence)]), context: Contexts.user)
            #expect(
                try token.read([.value, .label], of: object, context: Contexts.user) == [
                    .sensitive, .value(bytes("g")),
                ])
            #expect(try token.attributes(of: object, context: Contexts.user)[.value] == nil)
            expectKeychainError(.pinIncorrect) {
                _ = try token.protectedValue(of: object, pin: bytes("wrong"), context: Contexts.user)
            }
            #expect(
                try token.protectedValue(of: object, pin: bytes("user-pin-0000"), context: Contexts.user) == [
                    1
                ])
            // A public copy would hold the value in clear: refused.
            expectKeychainError(.attributeValueInvalid) {
                _ = try token.copyObject(
                    object, with: [.private: no, .account: bytes("b")], context: Contexts.user)
            }
            // Without access control, the value reads as before.
            let plain = try token.createObject(Self.generic([.account: bytes("bob")]), context: Contexts.user)
            #expect(try token.read([.value], of: plain, context: Contexts.user) == [.value([1])])
        }
    }
}
