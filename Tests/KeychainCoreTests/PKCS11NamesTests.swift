import Foundation
import KeychainCore
import Testing

/// The headers the module is built with: every constant they define must print by its name.
private let headers = [
    "/usr/include/p11-kit-1/p11-kit/pkcs11.h",
    "/usr/include/p11-kit-1/p11-kit/pkcs11x.h",
    URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../p11/include/p11keychain.h").standardized.path,
]

/// One `#define CK?_NAME value` of a header, its value evaluated.
private struct Definition {
    var name: String
    var value: UInt64
}

/// The `#define`s of the headers whose values are numbers, or numbers and earlier names joined
/// by `|`, `+` or `<<` (`(CKF_ARRAY_ATTRIBUTE | 0x211UL)`, `((unsigned long) (1UL << 31))`).
private func definitions() throws -> [Definition] {
    var symbols: [String: UInt64] = [:]
    var found: [Definition] = []
    for header in headers {
        let text = try String(contentsOfFile: header, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let words = line.replacingOccurrences(of: "\t", with: " ").split(separator: " ")
            guard words.count >= 3, words[0] == "#define" else { continue }
            let name = String(words[1])
            var expression = words[2...].joined(separator: " ")
            if let comment = expression.range(of: "/*") {
                expression = String(expression[..<comment.lowerBound])
            }
            guard let value = evaluate(expression, symbols) else { continue }
            symbols[name] = value
            found.append(Definition(name: name, value: value))
        }
    }
    return found
}

/// A header's constant expression, or nil for anything else (a function-like macro, a string).
private func evaluate(_ expression: String, _ symbols: [String: UInt64]) -> UInt64? {
    let text = expression.replacingOccurrences(of: "(unsigned long)", with: " ")
        .replacingOccurrences(of: "(", with: " ").replacingOccurrences(of: ")", with: " ")
        .replacingOccurrences(of: "|", with: " | ").replacingOccurrences(of: "+", with: " + ")
        .replacingOccurrences(of: "<<", with: " << ")
    var result: UInt64?
    var pending: String?
    for token in text.split(separator: " ", omittingEmptySubsequences: true).map(String.init) {
        if ["|", "+", "<<"].contains(token) {
            guard result != nil, pending == nil else { return nil }
            pending = token
            continue
        }
        var digits = token
        while let last = digits.last, last == "U" || last == "L" || last == "u" || last == "l" {
            digits.removeLast()
        }
        let operand: UInt64?
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            operand = UInt64(digits.dropFirst(2), radix: 16)
        } else if let first = digits.first, first.isNumber {
            operand = UInt64(digits)
        } else {
            operand = symbols[token]
        }
        guard let operand else { return nil }
        switch (result, pending) {
        case (nil, nil): result = operand
        case (let left?, "|"?): result = left | operand
        case (let left?, "+"?): result = left &+ operand
        case (let left?, "<<"?): result = operand < 64 ? left << operand : nil
        default: return nil
        }
        pending = nil
        if result == nil { return nil }
    }
    return pending == nil ? result : nil
}

/// What `pkcs11x.h` calls CKA_TRUST_* / CKA_CERT_*_HASH in NSS's vendor range, the table calls
/// CKA_NSS_TRUST_* / CKA_NSS_CERT_*_HASH (NSS's own current names): PKCS#11 3.2 gave the names
/// CKA_TRUST_* to its own trust attributes (0x62C...), and the table follows the specification.
private func acceptedNames(_ definition: Definition) -> [String] {
    let nssRange = definition.value >= 0xCE00_0000 && definition.value < 0xCF00_0000
    if nssRange, definition.name.hasPrefix("CKA_TRUST_") || definition.name.hasPrefix("CKA_CERT_") {
        return ["CKA_NSS_" + definition.name.dropFirst(4)]
    }
    return [definition.name]
}

