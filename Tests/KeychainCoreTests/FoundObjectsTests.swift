import KeychainCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `Token.findObjectsWithAttributes`: a find and its reads in one go, and the objects it read
/// kept only while the store's change counter stays (ARCHITECTURE.md §4.3).
@Suite("Finding objects with their attributes")
struct FoundObjectsTests {
    static let password: AttributeSet = [
        .class: ulong(ObjectClass.data.rawValue), .token: yes, .private: yes,
        .application: bytes("svc"), .label: bytes("p"), .value: bytes("one"),
    ]

    @Test("an object read again by its unique ID shows what another connection changed or deleted")
    func otherConnectionSeen() throws {
        try withToken { first, _ in
            try logInUser(first)
            _ = try first.createObject(Self.password, context: Contexts.user)
            let found = try first.findObjectsWithAttributes(
                [.application: bytes("svc")], context: Contexts.user, revealing: [.value])
            #expect(found.count == 1)
            #expect(found.first?.attributes[.value] == bytes("one"))
            let uid = try #require(found.first?.attributes[.uniqueID])
            let byID: AttributeSet = [.uniqueID: uid, .class: ulong(ObjectClass.data.rawValue)]
            #expect(
                try first.findObjectsWithAttributes(byID, context: Contexts.user, revealing: [.value])
                    .first?.attributes[.value] == bytes("one"))

            // Another connection to the store, as another process has.
            let second = Token(configuration: first.configuration)
            try second.logIn(.user, pin: bytes("user-pin-0000"))
            let reference = try #require(found.first?.reference)
            _ = try second.updateObjects([reference], with: [.value: bytes("two")], context: Contexts.user)
            #expect(
                try first.findObjectsWithAttributes(byID, context: Contexts.user, revealing: [.value])
                    .first?.attributes[.value] == bytes("two"))
            try second.destroyObject(reference, context: Contexts.user)
            #expect(try first.findObjectsWithAttributes(byID, context: Contexts.user).isEmpty)
        }
    }

    @Test(
        "a password read and kept is neither shown nor opened after another connection re-initialised the token"
    )
    func reinitialisedElsewhere() throws {
        try withToken { first, _ in
            try logInUser(first)
            _ = try first.createObject(Self.password, context: Contexts.user)
            let found = try first.findObjectsWithAttributes(
                [.application: bytes("svc")], context: Contexts.user, revealing: [.value])
            let uid = try #require(found.first?.attributes[.uniqueID])
            let byID: AttributeSet = [.uniqueID: uid]
            #expect(
                try first.findObjectsWithAttributes(byID, context: Contexts.user, revealing: [.value]).count
                    == 1)

            let second = Token(configuration: first.configuration)
            try second.initialize(securityOfficerPIN: bytes("so-pin-0000"), label: "again")
            #expect(
                try first.findObjectsWithAttributes(byID, context: Contexts.user, revealing: [.value]).isEmpty
            )
            #expect(first.loggedInUser == nil)
        }
    }

    @Test("a private object read by a find is not shown by its unique ID after the logout")
    func privateObjectHiddenAfterLogout() throws {
        try withToken { token, _ in
            try logInUser(token)
            _ = try token.createObject(Self.password, context: Contexts.user)
            let found = try token.findObjectsWithAttributes(
                [.application: bytes("svc")], context: Contexts.user)
            let uid = try #require(found.first?.attributes[.uniqueID])
            token.logOut()
            #expect(try token.findObjectsWithAttributes([.uniqueID: uid], context: Contexts.user).isEmpty)
            #expect(
                try token.findObjectsWithAttributes([.uniqueID: uid], context: Contexts.readWrite).isEmpty)
        }
    }

    @Test("finds the objects findObjects finds, with the attributes attributes(of:) reads")
    func sameAsFindThenRead() throws {
        try withToken { token, _ in
            try logInUser(token)
            _ = try token.createObject(Self.password, context: Contexts.user)
            var visible = Self.password
            visible[.private] = [0]
            visible[.label] = bytes("q")
            _ = try token.createObject(visible, context: Contexts.user)
            var session = visible
            session[.token] = [0]
            _ = try token.createObject(session, context: Contexts.user)
            for context in [Contexts.user, Contexts.readWrite] {
                for template: AttributeSet in [
                    [.application: bytes("svc")], [:], [.label: bytes("q")], [.private: yes],
                ] {
                    let references = try token.findObjects(template, context: context)
                    let found = try token.findObjectsWithAttributes(
                        template, context: context, revealing: [.value])
                    #expect(found.map(\.reference) == references)
                    for object in found {
                        #expect(
                            object.attributes
                                == (try token.attributes(
                                    of: object.reference, context: context, revealing: [.value])))
                    }
                }
            }
        }
    }
}
