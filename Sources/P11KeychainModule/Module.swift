// The module product's wrapper target (ARCHITECTURE.md §11.1). It holds no code: its only job is to carry
// the linker flags of libp11keychain-pkcs11.so (static Swift runtime, C_* exports only,
// -Bsymbolic) so that they never reach the test binaries, which link PKCS11Token directly.
@_exported import PKCS11Token
