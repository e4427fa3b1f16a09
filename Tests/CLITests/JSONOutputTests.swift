import Foundation
import Testing

// --json: every listing and status command prints one document of the schema docs/cli.md
// documents ({"command", "items"}, each item with its class's keys, all of them), which
// python3 -m json.tool parses; and status says locked with exit status 1.

/// The keys of each item class, as docs/cli.md "Machine-readable output" lists them.
private let schema: [String: [String]] = [
    "certificate": [
        "class", "label", "subject", "issuer", "serial", "not_before", "not_after", "emails", "key_algorithm",
        "key_bits", "id", "subject_key_id", "ca", "self_signed", "sha1", "sha256", "uri",
    ],
    "identity": ["class", "label", "subject", "sha1", "id", "key_type", "validity"],
    "private-key": ["class", "key_type", "bits", "id", "label", "extractable", "sensitive", "uri"],
    "public-key": ["class", "key_type", "bits", "id", "label", "extractable", "sensitive", "uri"],
    "secret-key": [
        "class", "key_type", "bits", "id", "label", "check_value", "usage", "extractable", "sensitive", "uri",
    ],
    "generic-password": ["class", "service", "account", "label"],
    "internet-password": [
        "class", "server", "account", "protocol", "port", "path", "authentication_type", "security_domain",
        "label",
    ],
    "token": ["class", "name", "access", "objects", "pins", "store", "created"],
    "token-info": [
        "class", "name", "label", "store", "access", "public_objects", "so_pin", "user_pin",
        "maximum_failed_attempts",
    ],
    "session": ["class", "token", "state", "expires"],
    "mechanism": ["class", "name", "value", "key_types", "key_sizes", "functions"],
    "trust-settings": ["class", "subject", "sha1", "settings"],
]

/// Checks a document on standard input against the schema (argv[1]) for the command
/// (argv[2]), and that it has at least argv[3] items; prints what is wrong.
private let checker = """
    import json, sys
    schema, command, least = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    document = json.load(sys.stdin)
    problems = []
    if sorted(document) != ["command", "items"]: problems.append("top-level keys %s" % sorted(document))
    if document.get("command") != command: problems.append("command %r" % document.get("command"))
    items = document.get("items", [])
    if len(items) < least: problems.append("%d items" % len(items))
    for item in items:
        keys = schema.get(item.get("class"))
        if keys is None: problems.append("unknown class %r" % item.get("class")); continue
        if sorted(item) != sorted(keys): problems.append("%s keys %s" % (item["class"], sorted(item)))
    print("; ".join(problems))
    sys.exit(1 if problems else 0)
    """

@Suite("--json output")
struct JSONOutputTests {
    /// A command line and how many items its document must hold at least.
    struct Listing: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var least = 1
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let listings: [Listing] = [
        Listing(arguments: ["find-certificate", "-a"], least: 3),
        Listing(arguments: ["dump-keychain"], least: 3),
        Listing(arguments: ["find-identity"]),
        Listing(arguments: ["find-key"], least: 3),
        Listing(arguments: ["find-generic-password", "-s", "svc"]),
        Listing(arguments: ["find-internet-password", "-s", "www.example.org"]),
        Listing(arguments: ["list-tokens"]),
        Listing(arguments: ["token-info"]),
        Listing(arguments: ["list-mechanisms"], least: 20),
        Listing(arguments: ["dump-trust-settings", "--store", "@trust"]),
    ]

    /// One keychain with an item of every class, and a second (no PIN) with a trust setting.
    private static func populated() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let trust = { (name: String) in
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/trust/\(name)").path
        }
        let setup: [[String]] = [
            ["add-certificates", Fixture.alice.path, Fixture.bob.path],
            ["import", "--passphrase", "trust", trust("leaf.p12")],
            ["generate-key", "--type", "aes:128", "-l", "secret"],
            ["add-generic-password", "-s", "svc", "-a", "me", "-w", "pw"],
            ["add-internet-password", "-s", "www.example.org", "-a", "me", "-r", "htps", "-w", "pw"],
            ["--store", sandbox.path + "/trust.sqlite3", "add-trusted-cert", trust("root.pem")],
        ]
        for arguments in setup {
            let outcome = try sandbox.run(Built.program, arguments)
            guard outcome.status == 0 else {
                throw TestFailure(description: "\(arguments): \(outcome.error)")
            }
        }
        return sandbox
    }

    @Test(
        "every listing's --json parses with python3 -m json.tool and matches the schema", arguments: listings)
    func listing(_ listing: Listing) throws {
        let sandbox = try Self.populated()
        let arguments =
            listing.arguments.map { $0 == "@trust" ? sandbox.path + "/trust.sqlite3" : $0 } + ["--json"]
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.status == 0, "\(outcome.error)")
        let tool = try sandbox.run("/usr/bin/python3", ["-m", "json.tool"], input: outcome.output)
        #expect(tool.status == 0, "json.tool: \(tool.error)")
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: schema), as: UTF8.self)
        let check = try sandbox.run(
            "/usr/bin/python3", ["-c", checker, encoded, listing.arguments[0], String(listing.least)],
            input: outcome.output)
        #expect(check.status == 0, "\(check.output)\(check.error)")
    }

    @Test("status exits 1 locked and 0 unlocked, in text and in JSON")
    func status() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let text = try sandbox.p11keychain("status")
        #expect(text.status == 1)
        #expect(text.output.hasPrefix("token \"login\": locked"))
        #expect(text.error.isEmpty)
        let json = try sandbox.p11keychain("status", "--json")
        #expect(json.status == 1)
        #expect(json.output.contains("\"state\" : \"locked\""), "\(json.output)")
        let outcome = try sandbox.inSession(
            """
            "$P11K" unlock --pin \(PIN.user) >/dev/null
            "$P11K" status --json; echo "exit $?"
            "$P11K" status; echo "exit $?"
            "$P11K" lock >/dev/null
            """)
        #expect(outcome.output.contains("\"state\" : \"unlocked\""), "\(outcome.output)")
        #expect(!outcome.output.contains("exit 1"), "\(outcome.output)")
        #expect(outcome.output.components(separatedBy: "exit 0").count == 3, "\(outcome.output)")
    }

    @Test("-w and --json, and -p and --json, are usage errors")
    func conflicts() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("find-generic-password", "-s", "x", "-w", "--json").failed(with: 2))
        #expect(try sandbox.p11keychain("find-certificate", "-p", "--json").failed(with: 2))
    }
}
