import KeychainCore
import Testing

/// The access group rule: the default an added item gets, what a stored item without a group
/// is in, which items a query sees, and the group in a password's identity.
@Suite("Access groups: the default, queries across groups, and the group in a password's identity")
struct AccessGroupRulesTests {
    static func generic(_ extra: AttributeSet = [:]) -> AttributeSet {
        var template = dataTemplate(
            label: "g",
            [.private: yes, .application: bytes("example.com"), .account: bytes("alice"), .value: [1]])
        template.merge(extra) { $1 }
        return template
    }

    @Test("an item added without a group gets the one constant default; a named group is kept")
    func defaultIsFilledIn() {
        let token = Token(configuration: TokenConfiguration(name: "t", path: "/nonexistent/t.sqlite3"))
        #expect(AccessGroup.defaultName == "p11keychain.default")
        #expect(token.withDefaultAccessGroup([:])[.accessGroup] == bytes("p11keychain.default"))
        let named = token.withDefaultAccessGroup([.accessGroup: bytes("team.group")])
        #expect(named[.accessGroup] == bytes("team.group"))
    }

    @Test("a token's access-group is the default of the items added to it")
    func configuredDefault() throws {
        var configuration = TokenConfiguration(name: "t", path: "/nonexistent/t.sqlite3")
        configuration.accessGroup = "com.example.shared"
        #expect(configuration.defaultAccessGroup == "com.example.shared")
        let token = Token(configuration: configuration)
        #expect(token.withDefaultAccessGroup([:])[.accessGroup] == bytes("com.example.shared"))
    }

    @Test("a stored item without a group is in the default group; a query without a group sees every group")
    func absentIsDefault() {
        #expect(AccessGroup.group(of: [:]) == bytes("p11keychain.default"))
        #expect(AccessGroup.contains([:], group: bytes("p11keychain.default")))
        #expect(!AccessGroup.contains([:], group: bytes("team.group")))
        #expect(AccessGroup.contains([.accessGroup: bytes("team.group")], group: bytes("team.group")))
        #expect(!AccessGroup.contains([.accessGroup: bytes("team.group")], group: bytes("other")))
        #expect(AccessGroup.contains([.accessGroup: bytes("team.group")], group: nil))
        #expect(AccessGroup.contains([:], group: nil))
    }

    @Test("a password stored without a group and one added in the default group are duplicates")
    func absentAndDefaultCollide() throws {
        try withToken { token, _ in
            try logInUser(token)
            _ = try token.createObject(Self.generic(), context: Contexts.user)
            expectKeychainError(.duplicateItem, containing: "generic password") {
                _ = try token.createObject(
                    Self.generic([.accessGroup: bytes(AccessGroup.defaultName)]), context: Contexts.user)
            }
            // Another group is another identity.
            _ = try token.createObject(
                Self.generic([.accessGroup: bytes("team.group")]), context: Contexts.user)
            // A change into the default group collides with the item stored without one.
            let other = try token.createObject(
                Self.generic([.accessGroup: bytes("other.group")]), context: Contexts.user)
            expectKeychainError(.duplicateItem) {
                try token.updateObject(
                    other, with: [.accessGroup: bytes(AccessGroup.defaultName)], context: Contexts.user)
            }
        }
    }

    @Test("access-group in a token section sets that token's default; an empty one is refused")
    func configurationKey() throws {
        let environment = [
            "P11KEYCHAIN_CONF": "/dev/null", "P11KEYCHAIN_DIR": "/data",
            "HOME": "/home/u",
        ]
        var configuration = try Configuration.load(environment: environment)
        try configuration.apply(
            "[token login]\naccess-group = com.example.shared\n[token Work]\npath = /w.sqlite3\n",
            file: "test.conf", home: "/home/u")
        #expect(
            configuration.tokens.map(\.defaultAccessGroup) == ["com.example.shared", "p11keychain.default"])
        var refused = try Configuration.load(environment: environment)
        #expect(throws: Configuration.ParseError.self) {
            try refused.apply("[token login]\naccess-group =\n", file: "test.conf", home: "/home/u")
        }
    }
}
