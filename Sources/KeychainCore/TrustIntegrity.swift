internal import KeychainCrypto
internal import KeychainStorage

// Trust settings bound to the token key (ARCHITECTURE.md §6.1 "who the attacker is", §6.6:
// a writer of the store file).
//
// Trust decides what every program of the login accepts, so on a token with a user PIN only
// a login may change it (`AccessContext.checkTrustWrite`). The store file itself is no such
// guard: whoever can write it could add an anchor row, or hide the user-PIN record, add an
// anchor "with no PIN" and put the record back. So every setting written under a login carries
// a seal, an HMAC-SHA256 under a key only the token key gives, over the certificate's DER and
// the settings; and a setting that grants trust (an anchor, a trusted peer) counts only when
// its seal verifies:
//
// - a process holding the token key (logged in, or unlocked by the session keyring through
//   the Swift faces) verifies every grant, whatever the store says about PINs;
// - a process without it (locked) cannot tell a sealed grant from a forged one: on a token
//   with a user PIN it treats every grant as unspecified, so a locked process trusts the
//   system's anchors only, never the keychain's;
// - a token with no user PIN has nothing a PIN protects, and its file's permissions are the
//   guard (KeychainStorage refuses a store others may write): its settings count as stored.
//
// Distrust never needs a seal: a forged distrust can only make an evaluation stricter, and an
// evaluation that cannot verify a setting never turns distrust into trust.

extension AttributeType {
    /// p11keychain's own: on a certificate with trust settings written under a login, the
    /// HMAC-SHA256 that binds them to the token key (`Token.trustSeal`). Stored, never shown.
    static let trustSeal = AttributeType(0x8050_4B42)
}

extension TrustSettings {
    /// True when some purpose is granted trust (an anchor or a trusted peer): what needs a seal.
    var grantsTrust: Bool {
        dispositions.values.contains { $0 == .trustedAnchor || $0 == .trustedPeer }
    }

    /// These settings with every grant of trust made unspecified; distrust stays.
    var withoutGrants: TrustSettings {
        TrustSettings(dispositions.filter { $0.value == .distrusted })
    }
}

extension Token {
    private static let trustSealLabel = Array("p11keychain trust settings seal v1\u{0}".utf8)

    /// The seal of `settings` on the certificate `der` under `tokenKey`: HMAC-SHA256 under a
    /// key derived from the token key (so the token key itself never keys two uses), over the
    /// settings' encoding and the certificate's DER.
    static func trustSeal(of settings: TrustSettings, der: [UInt8], tokenKey: SecretBytes) throws(CoreError)
        -> [UInt8]
    {
        try CoreError.mapping {
            let derive = try MessageAuthentication(.hmac(.sha256), key: tokenKey)
            try trustSealLabel.withUnsafeBytes { try derive.update($0) }
            let sealKey = SecretBytes(try derive.finish())
            let mac = try MessageAuthentication(.hmac(.sha256), key: sealKey)
            let encoded = settings.encoded
            let length = withUnsafeBytes(of: UInt64(encoded.count).littleEndian) { Array($0) }
            for part in [length, encoded, der] { try part.withUnsafeBytes { try mac.update($0) } }
            return try mac.finish()
        }
    }

    /// What `TrustSettings.unspecified` stores: the effective settings of a certificate with
    /// none (`effectiveTrustSettings` gives `.unspecified` for it, with nothing to verify).
    static let unspecifiedTrustAttributes = TrustSettings.unspecified.storedAttributes

}

extension TokenState {
    /// The stored attributes that carry `settings` on the certificate `der`, with their seal
    /// when this process holds the token key (else an empty seal: the settings are unsealed).
    func sealedTrustAttributes(_ settings: TrustSettings, der: [UInt8]) throws(CoreError) -> AttributeSet {
        var attributes = settings.storedAttributes
        if let tokenKey = trustSealingKey() {
            attributes[.trustSeal] = try Token.trustSeal(of: settings, der: der, tokenKey: tokenKey)
        } else {
            attributes[.trustSeal] = []
        }
        return attributes
    }

    /// The token key that seals and verifies trust settings, when this process holds one
    /// that the store still honours (`checkLogin`).
    fileprivate func trustSealingKey() -> SecretBytes? {
        checkLogin()
        return authentication.login?.tokenKey
    }

    /// The settings of a stored certificate that an evaluation may act on (see the top of
    /// this file): the stored ones, less every grant of trust whose seal this process cannot
    /// verify on a token with a user PIN.
    func effectiveTrustSettings(of stored: AttributeSet) throws(CoreError) -> TrustSettings {
        let settings = try TrustSettings.stored(in: stored)
        guard settings.grantsTrust else { return settings }
        if let tokenKey = trustSealingKey() {
            guard let der = stored[.value], let seal = stored[.trustSeal],
                MessageAuthentication.isEqual(
                    try Token.trustSeal(of: settings, der: der, tokenKey: tokenKey), seal)
            else { return settings.withoutGrants }
            return settings
        }
        let hasUserPIN = try CoreError.mapping { try store().metadata(Token.Key.userPIN) != nil }
        return hasUserPIN ? settings.withoutGrants : settings
    }

    /// `attributes` (a certificate as a caller reads it) with CKA_TRUSTED and
    /// CKA_X_DISTRUSTED as its effective settings say, not as stored.
    func withEffectiveTrust(_ attributes: AttributeSet, stored: AttributeSet) throws(CoreError)
        -> AttributeSet
    {
        guard stored.ulong(.class) == ObjectClass.certificate.rawValue else { return attributes }
        // Most certificates have no settings: theirs are the unspecified ones, computed once.
        let effective =
            stored[.trustSettings] == nil
            ? Token.unspecifiedTrustAttributes : try effectiveTrustSettings(of: stored).storedAttributes
        var result = attributes
        // Set only where it differs: most reads change nothing, and copy nothing.
        for type: AttributeType in [.trusted, .distrusted]
        where result[type] != nil && result[type] != effective[type] {
            result[type] = effective[type]
        }
        return result
    }
}
