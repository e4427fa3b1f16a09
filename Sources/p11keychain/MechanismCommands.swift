import Foundation
import KeychainCore

/// The mechanisms the token implements, from KeychainCore's registry: the list the PKCS#11
/// module reports (`pkcs11-tool -M`, `p11tool --list-mechanisms`), without loading it.
enum MechanismCommands {
    static let all = [listMechanisms]

    static let listMechanisms = Command(
        name: "list-mechanisms", synopsis: "[--json]",
        summary: "List the mechanisms the token implements: what each does, key types and sizes",
        options: [JSONOutput.option],
        notes: [
            """
            The list C_GetMechanismList reports, in its order. KEY SIZES are bits of an RSA
            modulus or an elliptic curve's field, bytes of a secret key, as
            C_GetMechanismInfo reports them; a token's rsa-minimum-bits raises the smallest
            RSA size. FUNCTIONS are the CKF_* flags: what the mechanism may do.
            """
        ],
        run: { invocation throws(Failure) in try list(invocation) })

    private static func list(_ invocation: Invocation) throws(Failure) {
        if invocation.json {
            try JSONOutput.print(
                MechanismRegistry.all.map { mechanism in
                    [
                        "class": "mechanism", "name": mechanism.name, "value": Int(clamping: mechanism.type),
                        "key_types": mechanism.keyTypes.map { PKCS11Names.keyType($0.rawValue) },
                        "key_sizes": JSONOutput.optional(
                            mechanism.keySizes.map { ["minimum": $0.lowerBound, "maximum": $0.upperBound] }),
                        "functions": mechanism.functions.names == "nothing"
                            ? [] : mechanism.functions.names.components(separatedBy: ", "),
                    ]
                }, command: "list-mechanisms")
            return
        }
        var rows = [["MECHANISM", "VALUE", "KEY TYPES", "KEY SIZES", "FUNCTIONS"]]
        for mechanism in MechanismRegistry.all {
            let keyTypes = mechanism.keyTypes.map { PKCS11Names.keyType($0.rawValue) }
            let sizes = mechanism.keySizes.map { "\($0.lowerBound)-\($0.upperBound)" } ?? "-"
            rows.append([
                mechanism.name, "0x" + String(mechanism.type, radix: 16, uppercase: false).leftPadded(to: 4),
                keyTypes.isEmpty ? "-" : keyTypes.joined(separator: ","), sizes,
                mechanism.functions.names,
            ])
        }
        Console.print(Format.table(rows))
    }
}

extension String {
    /// The string with zeros before it up to `width` characters: "350" → "0350".
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
