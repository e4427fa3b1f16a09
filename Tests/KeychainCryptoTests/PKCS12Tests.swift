import Foundation
import Testing

@testable import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// PKCS#12 files are host input: the iteration counts they name are bounded before anything
/// is derived, so no file keeps an import busy for minutes.
@Suite struct PKCS12Tests {
    /// A file made by `openssl pkcs12 -export` with 65,536 iterations (INTEGER 02 03 01 00 00)
    /// for its encryptions (certificates and key, both PBES2) and MAC.
    static func makeFile(in directory: TemporaryDirectory, mac: Bool) throws -> [UInt8] {
        try OpenSSL.run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                "key.pem", "-out", "cert.pem", "-subj", "/CN=iterations", "-days", "1",
            ], in: directory)
        try OpenSSL.run(
            [
                "pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-out", "file.p12", "-passout",
                "pass:pw",
            ]
                // This order: openssl 3.0 reads -nomac after -certpbe as "certificates in clear",
                // and -iter after -nomac as "MAC again".
                + ["-iter", "65536"] + (mac ? [] : ["-nomac"]) + [
                    "-certpbe", "AES-256-CBC", "-keypbe", "AES-256-CBC",
                ],
            in: directory)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("file.p12"))))
    }

    /// Offsets of the 65,536-iteration INTEGERs in `file`.
    static func iterationOffsets(_ file: [UInt8]) -> [Int] {
        let pattern: [UInt8] = [0x02, 0x03, 0x01, 0x00, 0x00]
        return (0...(file.count - pattern.count)).filter { Array(file[$0..<($0 + pattern.count)]) == pattern }
    }

    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    @Test("a file that opens with its password gives its key and certificate")
    func fileOpens() throws {
        try withTemporaryDirectory { directory in
            let contents = try PKCS12Contents(der: Self.makeFile(in: directory, mac: true), password: "pw")
            #expect(contents.privateKey != nil)
            #expect(contents.certificate != nil)
            let wrong = #expect(throws: CryptoError.self) {
                try PKCS12Contents(der: Self.makeFile(in: directory, mac: true), password: "not it")
            }
            #expect(wrong?.code == .wrongPassword)
        }
    }

    @Test("encryptions asking for 8 million iterations are refused at once")
    func encryptionIterationsAreBounded() throws {
        try withTemporaryDirectory { directory in
            var file = try Self.makeFile(in: directory, mac: false)
            let offsets = Self.iterationOffsets(file)
            #expect(offsets.count == 2, "the key's and the certificates' PBKDF2 parameters")
            // 02 03 7F FF FF: 8,388,607 iterations, the same encoded length.
            for offset in offsets {
                file.replaceSubrange((offset + 2)..<(offset + 5), with: [0x7f, 0xff, 0xff])
            }
            let started = Self.seconds()
            let error = #expect(throws: CryptoError.self) { try PKCS12Contents(der: file, password: "pw") }
            #expect(error?.code == .unsupported)
            #expect(Self.seconds() - started < 1)
        }
    }

    @Test("a MAC asking for 8 million iterations is refused at once")
    func macIterationsAreBounded() throws {
        try withTemporaryDirectory { directory in
            var file = try Self.makeFile(in: directory, mac: true)
            let offsets = Self.iterationOffsets(file)
            #expect(offsets.count == 3)
            // MacData comes last in the PFX.
            let offset = try #require(offsets.last)
            file.replaceSubrange((offset + 2)..<(offset + 5), with: [0x7f, 0xff, 0xff])
            let started = Self.seconds()
            let error = #expect(throws: CryptoError.self) { try PKCS12Contents(der: file, password: "pw") }
            #expect(error?.code == .unsupported)
            #expect(Self.seconds() - started < 1)
        }
    }
}
