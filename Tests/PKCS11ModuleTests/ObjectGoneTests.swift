import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The calls a forked child makes to destroy objects, read before the fork.
private struct Destroyer {
    let initialize: CK_C_Initialize
    let openSession: CK_C_OpenSession
    let login: CK_C_Login
    let destroy: CK_C_DestroyObject
    let finalize: CK_C_Finalize

    init(_ m: FunctionTable<CK_FUNCTION_LIST>) throws {
        initialize = try m.C_Initialize
        openSession = try m.C_OpenSession
        login = try m.C_Login
        destroy = try m.C_DestroyObject
        finalize = try m.C_Finalize
    }

    /// Another process of the same user: logs in and destroys `objects` (token objects'
    /// handles name the same objects in every process). Touches only `pin` and `session`,
    /// prepared before the fork; the exit status names the step that failed.
    func run(
        _ objects: [CK_OBJECT_HANDLE], pin: UnsafeMutableBufferPointer<UInt8>,
        session: UnsafeMutablePointer<CK_SESSION_HANDLE>
    )
        -> Int32
    {
        guard initialize(nil) == CKR_OK else { return 10 }
        guard openSession(0, readWriteSession, nil, nil, session) == CKR_OK else { return 11 }
        guard login(session.pointee, CK_USER_TYPE(CKU_USER), pin.baseAddress, CK_ULONG(pin.count)) == CKR_OK
        else {
            return 12
        }
        for (index, object) in objects.enumerated() where destroy(session.pointee, object) != CKR_OK {
            return Int32(20 + index)
        }
        return finalize(nil) == CKR_OK ? 0 : 13
    }
}

/// Deletes each of `objects` in turn, 2 ms apart, from another process: without a login,
/// so only public objects. The exit status names the step that failed.
private func destroyOneByOne(
    _ destroyer: Destroyer, _ objects: UnsafeBufferPointer<CK_OBJECT_HANDLE>,
    session: UnsafeMutablePointer<CK_SESSION_HANDLE>
) -> Int32 {
    guard destroyer.initialize(nil) == CKR_OK else { return 10 }
    guard destroyer.openSession(0, readWriteSession, nil, nil, session) == CKR_OK else { return 11 }
    usleep(20_000)
    for object in objects {
        guard destroyer.destroy(session.pointee, object) == CKR_OK else { return 20 }
        usleep(2_000)
    }
    return destroyer.finalize(nil) == CKR_OK ? 0 : 13
}

