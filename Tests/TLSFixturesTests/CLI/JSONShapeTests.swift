import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, item 10: one documented JSON shape per command (docs/cli.md, "JSON output"), held here key by key:
/// values in the CLI's own terms, no Swift names, one fingerprint format, a list where there can be several, errors as
/// JSON.
@Suite("JSON output: one shape per command", .ownThreads)
struct JSONShapeTests {
    /// docs/cli.md's certificate object.
    static let certificateKeys: Set<String> = ["subject", "issuer", "serial", "subjectAltNames", "signatureAlgorithm", "key", "notBefore",
                                               "notAfter", "validityDays", "status", "extendedKeyUsage", "keyUsage", "basicConstraints",
                                               "nameConstraints", "spkiSHA256", "sha256Fingerprint"]

    static func object(_ result: Subprocess.Result) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any], "not a JSON object: \(result.combined)")
    }

    /// A certificate object: exactly the documented keys, values as values, the fingerprint as `openssl` computes it.
    static func checkCertificate(_ value: Any?, pem: String? = nil) throws {
        let certificate = try #require(value as? [String: Any])
        #expect(Set(certificate.keys) == certificateKeys, "\(Set(certificate.keys).symmetricDifference(certificateKeys))")
        let fingerprint = try #require(certificate["sha256Fingerprint"] as? String)
        #expect(fingerprint.count == 64 && fingerprint.allSatisfy { "0123456789abcdef".contains($0) }, "\(fingerprint)")
        if let pem {
            let openssl = try TestEnvironment.openssl(["x509", "-in", pem, "-noout", "-fingerprint", "-sha256"]).stdout
            #expect(openssl.replacingOccurrences(of: ":", with: "").lowercased().contains(fingerprint), "\(openssl) vs \(fingerprint)")
        }
        #expect(certificate["keyUsage"] is NSNull || certificate["keyUsage"] is [String], "keyUsage is a list of names")
        if let constraints = certificate["nameConstraints"] as? [String: Any] {
            #expect(constraints["permitted"] is [String] && constraints["excluded"] is [String])
        } else {
            #expect(certificate["nameConstraints"] is NSNull)
        }
        #expect(certificate["basicConstraints"] is NSNull || (certificate["basicConstraints"] as? [String: Any])?["ca"] is Bool)
        #expect(["valid", "expired", "not-yet-valid"].contains(certificate["status"] as? String ?? ""))
    }

    @Test("ca init and ca show")
    func caReports() throws {
        let store = TestEnvironment.temporaryDirectory("json-ca").path
        for command in [["ca", "init"], ["ca", "show"]] {
            let result = try TestEnvironment.tlsFixtures(command + ["--dir", store, "--json"])
            let object = try Self.object(result)
            #expect(Set(object.keys) == ["created", "store", "certificate", "summary", "warnings"], "\(command): \(object.keys)")
            #expect(object["warnings"] is [String], "warnings is always a list")
            try Self.checkCertificate(object["summary"], pem: "\(store)/ca/root.pem")
            let constraints = try #require((object["summary"] as? [String: Any])?["nameConstraints"] as? [String: Any])
            #expect((constraints["permitted"] as? [String])?.contains("127.0.0.0/8") == true, "\(constraints)")
            #expect((object["summary"] as? [String: Any])?["keyUsage"] as? [String] == ["digitalSignature", "keyCertSign", "cRLSign"])
        }
    }

    @Test("cert issue, and cert show: always a list, one certificate or a chain")
    func certReports() throws {
        let store = TestEnvironment.temporaryDirectory("json-cert").path
        let out = TestEnvironment.temporaryDirectory("json-out").path
        let issued = try Self.object(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "j", "--host", "j.test",
                                                                      "--issuer", "intermediate", "--out-dir", out, "--json"]))
        #expect(Set(issued.keys) == ["name", "storedAt", "keysGenerated", "certificatesIssued", "summary", "files"], "\(issued.keys)")
        try Self.checkCertificate(issued["summary"], pem: "\(out)/j.pem")
        let files = try #require(issued["files"] as? [[String: Any]])
        #expect(files.count == 4 && files.allSatisfy { Set($0.keys) == ["path", "kind"] })
        for (file, count) in [("\(out)/j.cer", 1), ("\(out)/j.pem", 2)] {
            let shown = try TestEnvironment.tlsFixtures(["cert", "show", file, "--json"])
            let list = try #require(try JSONSerialization.jsonObject(with: shown.stdoutData) as? [Any], "not a list: \(shown.stdout)")
            #expect(list.count == count)
            for certificate in list { try Self.checkCertificate(certificate) }
        }
    }

    @Test("probe")
    func probeReport() async throws {
        let caFile = try TestEnvironment.file(try TestEnvironment.sharedStore.ca().certificate.pem, name: "ca.pem")
        try await withFixture("ats-compliant", store: TestEnvironment.sharedStore) { fixture in
            let object = try Self.object(try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(fixture.port)", "--ca", caFile, "--json"]))
            #expect(Set(object.keys) == ["result", "pins"] && object["pins"] is NSNull, "\(object.keys)")
            let result = try #require(object["result"] as? [String: Any])
            let chain = try #require(result["presentedChain"] as? [[String: Any]])
            let fingerprint = try #require(chain.first?["sha256Fingerprint"] as? String)
            #expect(fingerprint.count == 64 && fingerprint == fingerprint.lowercased(), "the probe's format is the certificate's")
            #expect((result["defaultClient"] as? [String: Any])?["outcome"] as? String == "completes")
        }
    }

    @Test("ca install and ca uninstall", .requires(Tools.certutil))
    func trustReports() throws {
        let store = TestEnvironment.temporaryDirectory("json-trust").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let home = TestEnvironment.temporaryDirectory("json-home").path
        for action in ["install", "uninstall"] {
            let object = try Self.object(try TestEnvironment.tlsFixtures(["ca", action, "--dir", store, "--nss", "--json"], environment: ["HOME": home]))
            #expect(Set(object.keys) == ["certificate", "sha256Fingerprint", "stores"], "\(object.keys)")
            let stores = try #require(object["stores"] as? [[String: Any]])
            #expect(stores.count == 1 && Set(stores[0].keys) == ["store", "location", "action"] && stores[0]["store"] as? String == "nss")
        }
    }

    @Test("errors, with --json, are JSON on standard output as well as the line on standard error", arguments: [
        ["cert", "show", "/nonexistent.pem", "--json"],
        ["ca", "show", "--dir", "/nonexistent-store", "--json"],
        ["cert", "issue", "--name", "x", "--key", "dsa", "--json"],
        ["probe", "localhost:1", "--json"],
    ])
    func errors(_ arguments: [String]) throws {
        let result = try TestEnvironment.tlsFixtures(arguments)
        #expect(result.status != 0 && result.stderr.hasPrefix("Error: "), "\(result.combined)")
        let object = try Self.object(result)
        let error = try #require(object["error"] as? [String: Any], "\(object)")
        #expect(Set(error.keys) == ["message", "code", "exitCode"], "\(error.keys)")
        #expect((error["exitCode"] as? Int).map(Int32.init) == result.status)
        #expect(result.stderr.contains(error["message"] as? String ?? "<none>"), "the JSON and the line say the same")
    }

    @Test("a verdict's exit status is not an error: probe --json prints one document")
    func verdictIsNotAnError() async throws {
        let caFile = try TestEnvironment.file(try TestEnvironment.sharedStore.ca().certificate.pem, name: "ca.pem")
        try await withFixture("expired", store: TestEnvironment.sharedStore) { fixture in
            let result = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(fixture.port)", "--ca", caFile, "--json"])
            #expect(result.status == 3)
            #expect(try Self.object(result)["error"] == nil, "a second JSON document, or an error, after the report")
        }
    }
}
