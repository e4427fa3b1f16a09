package import KeychainCore

extension Keychain {
    /// The token's configuration, connection string and all: for the command line to reopen
    /// its store below the Swift API, never for display (``path`` is that).
    package var configuration: TokenConfiguration { token.configuration }
}
