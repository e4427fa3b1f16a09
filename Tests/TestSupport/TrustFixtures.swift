import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The certificates of `Tests/Fixtures/trust` (see its README) and `openssl verify` on them:
/// the reference every trust test compares its verdict with.
public enum TrustFixtures {
    /// The fixture directory.
    public static var directory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent("trust").path
    }

    /// The path of `name` ("leaf" → …/leaf.pem; a name with an extension is used as is).
    public static func path(_ name: String) -> String {
        directory + "/" + (name.contains(".") ? name : name + ".pem")
    }

    /// Every certificate of a PEM fixture, as DER, in file order.
    public static func certificates(_ name: String) throws -> [[UInt8]] {
        let text = try String(contentsOfFile: path(name), encoding: .utf8)
        var result: [[UInt8]] = []
        var body = ""
        var inside = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("-----BEGIN CERTIFICATE-----") {
                inside = true
                body = ""
            } else if line.hasPrefix("-----END CERTIFICATE-----") {
                inside = false
                guard let data = Data(base64Encoded: body) else { throw TestFailure("bad PEM in \(name)") }
                result.append([UInt8](data))
            } else if inside {
                body += line.trimmingCharacters(in: .whitespaces)
            }
        }
        guard !result.isEmpty else { throw TestFailure("no certificate in \(name)") }
        return result
    }

    /// The one certificate of a fixture, as DER.
    public static func certificate(_ name: String) throws -> [UInt8] {
        guard let first = try certificates(name).first else { throw TestFailure("no certificate in \(name)") }
        return first
    }

    /// What `openssl verify` says of `leaf` with `untrusted` helpers and `anchors` as CA file:
    /// nil when it accepts, else the X509_V_ERR code of the first error it prints.
    /// `options` are passed through (`-purpose sslserver`, `-verify_hostname h`, `-attime t`).
    public static func opensslVerify(
        _ leaf: String, untrusted: [String] = [], anchors: [String], options: [String] = []
    ) throws -> Int32? {
        try withTemporaryDirectory { directory in
            let caFile = directory.file("anchors.pem")
            var bundle = ""
            for anchor in anchors { bundle += try String(contentsOfFile: path(anchor), encoding: .utf8) }
            try bundle.write(toFile: caFile, atomically: true, encoding: .utf8)
            var arguments = ["verify", "-CAfile", caFile, "-partial_chain"] + options
            if !untrusted.isEmpty {
                let untrustedFile = directory.file("untrusted.pem")
                var helpers = ""
                for helper in untrusted {
                    helpers += try String(contentsOfFile: path(helper), encoding: .utf8)
                }
                try helpers.write(toFile: untrustedFile, atomically: true, encoding: .utf8)
                arguments += ["-untrusted", untrustedFile]
            }
            arguments.append(path(leaf))
            let (status, output) = try runTool("openssl", arguments, in: directory)
            if status == 0 { return nil }
            // "error 10 at 0 depth lookup: certificate has expired"
            for line in output.split(separator: "\n") where line.hasPrefix("error ") {
                let words = line.split(separator: " ")
                if words.count > 2, let code = Int32(words[1]) { return code }
            }
            throw TestFailure("openssl verify failed without an error line: \(output)")
        }
    }

    /// Runs `tool arguments…` from the PATH and returns its exit status and its standard output
    /// and error together. A missing tool fails the test.
    public static func runTool(
        _ tool: String, _ arguments: [String], in directory: TemporaryDirectory
    ) throws -> (Int32, String) {
        let result = try runProgram(tool, arguments, directory: directory.path, mergingErrors: true)
        return (result.status, result.output)
    }
}
