/// The PINs the tests set on a token, written once for every test target. Each face sets them
/// through its own API (`Keychain.initialize` and `setUserPIN`, C_InitToken and C_InitPIN,
/// pkcs11-tool): TestSupport links nothing of the project.
public enum TestPIN {
    public static let securityOfficer = "12345678"
    public static let user = "1234"
}
