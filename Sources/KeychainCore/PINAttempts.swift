internal import KeychainCrypto
internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// One PIN attempt in flight: the record it checks against, the token's epoch, and its claim
/// (nil in a store this process cannot write, which keeps no count).
struct PINAttempt {
    /// A claimed slot: its stored ID, and the kernel lock that says its process is alive.
    struct Claim {
        var slot: Int
        var id: [UInt8]
        var lock: AttemptLock
    }

    var record: PINRecord
    var epoch: [UInt8]?
    var claim: Claim?
}

/// PIN attempts are bounded before the guess, and right PINs never lock (ARCHITECTURE.md §6.4).
///
/// The store keeps, per PIN, the count of confirmed wrong PINs (`<who>.failures`) and one
/// claim per attempt in flight (`<who>.claim.<slot>`, a random ID; slots 0 ..< the limit),
/// whose process holds the store's attempt lock of that slot (AttemptLock) while it runs.
/// - An attempt is claimed before the slow check, in one write transaction, while confirmed
///   failures plus live claims stay below the limit: any number of threads and processes
///   guessing at once get exactly the limit between them.
/// - A wrong PIN turns its claim into a failure; a right PIN removes its claim and clears the
///   failures (the other claims then end on their own); an attempt that ends in an error,
///   neither right nor wrong, removes its claim and counts nothing.
/// - A claim whose lock nobody holds belongs to a process that died (killed during the
///   derivation: Ctrl-C, a timeout): the next claim removes it, counting nothing.
/// - An attempt that finds every slot taken while failures are below the limit waits for
///   the others (polling, 2 to 50 ms apart) up to `attemptWaitMilliseconds`, then fails with
///   a storage-busy error; CKR_PIN_LOCKED comes only once confirmed failures reach the limit.
///
/// Waiting polls with a read transaction, which moves no change counter: other processes
/// keep what they cached while attempts wait.
extension Token {
    /// How long an attempt beyond the limit waits for those in flight: 60 s, many times one
    /// derivation (about 0.3 s at 600,000 iterations; ten at once on one core take 3 s).
    static let attemptWaitMilliseconds: Int64 = 60_000

    enum ClaimKey {
        static func name(_ user: UserType, _ slot: Int) -> String {
            (user == .user ? "user.claim." : "so.claim.") + String(slot)
        }

        /// The attempt lock of a slot: the user's from 0, the SO's from 16.
        static func lockSlot(_ user: UserType, _ slot: Int) -> Int { (user == .user ? 0 : 16) + slot }
    }

