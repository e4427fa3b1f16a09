// The PAM module product's wrapper target (ARCHITECTURE.md §11.1): it holds no code, only the
// linker flags of pam_p11keychain.so (static Swift runtime, pam_sm_* exports only, -Bsymbolic),
// which must never reach other binaries, as P11KeychainModule does for the PKCS#11 module.
@_exported import PAMKeychain