@Suite("Names of PKCS#11 constants (for the trace)")
struct PKCS11NamesTests {
    static let spaces: [(prefix: String, name: @Sendable (UInt64) -> String, table: [(UInt64, String)])] = [
        ("CKR_", PKCS11Names.returnCode, PKCS11Names.returnCodeNames),
        ("CKO_", PKCS11Names.objectClass, PKCS11Names.objectClassNames),
        ("CKK_", PKCS11Names.keyType, PKCS11Names.keyTypeNames),
        ("CKA_", PKCS11Names.attribute, PKCS11Names.attributeNames),
        ("CKM_", PKCS11Names.mechanism, PKCS11Names.mechanismNames),
    ]

    @Test("every constant of the module's PKCS#11 headers prints by its name, or by an alias of its value")
    func everyHeaderConstantHasItsName() throws {
        let all = try definitions()
        for space in Self.spaces {
            let defined = all.filter { $0.name.hasPrefix(space.prefix) }
            #expect(defined.count > 5, "no \(space.prefix)* found in \(headers)")
            for definition in defined {
                // A value several names share (CKK_ECDSA, CKK_EC) prints as any of them.
                let aliases = defined.filter { $0.value == definition.value }.flatMap(acceptedNames)
                let printed = space.name(definition.value)
                #expect(
                    aliases.contains(printed),
                    "\(definition.name) = 0x\(String(definition.value, radix: 16)) prints as \(printed)")
            }
        }
    }

    @Test("no name in the tables contradicts a header: a name a header defines has the header's value")
    func tableValuesMatchTheHeaders() throws {
        var values: [String: UInt64] = [:]
        for definition in try definitions() {
            for name in acceptedNames(definition) where values[name] == nil {
                values[name] = definition.value
            }
        }
        for space in Self.spaces {
            for (value, name) in space.table {
                #expect(name.hasPrefix(space.prefix), "\(name) in the \(space.prefix) table")
                if let defined = values[name] {
                    #expect(
                        defined == value,
                        "\(name): table 0x\(String(value, radix: 16)), header 0x\(String(defined, radix: 16))"
                    )
                }
            }
            #expect(
                Set(space.table.map(\.0)).count == space.table.count,
                "a value twice in the \(space.prefix) table")
        }
    }

    @Test(
        "the v3.0, v3.2 and vendor constants a host or the module uses print by name",
        arguments: [
            (PKCS11Names.returnCode(0x62), "CKR_KEY_SIZE_RANGE"),
            (PKCS11Names.returnCode(0x140), "CKR_CURVE_NOT_SUPPORTED"),
            (PKCS11Names.returnCode(0x202), "CKR_OPERATION_CANCEL_FAILED"),
            (PKCS11Names.objectClass(0xCE53_4353), "CKO_NSS_TRUST"),
            (PKCS11Names.objectClass(0x0B), "CKO_TRUST"),
            (PKCS11Names.attribute(0x82), "CKA_SERIAL_NUMBER"),
            (PKCS11Names.attribute(0xCE53_6358), "CKA_NSS_TRUST_SERVER_AUTH"),
            (PKCS11Names.attribute(0x62C), "CKA_TRUST_SERVER_AUTH"),
            (PKCS11Names.attribute(0x4), "CKA_UNIQUE_ID"),
            (PKCS11Names.keyType(0x41), "CKK_EC_MONTGOMERY"),
            (PKCS11Names.mechanism(0x1057), "CKM_EDDSA"),
            (PKCS11Names.mechanism(0x210B), "CKM_AES_KEY_WRAP_KWP"),
        ])
    func knownNames(printed: String, expected: String) {
        #expect(printed == expected)
    }

    @Test("a value no table knows prints in hexadecimal, vendor-defined ones relative to CK*_VENDOR_DEFINED")
    func unknownValuesInHex() {
        #expect(PKCS11Names.attribute(0x8050_4BFF) == "CKA_VENDOR_DEFINED|0x504bff")
        #expect(PKCS11Names.returnCode(0x7777) == "CKR_0x7777")
        #expect(PKCS11Names.objectClass(0x4242) == "CKO_0x4242")
        #expect(PKCS11Names.mechanism(0x1_0000_0000) == "CKM_0x100000000")
        #expect(AttributeType.serialNumber.description == "CKA_SERIAL_NUMBER")
    }
}
