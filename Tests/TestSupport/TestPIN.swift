/// The PINs the tests set on a token, written once for every test target. Each face sets them
/// through its own API (`Keychain.initialize` and `setUserPIN`, C_InitToken and C_InitPIN,
/// pkcs11-tool): TestSupport links nothing of the project.
public enum TestPIN {
    public static let securityOfficer = "12345678"
    public static let user = "1234"

    /// The PBKDF2 count of the tests whose PIN checks must overlap: threads or processes that
    /// guess at once, each inside its derivation while the others are in theirs (about 65 ms a
    /// check on a slow 2-core machine, far longer than starting them takes). Every other test
    /// runs at the floor scripts/test.sh sets (`P11KEYCHAIN_PIN_ITERATIONS=1000`), where a
    /// check takes under a millisecond and guesses "at once" would mostly run one by one.
    public static let overlappingIterations = 100_000
    /// The module's default, for the tests that kill a process inside the derivation.
    public static let fullIterations = 600_000
}