extension ModuleTests {
    @Suite("Objects another process destroyed")
    struct ObjectsGone {
        @Test(
            "C_GetAttributeValue, C_SetAttributeValue, C_CopyObject and C_DestroyObject on an object another process destroyed return CKR_OBJECT_HANDLE_INVALID"
        )
        func objectDestroyedByAnotherProcess() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let publicData = try token.createObject(
                    dataTemplate(label: "public", value: [1]), in: session)
                let privateData = try token.createObject(
                    dataTemplate(label: "private", value: [2]) + [Attribute(CKA_PRIVATE, bool: true)],
                    in: session)
                let certificate = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let pair = try token.generateKeyPair(.p256, token: true, in: session)
                let objects = [publicData, privateData, certificate, pair.privateKey, pair.publicKey]
                // Read once, so that whatever this process keeps of them is kept.
                for object in objects { _ = try token.attribute(CKA_LABEL, of: object, in: session) }
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, [UInt8](repeating: 1, count: 8)).rv == CKR_OK)

                let destroyer = try Destroyer(token.m)
                let pin = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: testUserPIN.count)
                _ = pin.initialize(from: testUserPIN)
                let childSession = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)
                defer {
                    pin.deallocate()
                    childSession.deallocate()
                }
                let outcome = try fork(timeout: 60) {
                    destroyer.run(objects, pin: pin, session: childSession)
                }
                try #require(outcome == .exited(0), "the destroying process \(outcome)")

                for object in objects {
                    var label = [UInt8](repeating: 0, count: 64)
                    let get = try label.withUnsafeMutableBytes { buffer in
                        var entry = CK_ATTRIBUTE(
                            type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: buffer.baseAddress, ulValueLen: 64)
                        return try token.m.C_GetAttributeValue(session, object, &entry, 1)
                    }
                    #expect(get == CKR_OBJECT_HANDLE_INVALID, "C_GetAttributeValue: \(name(of: get))")
                    let setRV = try withTemplate([Attribute(CKA_LABEL, string: "renamed")]) {
                        entries, count in
                        try token.m.C_SetAttributeValue(session, object, entries, count)
                    }
                    #expect(setRV == CKR_OBJECT_HANDLE_INVALID, "C_SetAttributeValue: \(name(of: setRV))")
                    var copy: CK_OBJECT_HANDLE = 0
                    let copyRV = try withTemplate([Attribute(CKA_LABEL, string: "copy")]) { entries, count in
                        try token.m.C_CopyObject(session, object, entries, count, &copy)
                    }
                    #expect(copyRV == CKR_OBJECT_HANDLE_INVALID, "C_CopyObject: \(name(of: copyRV))")
                    var size: CK_ULONG = 0
                    let sizeRV = try token.m.C_GetObjectSize(session, object, &size)
                    #expect(sizeRV == CKR_OBJECT_HANDLE_INVALID, "C_GetObjectSize: \(name(of: sizeRV))")
                    let destroyRV = try token.m.C_DestroyObject(session, object)
                    #expect(destroyRV == CKR_OBJECT_HANDLE_INVALID, "C_DestroyObject: \(name(of: destroyRV))")
                }
                let signInit = try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey)
                #expect(signInit == CKR_KEY_HANDLE_INVALID, "C_SignInit: \(name(of: signInit))")
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test(
            "C_SetAttributeValue racing another process's C_DestroyObject returns CKR_OK or CKR_OBJECT_HANDLE_INVALID, never CKR_DEVICE_ERROR"
        )
        func setAttributeRacingDestroy() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let objects = UnsafeMutableBufferPointer<CK_OBJECT_HANDLE>.allocate(capacity: 150)
                let childSession = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)
                defer {
                    objects.deallocate()
                    childSession.deallocate()
                }
                for index in objects.indices {
                    objects[index] = try token.createObject(
                        dataTemplate(label: "doomed \(index)", value: [1]), in: session)
                }
                let destroyer = try Destroyer(token.m)
                let setAttribute = try token.m.C_SetAttributeValue
                var results: [CK_RV: Int] = [:]
                let outcome = try withTemplate([Attribute(CKA_LABEL, string: "renamed")]) { entries, count in
                    // The child deletes the objects one by one while this process keeps
                    // renaming the one the child is about to delete.
                    try fork(
                        timeout: 120,
                        background: {
                            // Bounded in time, not in tries: on a loaded machine the child may
                            // take longer than any fixed number of renames to reach an object.
                            let deadline = Date().addingTimeInterval(100)
                            for object in objects {
                                while Date() < deadline {
                                    let rv = setAttribute(session, object, entries, count)
                                    results[rv, default: 0] += 1
                                    if rv != CKR_OK { break }
                                    // A pause, as any real client makes: a writer spinning on
                                    // the store with no gap starves the other process's
                                    // writes past SQLite's busy timeout under a sanitizer.
                                    usleep(200)
                                }
                            }
                        }
                    ) {
                        destroyOneByOne(destroyer, UnsafeBufferPointer(objects), session: childSession)
                    }
                }
                #expect(outcome == .exited(0), "the destroying process \(outcome)")
                let unexpected = results.filter { $0.key != CKR_OK && $0.key != CKR_OBJECT_HANDLE_INVALID }
                #expect(unexpected.isEmpty, "\(unexpected.map { "\(name(of: $0.key)) ×\($0.value)" })")
                #expect(results[CKR_OBJECT_HANDLE_INVALID] == objects.count)
            }
        }
    }
}
