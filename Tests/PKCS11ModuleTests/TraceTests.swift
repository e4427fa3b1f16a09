import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let pkcs11Tool = "/usr/bin/pkcs11-tool"

extension ModuleTests {
    @Suite("The P11KEYCHAIN_DEBUG trace (diagnostics)")
    struct Tracing {
        // Needs pkcs11-tool (opensc, installed by scripts/setup.sh): without it the test fails.
        // The sanitizer steps of scripts/test.sh leave this one test out: pkcs11-tool, which
        // has no sanitizer runtime, cannot load a module built with a sanitizer.
        @Test("pkcs11-tool -L with P11KEYCHAIN_DEBUG=1 shows each call and its result on stderr")
        func traceOfAnotherProcess() throws {
            try withStore { token throws in
                let environment = [
                    "P11KEYCHAIN_DEBUG": "1", "P11KEYCHAIN_DIR": token.directory,
                    "P11KEYCHAIN_CONF": "/dev/null",
                ]
                let listing = try runCommand(
                    pkcs11Tool, ["--module", token.module.path, "-L"], environment: environment)
                #expect(listing.status == 0, "pkcs11-tool -L: \(listing.standardError)")
                #expect(listing.standardError.contains("C_GetSlotList -> CKR_OK"))
                #expect(listing.standardError.contains("C_GetTokenInfo -> CKR_OK"))
                #expect(listing.standardOutput.contains("login"))

                // A created object's label never reaches the trace, on success or failure.
                let label = "trace-secret-\(UInt32.random(in: 0...UInt32.max))"
                let certificate = token.directory + "/alice.der"
                try Data(try Fixtures.alice.get().der).write(to: URL(fileURLWithPath: certificate))
                let write = [
                    "--module", token.module.path, "--write-object", certificate, "--type", "cert", "--label",
                    label,
                ]
                let first = try runCommand(pkcs11Tool, write, environment: environment)
                #expect(first.status == 0, "pkcs11-tool --write-object: \(first.standardError)")
                #expect(first.standardError.contains("C_CreateObject -> CKR_OK"))
                let second = try runCommand(pkcs11Tool, write, environment: environment)
                #expect(second.status != 0)
                #expect(second.standardError.contains("C_CreateObject -> CKR_ATTRIBUTE_VALUE_INVALID"))
                for output in [first.standardError, second.standardError] {
                    #expect(!output.contains(label))
                    #expect(!output.contains("Alice"))
                }
            }
        }

        @Test("The trace names each call and its result and never an attribute value")
        func traceInProcess() throws {
            try withStore { token throws in
                let label = "in-process-secret-\(UInt32.random(in: 0...UInt32.max))"
                let renamed = "renamed-secret-\(UInt32.random(in: 0...UInt32.max))"
                setenv("P11KEYCHAIN_DEBUG", "1", 1)
                let (_, trace) = try capturingStandardError {
                    #expect(try token.m.C_Initialize(nil) == CKR_OK)
                    let session = try token.openSession()
                    let object = try token.createCertificate(
                        try Fixtures.alice.get(), extra: [Attribute(CKA_LABEL, string: label)], in: session)
                    let (duplicate, _) = try token.create(
                        TestToken.certificateTemplate(try Fixtures.alice.get().der) + [
                            Attribute(CKA_LABEL, string: label)
                        ],
                        in: session)
                    #expect(duplicate == CKR_ATTRIBUTE_VALUE_INVALID)
                    let setValue = try token.m.C_SetAttributeValue
                    _ = withTemplate([Attribute(CKA_LABEL, string: renamed)]) {
                        setValue(session, object, $0, $1)
                    }
                    #expect(try token.find([Attribute(CKA_LABEL, string: renamed)], in: session) == [object])
                    #expect(try token.string(CKA_LABEL, of: object, in: session) == renamed)
                    var pin = Array("0000-secret-pin".utf8)
                    _ = try token.m.C_Login(session, CK_USER_TYPE(CKU_USER), &pin, CK_ULONG(pin.count))
                    #expect(try token.m.C_Finalize(nil) == CKR_OK)
                }
                unsetenv("P11KEYCHAIN_DEBUG")
                for line in [
                    "C_Initialize -> CKR_OK", "C_OpenSession -> CKR_OK", "C_CreateObject -> CKR_OK",
                    "C_CreateObject -> CKR_ATTRIBUTE_VALUE_INVALID", "C_SetAttributeValue -> CKR_OK",
                    "C_FindObjectsInit -> CKR_OK", "C_GetAttributeValue -> CKR_OK",
                    "C_Login -> CKR_USER_PIN_NOT_INITIALIZED", "C_Finalize -> CKR_OK",
                ] {
                    #expect(trace.contains(line), "missing \(line) in trace:\n\(trace)")
                }
                for secret in [label, renamed, "Alice", "0000-secret-pin"] {
                    #expect(!trace.contains(secret), "\(secret) appears in the trace")
                }
            }
        }

