import Foundation
import Testing
@testable import TLSFixtures

/// Issue 36, items 3–6, 8, 9 and 13: one rule for reserved names, the store's authority keys never a leaf's, a refused
/// command writes nothing (every file of the store hashed before and after), read-only commands make nothing,
/// `--reuse-key-of` only for keys that exist and are the user's, conflicting options named, `--json` codes.
@Suite("A refused command writes nothing: reserved names, authority keys, validation first, conflicting options", .ownThreads)
struct RefusalsWriteNothingTests {
    static func newStore(_ label: String) throws -> String {
        let store = TestEnvironment.temporaryDirectory(label).appendingPathComponent("store").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        return store
    }

    /// Runs `arguments` and expects a one-line refusal mentioning `fragments` that left the store as it was.
    static func expectRefusedUnchanged(_ store: String, _ arguments: [String], _ fragments: [String],
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = try StoreSafetyTests.snapshot(URL(fileURLWithPath: store))
        let result = try TestEnvironment.tlsFixtures(arguments)
        CLIInputTests.expectOneLineError(result, mentioning: fragments)
        #expect(try StoreSafetyTests.snapshot(URL(fileURLWithPath: store)) == before, "the store changed: \(arguments)",
                sourceLocation: sourceLocation)
    }

    // MARK: Item 3

    /// A scenario file named `name` (the baseline TLS settings, no port) in a folder of its own.
    static func scenarioFolder(named name: String) throws -> String {
        let folder = TestEnvironment.temporaryDirectory("scenarios-\(name)")
        let json = """
            {"name": "\(name)", "group": "custom", "summary": "mine", "tls": {}, "certificate": {}, "expect": {"ats": "allow"}}
            """
        try Data(json.utf8).write(to: folder.appendingPathComponent("\(name).json"))
        return folder.path
    }

    @Test("one reserved-name rule: scenario files, cert issue (even with --force) and the issuer names")
    func reservedNames() throws {
        let store = try Self.newStore("reserved")
        #expect(try TestEnvironment.tlsFixtures(["pins", "--dir", store]).status == 0)
        // A scenario called ca would write its leaf over exports/ca.cer, one called client over certs/client.pem.
        for name in ["ca", "client", "root", "self"] {
            let folder = try Self.scenarioFolder(named: name)
            try Self.expectRefusedUnchanged(store, ["pins", name, "--scenarios", folder, "--dir", store], ["\"\(name)\"", "at name"])
            try Self.expectRefusedUnchanged(store, ["prepare", name, "--scenarios", folder, "--dir", store], ["\"\(name)\""])
        }
        // The built-in authorities' names and self are never a certificate's: --issuer could not tell them apart.
        for name in ["root", "interception-root", "self", "client-ca", "ca"] {
            for force in [[], ["--force"]] {
                try Self.expectRefusedUnchanged(store, ["cert", "issue", "--dir", store, "--name", name, "--ca"] + force,
                                                ["\"\(name)\" is reserved"])
            }
        }
        // The library holds the same rule, whatever calls it.
        var request = CertificateRequest(name: "root")
        request.isCA = true
        #expect(throws: PKIError(code: .reservedName, reason: "")) { try CertificateStore(directory: URL(fileURLWithPath: store)).issue(request) }
    }

    // MARK: Item 4

    @Test("the CA's key (or any store authority's) is refused as a leaf's key, and as a CSR's", .requires(Tools.openssl))
    func authorityKeysRefused() throws {
        let store = try Self.newStore("cakey")
        #expect(try TestEnvironment.tlsFixtures(["ca", "export", "--authority", "intermediate", "--out", store + "-i.pem", "--dir", store]).status == 0)
        for key in ["ca/root.key", "ca/intermediate.key"] {
            try Self.expectRefusedUnchanged(store, ["cert", "issue", "--dir", store, "--name", "leaf", "--host", "a.test",
                                                    "--use-key", "\(store)/\(key)"], ["that key is", store + "/" + key])
        }
        let csr = TestEnvironment.temporaryDirectory("cacsr").appendingPathComponent("ca.csr").path
        let made = try TestEnvironment.openssl(["req", "-new", "-key", store + "/ca/root.key", "-subj", "/CN=a.test",
                                                "-addext", "subjectAltName=DNS:a.test", "-out", csr])
        #expect(made.status == 0, "\(made.combined)")
        try Self.expectRefusedUnchanged(store, ["cert", "issue", "--dir", store, "--name", "leaf", "--csr", csr,
                                                "--cert-file", csr + ".pem"], ["that key is", "root.key"])
        #expect(!FileManager.default.fileExists(atPath: csr + ".pem"))
    }

    // MARK: Item 5

    @Test("a refused issue writes no key: validity ending before it starts, a start alone in the future, md5 from an EC CA",
          arguments: [
              (["--not-before", "2030-01-01", "--not-after", "2029-01-01"], ["notAfter", "before notBefore"]),
              (["--not-before", "-1", "--not-after", "-2"], ["notAfter", "before notBefore"]),
              (["--digest", "md5"], ["EC issuer cannot sign with md5"]),
              (["--cn", String(repeating: "c", count: 65)], ["65 characters", "at most 64"]),
          ])
    func refusedIssuesWriteNothing(_ extra: [String], _ fragments: [String]) throws {
        let store = try Self.newStore("refused")
        try Self.expectRefusedUnchanged(store, ["cert", "issue", "--dir", store, "--name", "x", "--host", "a.test"] + extra, fragments)
        // An empty store stays empty too: no CA is made for a certificate that is refused.
        let empty = TestEnvironment.temporaryDirectory("refused-empty").appendingPathComponent("store").path
        let result = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", empty, "--name", "x", "--host", "a.test"] + extra)
        CLIInputTests.expectOneLineError(result, mentioning: fragments)
        #expect(!FileManager.default.fileExists(atPath: empty + "/ca/root.key") && !FileManager.default.fileExists(atPath: empty + "/keys"))
    }

    // MARK: Item 6

    @Test("ca show --authority makes nothing: an authority not made yet is said, and the store is unchanged")
    func showMakesNothing() throws {
        let store = try Self.newStore("show")
        for authority in ["intermediate", "client-ca", "interception-root", "sha1-intermediate"] {
            try Self.expectRefusedUnchanged(store, ["ca", "show", "--authority", authority, "--dir", store], ["not made yet", authority])
        }
        #expect(try TestEnvironment.tlsFixtures(["prepare", "client-cert-required", "--dir", store]).status == 0)
        let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--authority", "client-ca", "--dir", store])
        #expect(shown.status == 0 && shown.stdout.contains("client-ca: \(store)/ca/client-ca.pem"), "\(shown.combined)")
    }

    // MARK: Item 8

    @Test("--reuse-key-of: a scenario's key only with --force, and a key the store does not have is refused")
    func reuseKeyRules() throws {
        let store = try Self.newStore("reuse")
        #expect(try TestEnvironment.tlsFixtures(["prepare", "expired", "--dir", store]).status == 0)
        let issue = ["cert", "issue", "--dir", store, "--name", "mine", "--host", "a.test"]
        let other = ["cert", "issue", "--dir", store, "--name", "other", "--host", "b.test"]
        try Self.expectRefusedUnchanged(store, issue + ["--reuse-key-of", "expired"], ["--reuse-key-of expired", "expired scenario", "--force"])
        try Self.expectRefusedUnchanged(store, issue + ["--reuse-key-of", "nonexist"], ["no ec:p256 key named \"nonexist\""])
        #expect(try TestEnvironment.tlsFixtures(other).status == 0)
        try Self.expectRefusedUnchanged(store, issue + ["--reuse-key-of", "other", "--key", "rsa:2048"],
                                        ["no rsa:2048 key named \"other\"", "other.ec-p256.key"])
        // With --force a scenario's key is reused, pin and all; its type is the stored key's when --key is left out.
        let forced = try TestEnvironment.tlsFixtures(issue + ["--reuse-key-of", "expired", "--force", "--json"])
        #expect(forced.status == 0, "\(forced.combined)")
        let pins = try ["mine", "expired"].map { try TestEnvironment.tlsFixtures(["cert", "show", "--json", "\(store)/certs/\($0).pem"]).stdout }
        let pin = { (text: String) in text.components(separatedBy: "\"spkiSHA256\"").dropFirst().first?.prefix(60) }
        #expect(pin(pins[0]) != nil && pin(pins[0]) == pin(pins[1]), "\(pins)")
    }

    // MARK: Item 9

    @Test("options that would be silently ignored together are refused, naming both", arguments: [
        (["--csr", "CSR", "--key", "rsa:2048"], ["--key and --csr"]),
        (["--csr", "CSR", "--host", "b.test"], ["--csr and --host"]),
        (["--use-key", "KEY", "--key", "rsa:2048", "--host", "a.test"], ["--key and --use-key"]),
        (["--issuer", "root", "--issuer-cert", "CERT", "--issuer-key", "CAKEY", "--host", "a.test"], ["--issuer and --issuer-cert"]),
        (["--issuer", "intermediate", "--self-signed", "--host", "a.test"], ["--issuer and --self-signed"]),
    ])
    func conflictingOptions(_ extra: [String], _ fragments: [String]) throws {
        let store = try Self.newStore("conflict")
        let key = try TestEnvironment.file(try KeySpec.ec(.p256).generate().pem, name: "k.key")
        let ca = try CertificateAuthority.ephemeral()
        let cert = try TestEnvironment.file(ca.certificate.pem, name: "ca.pem")
        let caKey = try TestEnvironment.file(try ca.privateKey.pem, name: "ca.key")
        let csr = try TestEnvironment.file(Data(), name: "x.csr")
        let substituted = extra.map { ["CSR": csr, "KEY": key, "CERT": cert, "CAKEY": caKey][$0] ?? $0 }
        try Self.expectRefusedUnchanged(store, ["cert", "issue", "--dir", store, "--name", "x", "--cert-file", store + "-x.pem"] + substituted,
                                        fragments)
    }

    // MARK: Item 10

    @Test("warnings: a CSR outside the CA's constraints, an IP under a constrained CA, an expired CA, a leaf outliving its CA",
          .requires(Tools.openssl))
    func warnings() throws {
        let store = try Self.newStore("warn")
        let folder = TestEnvironment.temporaryDirectory("warn-files").path
        let issue = ["cert", "issue", "--dir", store]
        let csr = try TestEnvironment.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                               "-keyout", folder + "/apple.key", "-subj", "/CN=www.apple.com",
                                               "-addext", "subjectAltName=DNS:www.apple.com", "-out", folder + "/apple.csr"])
        #expect(csr.status == 0, "\(csr.combined)")
        let cases: [(arguments: [String], says: String)] = [
            (["--name", "apple", "--csr", folder + "/apple.csr", "--cert-file", folder + "/apple.pem"],
             "www.apple.com is outside the name constraints"),
            (["--name", "ip", "--host", "127.0.0.1"], "BoringSSL-based clients"),
            (["--name", "short-ca", "--ca", "--days", "30"], ""),
            (["--name", "long", "--host", "a.test", "--issuer", "short-ca"], "after its issuer"),
            (["--name", "old-ca", "--ca", "--not-before", "-10", "--not-after", "-1"], ""),
            (["--name", "under-old", "--host", "a.test", "--issuer", "old-ca"], "the issuer old-ca expired on"),
        ]
        for (arguments, says) in cases {
            let result = try TestEnvironment.tlsFixtures(issue + arguments)
            #expect(result.status == 0, "\(arguments): \(result.combined)")
            let warnings = result.stderr.split(separator: "\n").filter { $0.hasPrefix("warning:") }
            if says.isEmpty {
                #expect(warnings.isEmpty, "\(arguments): \(result.stderr)")
            } else {
                #expect(warnings.count == 1 && warnings[0].contains(says), "\(arguments): \(result.stderr)")
            }
        }
        // The name-constraint warning for a --host too, and none for a name inside them.
        let inside = try TestEnvironment.tlsFixtures(issue + ["--name", "in", "--host", "in.test"])
        #expect(inside.status == 0 && !inside.stderr.contains("warning"), "\(inside.stderr)")
    }

    // MARK: Item 13

    @Test("--json errors carry the library's code, and a 5,000-character value is not echoed whole")
    func jsonCodesAndBoundedEcho() throws {
        let store = try Self.newStore("json")
        let out = TestEnvironment.temporaryDirectory("json-out")
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "a", "--host", "a.test", "--out-dir", out.path]).status == 0)
        let cases: [([String], String)] = [
            (["cert", "issue", "--dir", store, "--name", "a", "--host", "b.test", "--out-dir", out.path], "fileExists"),
            (["ca", "init", "--dir", store], "caExists"),
            (["ca", "show", "--authority", "intermediate", "--dir", store], "authorityNotMade"),
        ]
        for (arguments, code) in cases {
            let result = try TestEnvironment.tlsFixtures(arguments + ["--json"])
            #expect(result.status != 0)
            let body = try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: [String: Any]]
            #expect(body?["error"]?["code"] as? String == code, "\(arguments): \(result.stdout)")
        }
        let long = String(repeating: "n", count: 5_000)
        let result = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", long, "--host", "a.test"])
        CLIInputTests.expectOneLineError(result, mentioning: ["5000 characters"])
        #expect(result.stderr.count < 600, "\(result.stderr.count) characters")
    }
}
