import CPKCS11
import Foundation
import Testing

/// Whether `flag` is set in the token's flags now.
private func flagIsSet(_ token: TestToken, _ flag: UInt) throws -> Bool {
    try token.tokenInfo().flags & CK_FLAGS(flag) != 0
}

extension ModuleTests.CoreRulesTests {
    /// An attempt is claimed before the slow check and ends as a failure only
    /// when its PIN is wrong; attempts beyond the limit wait for those in flight (ARCHITECTURE.md §6.4).
    /// Every process here logs in at the same moment (`race`).
    @Suite("Right PINs never lock, and parallel wrong guesses get exactly the limit")
    struct RightPINsNeverLock {
        @Test(
            "30 processes logging in with the right user PIN at once all get CKR_OK, and no failure is counted",
            arguments: [CK_USER_TYPE(CKU_USER), CK_USER_TYPE(CKU_SO)])
        func thirtyRightLogins(user: CK_USER_TYPE) throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let pin = user == CKU_SO ? coreSOPIN : coreUserPIN
                let outcomes = try race((0..<30).map { _ in try Guesser(token.m, pin: pin, user: user) })
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(count(.accepted, in: outcomes) == 30, "30 right PINs at once: \(tally(outcomes))")
                let low = user == CKU_SO ? CKF_SO_PIN_COUNT_LOW : CKF_USER_PIN_COUNT_LOW
                let locked = user == CKU_SO ? CKF_SO_PIN_LOCKED : CKF_USER_PIN_LOCKED
                #expect(try !flagIsSet(token, low), "a failure was counted for a right PIN")
                #expect(try !flagIsSet(token, locked))
            }
        }

        @Test(
            "20 processes guessing wrong at once get exactly 10 CKR_PIN_INCORRECT and 10 CKR_PIN_LOCKED; then the right PIN is refused as locked",
            arguments: [CK_USER_TYPE(CKU_USER), CK_USER_TYPE(CKU_SO)])
        func twentyWrongGuesses(user: CK_USER_TYPE) throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let outcomes = try race((0..<20).map { _ in try Guesser(token.m, pin: "99999", user: user) })
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(count(.incorrect, in: outcomes) == 10, "20 wrong guesses at once: \(tally(outcomes))")
                #expect(count(.locked, in: outcomes) == 10, "20 wrong guesses at once: \(tally(outcomes))")
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let right = try race([
                    try Guesser(token.m, pin: user == CKU_SO ? coreSOPIN : coreUserPIN, user: user)
                ])
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(count(.locked, in: right) == 1, "the right PIN after the lock: \(tally(right))")
                let locked = user == CKU_SO ? CKF_SO_PIN_LOCKED : CKF_USER_PIN_LOCKED
                #expect(try flagIsSet(token, locked))
            }
        }

        @Test(
            "9 wrong and 21 right user PINs from 30 processes at once: every right one gets CKR_OK and the PIN never locks"
        )
        func mixedGuessesNeverLock() throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let guessers = try (0..<30).map { index in
                    try Guesser(token.m, pin: index % 10 < 3 ? "99999" : coreUserPIN)
                }
                let outcomes = try race(guessers)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(
                    count(.accepted, in: outcomes) == 21, "9 wrong and 21 right at once: \(tally(outcomes))")
                #expect(
                    count(.incorrect, in: outcomes) == 9, "9 wrong and 21 right at once: \(tally(outcomes))")
                #expect(try !flagIsSet(token, CKF_USER_PIN_LOCKED))
                let session = try token.openSession()
                #expect(try token.login(session, pin: coreUserPIN) == CKR_OK)
            }
        }
    }
}
