import Foundation
import Security
import TestSupport
import Testing

@Suite("Items added without an access group get the default one, as on Apple", .serialized)
struct AccessGroupSnippetsTests {
    @Test(
        "an item added without a group is in p11keychain.default, returned by SecItemAdd and SecItemCopyMatching"
    )
    func defaultGroupIsFilledInAndReturned() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            let (status, group) = addSharedPassword(service: "app", account: "alice")
            #expect(status == errSecSuccess)
            #expect(group == "p11keychain.default")
            #expect(accessGroups(service: "app") == ["p11keychain.default"])
            #expect(keyAccessGroup(tag: Data("com.example.key".utf8)) == "p11keychain.default")
        }
    }

    @Test("a token's configured access-group is the default of the items added to it")
    func configuredGroupIsTheDefault() throws {
        try withPINKeychain { directory in
            let configuration = directory + "/p11keychain.conf"
            try "[token login]\naccess-group = com.example.shared\n".write(
                toFile: configuration, atomically: true, encoding: .utf8)
            setenv("P11KEYCHAIN_CONF", configuration, 1)
            try unlockKeychain(password: TestPIN.user)
            let (status, group) = addSharedPassword(service: "app", account: "alice")
            #expect(status == errSecSuccess)
            #expect(group == "com.example.shared")
            #expect(accessGroups(service: "app", accessGroup: "com.example.shared") == ["com.example.shared"])
        }
    }

    @Test("a query without a group sees every group; one with a group sees only that group")
    func queriesAcrossGroups() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(addSharedPassword(service: "app", account: "alice").0 == errSecSuccess)
            #expect(
                addSharedPassword(service: "app", account: "alice", accessGroup: "com.example.shared").0
                    == errSecSuccess)
            #expect(Set(accessGroups(service: "app")) == ["p11keychain.default", "com.example.shared"])
            #expect(accessGroups(service: "app", accessGroup: "com.example.shared") == ["com.example.shared"])
            #expect(
                accessGroups(service: "app", accessGroup: "p11keychain.default") == ["p11keychain.default"])
            #expect(accessGroups(service: "app", accessGroup: "com.example.other").isEmpty)
        }
    }

    @Test("the access group is part of an item's identity: the same group twice is errSecDuplicateItem")
    func duplicatesIncludeTheGroup() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(addSharedPassword(service: "app", account: "alice").0 == errSecSuccess)
            #expect(addSharedPassword(service: "app", account: "alice").0 == errSecDuplicateItem)
            // Naming the default group is the same identity as naming none.
            #expect(
                addSharedPassword(service: "app", account: "alice", accessGroup: "p11keychain.default").0
                    == errSecDuplicateItem)
            #expect(
                addSharedPassword(service: "app", account: "alice", accessGroup: "com.example.shared").0
                    == errSecSuccess)
            #expect(
                addSharedPassword(service: "app", account: "alice", accessGroup: "com.example.shared").0
                    == errSecDuplicateItem)
        }
    }

    @Test("the CLI's items are in the same default group: its password and an Apple program's are one item")
    func cliAndAppleProgramShareTheDefault() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: TestPIN.user)
            let cli = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                .deletingLastPathComponent()
                .appendingPathComponent("p11keychain").path
            let added = try runProgram(
                cli, ["add-generic-password", "-s", "app", "-a", "alice", "-w", "from the CLI"],
                environment: [
                    "P11KEYCHAIN_DIR": directory, "P11KEYCHAIN_CONF": "/dev/null",
                    "P11KEYCHAIN_PIN": TestPIN.user,
                    "HOME": directory, "PATH": "/usr/bin:/bin",
                ])
            #expect(added.status == 0, "\(added.error)")
            #expect(accessGroups(service: "app") == ["p11keychain.default"])
            #expect(addSharedPassword(service: "app", account: "alice").0 == errSecDuplicateItem)
        }
    }
}
