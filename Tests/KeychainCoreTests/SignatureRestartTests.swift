import KeychainCore
import KeychainCrypto
import Testing

/// A finished signature with a stored key waits in its caller's `KeptContexts` and the next
/// `signatureOperation` of the same key object, mechanism and use restarts it (the same object,
/// no key read); anything that could change the answer (a write to the store, another
/// mechanism, another key, a per-use PIN) makes a new one through `useKey`.
@Suite("A finished signature restarts only while nothing it was checked on changed")
struct SignatureRestartTests {
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let ecdsaSHA256: UInt64 = 0x1044
    static let ecdsaSHA384: UInt64 = 0x1045
    let message: [UInt8] = Array("restart".utf8)

    private func pair(_ token: Token, _ extra: AttributeSet = [:]) throws -> KeyPairReferences {
        try token.generateKeyPair(
            .ec(curveParameters: Self.p256), publicTemplate: [.token: yes, .verify: yes],
            privateTemplate: [.token: yes, .private: yes, .sign: yes].merging(extra) { $1 },
            context: Contexts.user)
    }

    private func mechanism(_ type: UInt64 = ecdsaSHA256) throws -> SignatureMechanism {
        try SignatureMechanism(type, .none, for: MechanismFunctions(.sign))
    }

    /// Starts a signature with `kept` and finishes it.
    private func signed(
        _ token: Token, _ key: ObjectReference, _ kept: KeptContexts, _ type: UInt64 = ecdsaSHA256
    ) throws -> SignatureOperation {
        let operation = try token.signatureOperation(
            key, try mechanism(type), for: .sign, context: Contexts.user, kept: kept)
        let signature = try message.withUnsafeBytes { try operation.sign($0) }
        #expect(signature.count == 64)
        return operation
    }

    @Test("the same key and mechanism, nothing written: the finished operation itself starts again")
    func unchangedRestarts() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try pair(token).privateKey
            let kept = KeptContexts()
            let first = try signed(token, key, kept)
            #expect(try signed(token, key, kept) === first)
            #expect(try signed(token, key, kept) === first)
        }
    }

    @Test("a write to the store, another mechanism or another key between two signatures: a new operation")
    func anyChangeMakesANewOne() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try pair(token).privateKey
            let kept = KeptContexts()
            var last = try signed(token, key, kept)
            _ = try token.createObject(dataTemplate(label: "a write"), context: Contexts.user)
            let afterWrite = try signed(token, key, kept)
            #expect(afterWrite !== last)
            last = afterWrite
            let otherHash = try signed(token, key, kept, Self.ecdsaSHA384)
            #expect(otherHash !== last)
            last = otherHash
            let otherKey = try signed(token, try pair(token).privateKey, kept, Self.ecdsaSHA384)
            #expect(otherKey !== last)
            kept.removeAll()
            #expect(try signed(token, key, kept) !== otherKey)
        }
    }

    @Test("a key that needs the PIN for each use is never restarted")
    func alwaysAuthenticateMakesANewOne() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try pair(token, [.alwaysAuthenticate: yes]).privateKey
            let kept = KeptContexts()
            var previous: SignatureOperation?
            for _ in 0..<2 {
                let operation = try token.signatureOperation(
                    key, try mechanism(), for: .sign, context: Contexts.user, kept: kept)
                #expect(operation !== previous)
                #expect(operation.awaitsPIN)
                try operation.authenticate(pin: bytes("user-pin-0000"))
                _ = try message.withUnsafeBytes { try operation.sign($0) }
                previous = operation
            }
        }
    }
}