    /// Claims an attempt at `user`'s PIN, waiting while the slots are taken; throws
    /// `.pinLocked` once the confirmed failures reach the limit.
    func claimAttempt(_ user: UserType) throws(CoreError) -> PINAttempt {
        let start = Token.monotonicMilliseconds()
        var pause: UInt32 = 2_000
        while true {
            if let attempt = try withState({ (state) throws(CoreError) in try state.tryClaim(user) }) {
                return attempt
            }
            guard Token.monotonicMilliseconds() - start < Token.attemptWaitMilliseconds else {
                throw CoreError(
                    .storageBusy,
                    "\(Token.maximumFailures) PIN attempts were still being checked after "
                        + "\(Token.attemptWaitMilliseconds / 1000) s of waiting: try again")
            }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    /// Ends `attempt`: `right` true clears the failures, false counts one, nil (no verdict)
    /// counts nothing. The claim's lock is held until the change is committed.
    func finishAttempt(_ attempt: PINAttempt, _ user: UserType, right: Bool?) throws(CoreError) {
        guard let claim = attempt.claim else { return }
        try withState { (state) throws(CoreError) in
            let store = try state.store()
            try CoreError.mapping {
                try store.write {
                    let name = ClaimKey.name(user, claim.slot)
                    // A claim released early (its lock file was replaced) may have gone to
                    // another attempt since: only this attempt's own is removed.
                    if try store.metadata(name) == claim.id { try store.removeMetadata(name) }
                    guard let right else { return }
                    let failures =
                        right
                        ? 0
                        : min(Token.count(try store.metadata(Key.failures(user))) + 1, Token.maximumFailures)
                    try store.setMetadata(Key.failures(user), Token.encode(count: failures))
                }
            }
        }
        withExtendedLifetime(claim.lock) {}
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000 &+ Int64(now.tv_nsec / 1_000_000)
    }
}

extension TokenState {
    /// One try at claiming; nil when every slot is taken.
    fileprivate func tryClaim(_ user: UserType) throws(CoreError) -> PINAttempt? {
        let store = try store()
        return try CoreError.mapping {
            // A store this process cannot write keeps no count (its PINs cannot change
            // either, and its file can be copied and attacked offline anyway).
            guard !store.isReadOnly else {
                return try store.read {
                    let stored = try storedPIN(user, in: store)
                    return PINAttempt(record: stored.record, epoch: stored.epoch, claim: nil)
                }
            }
            let mayClaim = try store.read {
                let stored = try storedPIN(user, in: store)
                return stored.failures + (try liveClaims(user, in: store, releasing: false).live)
                    < Token.maximumFailures
            }
            guard mayClaim else { return nil }
            return try store.write { () throws -> PINAttempt? in
                let stored = try storedPIN(user, in: store)
                let claims = try liveClaims(user, in: store, releasing: true)
                guard stored.failures + claims.live < Token.maximumFailures else { return nil }
                for slot in claims.free {
                    // A slot whose claim was just removed may still be locked for a moment.
                    guard let held = try store.holdAttemptLock(Token.ClaimKey.lockSlot(user, slot)) else {
                        continue
                    }
                    let id = try SecureRandom.bytes(16)
                    try store.setMetadata(Token.ClaimKey.name(user, slot), id)
                    return PINAttempt(
                        record: stored.record, epoch: stored.epoch,
                        claim: PINAttempt.Claim(slot: slot, id: id, lock: held))
                }
                return nil
            }
        }
    }

    /// `user`'s PIN record, the token's epoch and the confirmed failures; throws when no such
    /// PIN is set, it is locked, or its record is malformed. Inside a transaction.
    fileprivate func storedPIN(_ user: UserType, in store: ObjectStore) throws -> (
        record: PINRecord, epoch: [UInt8]?, failures: Int
    ) {
        guard try store.metadata(Token.Key.securityOfficerPIN) != nil || user == .user else {
            throw CoreError(.pinIncorrect, "no SO PIN is set yet: C_InitToken sets it")
        }
        guard try store.metadata(Token.Key.userPIN) != nil || user == .securityOfficer else {
            throw CoreError(.userPINNotInitialized, "no user PIN is set yet: the SO sets it with C_InitPIN")
        }
        let failures = Token.count(try store.metadata(Token.Key.failures(user)))
        guard failures < Token.maximumFailures else {
            throw CoreError(
                .pinLocked,
                "PIN locked after \(Token.maximumFailures) failed attempts"
                    + (user == .user ? ": the SO must set a new one" : ""))
        }
        guard let bytes = try store.metadata(Token.Key.pin(user)), let record = PINRecord(bytes) else {
            throw CoreError(.storageCorrupt, "the stored PIN record is malformed")
        }
        return (record, try store.metadata(Token.Key.epoch), failures)
    }

    /// How many of `user`'s claims are live, and the slots free to claim. With `releasing`
    /// (in a write transaction), the claims of processes that died are removed.
    fileprivate func liveClaims(_ user: UserType, in store: ObjectStore, releasing: Bool) throws -> (
        live: Int, free: [Int]
    ) {
        var live = 0
        var free: [Int] = []
        for slot in 0..<Token.maximumFailures {
            let name = Token.ClaimKey.name(user, slot)
            if try store.metadata(name) != nil {
                if try store.isAttemptLockHeld(Token.ClaimKey.lockSlot(user, slot)) {
                    live += 1
                    continue
                }
                if releasing { try store.removeMetadata(name) }
            }
            free.append(slot)
        }
        return (live, free)
    }
}
