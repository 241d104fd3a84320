import Foundation
import Testing
@testable import TLSFixtures

/// The built-in CA's design (docs/CLIENTS.md has the evidence from every stack): bare DNS constraints that strict
/// RFC 5280 verifiers accept, iPAddress constraints kept so it can never vouch for a real address, and leaves that name
/// DNS names only, which BoringSSL can check. Older stores keep working and are told how to move on.
@Suite("Built-in CA design", .ownThreads)
struct CADesignTests {
    @Test("a fresh CA permits bare DNS names and loopback blocks, which openssl prints back")
    func freshConstraints() throws {
        let store = TestEnvironment.temporaryDirectory("fresh").appendingPathComponent("store")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path]).status == 0)
        let text = try TestEnvironment.openssl(["x509", "-in", store.appendingPathComponent("ca/root.pem").path, "-noout", "-ext", "nameConstraints"]).stdout
        let permitted = text.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("DNS:") || $0.hasPrefix("IP:") }
        #expect(permitted == ["DNS:localhost", "DNS:test", "DNS:example", "DNS:invalid", "IP:127.0.0.0/255.0.0.0",
                              "IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF"], "\(text)")
        // Our own reading of the extension agrees with openssl's, and finds nothing to warn about.
        let root = try Certificate(pem: Data(contentsOf: store.appendingPathComponent("ca/root.pem")))
        #expect(root.nameConstraintEntries?.permitted == NameConstraints.localDevelopment.permitted)
        #expect(LegacyNameConstraints(root) == nil)
        let shown = try TestEnvironment.tlsFixtures(["ca", "show", "--dir", store.path])
        #expect(shown.status == 0 && !shown.stderr.contains("warning"), "\(shown.stderr)")
    }

    @Test("a CA with leading-dot constraints (made by an earlier version) is reported by ca show, and still serves")
    func legacyCAIsReported() async throws {
        let store = TestEnvironment.temporaryDirectory("legacy").appendingPathComponent("store")
        let caDirectory = store.appendingPathComponent("ca")
        try FileManager.default.createDirectory(at: caDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: store.path)
        // What earlier versions wrote, made here with the openssl CLI rather than with our (now stricter) code.
        let made = try await TestEnvironment.opensslAwaiting([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30",
            "-keyout", caDirectory.appendingPathComponent("root.key").path, "-out", caDirectory.appendingPathComponent("root.pem").path,
            "-subj", "/O=swift-tls-fixtures/CN=old CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-addext", "nameConstraints=critical,permitted;DNS:localhost,permitted;DNS:.localhost,permitted;DNS:.test,permitted;IP:127.0.0.0/255.0.0.0"])
        #expect(made.status == 0, "\(made.combined)")
        chmod(caDirectory.appendingPathComponent("root.key").path, 0o600)

        let shown = try await TestEnvironment.tlsFixturesAwaiting(["ca", "show", "--dir", store.path])
        #expect(shown.status == 0, "\(shown.combined)")
        #expect(shown.stderr.contains("DNS:.localhost, DNS:.test"), "\(shown.stderr)")
        #expect(shown.stderr.contains("tls-fixtures ca init --force"), "no way out named: \(shown.stderr)")
        #expect(shown.stderr.contains("Devices and simulators that trust the old CA"), "no warning about devices: \(shown.stderr)")
        let json = try await TestEnvironment.tlsFixturesAwaiting(["ca", "show", "--dir", store.path, "--json"])
        let object = try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any]
        #expect((object?["warnings"] as? [String])?.first?.contains("leading-dot") == true, "\(json.stdout)")

        // Never replaced behind the user's back: the CA is the same after serving with it, and its leaves verify for
        // OpenSSL (which accepts the leading dot) with DNS names only.
        let before = try Data(contentsOf: caDirectory.appendingPathComponent("root.pem"))
        try await withFixture("ats-compliant", store: CertificateStore(directory: store)) { fixture in
            let result = try await ScenarioEndToEndTests.probe(fixture)
            #expect(result.verification?.error == nil, "\(result.verification?.summary ?? "?")")
            #expect(result.presentedChain.first?.ipAddresses == [])
        }
        #expect(try Data(contentsOf: caDirectory.appendingPathComponent("root.pem")) == before)
    }

    @Test("ca init --force warns that devices still trust the CA it replaces")
    func forceWarns() throws {
        let store = TestEnvironment.temporaryDirectory("force").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let old = try Certificate(pem: Data(contentsOf: URL(fileURLWithPath: "\(store)/ca/root.pem")))
        let replaced = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store, "--force"])
        #expect(replaced.status == 0, "\(replaced.combined)")
        #expect(replaced.stderr.contains(old.sha256Fingerprint.colonHex), "the warning does not name the old CA: \(replaced.stderr)")
        #expect(replaced.stderr.contains("keep trusting it until you remove it"), "\(replaced.stderr)")
        // A first `ca init` replaces nothing and warns about nothing.
        let fresh = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", TestEnvironment.temporaryDirectory("force2").path])
        #expect(fresh.status == 0 && !fresh.stderr.contains("warning"), "\(fresh.stderr)")
    }

    @Test("a DNS constraint with a leading dot or a wildcard is refused with one line naming the bare form",
          arguments: [(".corp.test", "\"corp.test\" already permits every name under it"), ("*.corp.test", "no wildcard")])
    func leadingDotRefused(entry: String, message: String) throws {
        let store = TestEnvironment.temporaryDirectory("permit").path
        let result = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "sub", "--ca", "--no-san", "--permit", entry])
        #expect(result.status == 1, "\(result.combined)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(message), "\(result.stderr)")
        #expect(throws: PKIError.self) { try NameConstraints(permitted: [entry]).configText() }
    }

    @Test("extra DNS subtrees extend the defaults without repeats")
    func extraSubtrees() throws {
        let constraints = NameConstraints.localDevelopment(addingDNSSubtrees: ["fixtures.example.com", "test"])
        #expect(constraints.permitted == ["localhost", "test", "example", "invalid", "fixtures.example.com", "127.0.0.0/8", "::1/128"])
        #expect(try constraints.configText().contains("permitted;DNS:fixtures.example.com"))
    }

    @Test("leaves name DNS names only; ip-san is the one scenario whose leaf names addresses")
    func leavesNameNoAddresses() throws {
        for scenario in ScenarioCatalog.builtIn.scenarios {
            guard let plan = scenario.certificate, let names = try plan.profile(scenarioName: scenario.name).subjectAltNames else { continue }
            let addresses = names.filter { if case .ip = $0 { true } else { false } }.map(\.value)
            #expect(addresses == (scenario.name == "ip-san" ? ["127.0.0.1", "::1"] : []), "\(scenario.name): \(addresses)")
        }
        let issued = try CertificateAuthority.ephemeral().issueServerCertificate()
        #expect(issued.certificate.dnsNames == ["localhost"] && issued.certificate.ipAddresses.isEmpty)
    }

    /// Upgrading: a store's leaves from before (naming 127.0.0.1 and ::1) are re-issued on next use because the profile
    /// is part of their cache key, and they keep their keys, so published SPKI pins stay valid.
    @Test("leaves made with the old baseline are re-issued with DNS names only, on the same key")
    func oldLeavesReissuedWithTheSameKey() throws {
        let store = CertificateStore(directory: TestEnvironment.temporaryDirectory("upgrade").appendingPathComponent("store"))
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "pinned")
        let plan = try #require(scenario.certificate)
        var oldProfile = try plan.profile(scenarioName: scenario.name)
        oldProfile.subjectAltNames = try ["localhost", "127.0.0.1", "::1", "pinned.fixtures.test"].map(SubjectAltName.init(host:))
        let old = try store.credential(named: scenario.name, profile: oldProfile, keyName: "pinned", keySpec: plan.key, issuer: plan.leafIssuer)
        #expect(old.certificate.ipAddresses.count == 2)

        // A new process: nothing cached in memory, only what is on disk.
        let later = CertificateStore(directory: store.directory)
        let prepared = try later.prepare(scenario)
        let leaf = try #require(prepared.credential?.certificate)
        #expect(leaf.ipAddresses.isEmpty && leaf.dnsNames == ["localhost", "pinned.fixtures.test"])
        #expect(leaf.sha256Fingerprint != old.certificate.sha256Fingerprint, "the old leaf was served again")
        #expect(leaf.spkiSHA256 == old.certificate.spkiSHA256, "the pinned key changed")
        #expect(later.keysGenerated == 1, "only the backup pin's key is new, not the leaf's: \(later.keysGenerated)")
    }
}