        @Test("The trace names return codes, object classes, attributes and mechanisms")
        func traceNamesConstants() throws {
            try withStore { token throws in
                setenv("P11KEYCHAIN_DEBUG", "1", 1)
                let (_, trace) = try capturingStandardError {
                    #expect(try token.m.C_Initialize(nil) == CKR_OK)
                    let session = try token.loggedInSession()
                    #expect(try token.generateRSA(bits: 1023, in: session).0 == CKR_KEY_SIZE_RANGE)
                    // A class the token stores no object of.
                    let (classRV, _) = try token.create(
                        [Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_MECHANISM))], in: session)
                    #expect(classRV == CKR_ATTRIBUTE_VALUE_INVALID)
                    // A serial number (DER INTEGER 127) that is not the certificate's.
                    let (serialRV, _) = try token.create(
                        TestToken.certificateTemplate(try Fixtures.alice.get().der) + [
                            Attribute(CKA_SERIAL_NUMBER, [0x02, 0x01, 0x7F])
                        ],
                        in: session)
                    #expect(serialRV == CKR_ATTRIBUTE_VALUE_INVALID)
                    var mechanism = CK_MECHANISM(
                        mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
                    #expect(try token.m.C_DigestInit(session, &mechanism) == CKR_MECHANISM_INVALID)
                    #expect(try token.m.C_Finalize(nil) == CKR_OK)
                }
                unsetenv("P11KEYCHAIN_DEBUG")
                for text in [
                    "C_GenerateKeyPair -> CKR_KEY_SIZE_RANGE",
                    "C_CreateObject -> CKR_ATTRIBUTE_VALUE_INVALID (objects of class CKO_MECHANISM ",
                    "(attribute CKA_SERIAL_NUMBER contradicts the certificate DER)",
                    "C_DigestInit -> CKR_MECHANISM_INVALID (mechanism CKM_RSA_PKCS cannot digest)",
                ] {
                    #expect(trace.contains(text), "missing \(text) in trace:\n\(trace)")
                }
                for number in ["CKR_0x", "class 7 ", "attribute 0x", "mechanism 0x"] {
                    #expect(!trace.contains(number), "\(number) in trace:\n\(trace)")
                }
            }
        }

        @Test("Without P11KEYCHAIN_DEBUG the module writes nothing to stderr")
        func quietByDefault() throws {
            try withStore { token throws in
                let (_, output) = try capturingStandardError {
                    #expect(try token.m.C_Initialize(nil) == CKR_OK)
                    let session = try token.openSession()
                    _ = try token.create([Attribute(CKA_CLASS, ulong: 0x4242)], in: session)
                    #expect(try token.m.C_Finalize(nil) == CKR_OK)
                }
                #expect(!output.contains("p11keychain["), "stderr: \(output)")
            }
        }
    }
}
