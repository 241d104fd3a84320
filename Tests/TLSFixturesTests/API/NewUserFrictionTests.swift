import Foundation
import Testing
import TLSFixtures

/// What a new user hit writing pinning tests with the package (issue 14's "API friction" list), one test each,
/// judged from outside: the CLI's exit status and output, a real client against a real server.
@Suite("A new user's friction", .ownThreads)
struct NewUserFrictionTests {
    init() { TestEnvironment.useSharedStoreAsDefault() }

    @Test("withFixture's value may be ignored, even inside #expect(throws:)")
    func withFixtureResultIsDiscardable() async throws {
        struct Refused: Error {}
        // The body returns a value that nobody uses: without @discardableResult each of these is a compiler warning,
        // which `make test` turns into an error (it builds our targets with -warnings-as-errors), so this file then
        // does not compile. At run time: the body's value and its error come back out.
        try await withFixture("ats-compliant") { fixture in fixture.port }
        #expect(try await withFixture("ats-compliant") { fixture in fixture.port } > 0)
        await #expect(throws: Refused.self) {
            try await withFixture("ats-compliant") { fixture -> Int in
                if fixture.port > 0 { throw Refused() }
                return fixture.port
            }
        }
    }

    @Test("cert issue takes a negative day count after a space: --not-before -10")
    func negativeDaysAfterASpace() throws {
        let directory = TestEnvironment.temporaryDirectory("not-before")
        let spaced = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "old", "--host", "localhost",
                                                      "--not-before", "-10", "--not-after", "-1"])
        #expect(spaced.status == 0, "\(spaced.stderr)")
        let equals = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "old2", "--host", "localhost",
                                                      "--not-before=-10", "--not-after=-1"])
        #expect(equals.status == 0, "\(equals.stderr)")
        for name in ["old", "old2"] {
            let certificate = try #require(try Certificate.all(pem: Data(contentsOf: directory.appendingPathComponent("certs/\(name).pem"))).first)
            // Independent of the implementation: the dates are nine to eleven days and zero to two days ago.
            let start = Date().timeIntervalSince(certificate.notBefore) / 86_400
            let end = Date().timeIntervalSince(certificate.notAfter) / 86_400
            #expect(start > 9 && start < 11, "\(name): notBefore \(certificate.notBefore)")
            #expect(end > 0 && end < 2, "\(name): notAfter \(certificate.notAfter)")
        }
    }

    @Test("a client certificate needs no --host, and openssl verifies it for client auth")
    func clientCertificateWithoutHost() throws {
        let directory = TestEnvironment.temporaryDirectory("client-no-host")
        // Outside the store: cert issue --out-dir refuses any folder inside it (issue 16).
        let out = TestEnvironment.temporaryDirectory("client-no-host-out")
        let issued = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "alice", "--cn", "Alice",
                                                      "--eku", "clientAuth", "--issuer", "client-ca", "--out-dir", out.path])
        #expect(issued.status == 0, "\(issued.stderr)")
        let text = try TestEnvironment.openssl(["x509", "-in", out.appendingPathComponent("alice.pem").path, "-noout", "-subject", "-ext", "subjectAltName,extendedKeyUsage"])
        #expect(text.stdout.contains("CN = Alice") || text.stdout.contains("CN=Alice"), "\(text.stdout)")
        #expect(!text.stdout.contains("Subject Alternative Name"), "\(text.stdout)")
        let chain = directory.appendingPathComponent("ca/client-ca.pem").path
        let verify = try TestEnvironment.openssl(["verify", "-purpose", "sslclient", "-CAfile", chain, out.appendingPathComponent("alice.pem").path])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        // A server certificate still needs a name to be verified against: the error says how.
        let server = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "web"])
        CLIInputTests.expectOneLineError(server, mentioning: ["--host"])
    }

    @Test("a --host outside the CA's name constraints is issued with a one-line warning naming the constraint and the fix")
    func hostOutsideNameConstraintsWarns() throws {
        let directory = TestEnvironment.temporaryDirectory("outside")
        let outside = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "real", "--host", "api.example.com",
                                                       "--host", "localhost"])
        #expect(outside.status == 0, "\(outside.stderr)")
        let warnings = outside.stderr.split(separator: "\n").filter { $0.hasPrefix("warning:") }
        #expect(warnings.count == 1, "\(outside.stderr)")
        let warning = String(warnings.first ?? "")
        #expect(warning.contains("api.example.com") && warning.contains("permitted: localhost, test, example, invalid"), "\(warning)")
        #expect(warning.contains("--no-name-constraints"), "\(warning)")
        // The warning is right: OpenSSL refuses the chain for that very reason.
        let verify = try TestEnvironment.openssl(["verify", "-CAfile", directory.appendingPathComponent("ca/root.pem").path,
                                                  directory.appendingPathComponent("certs/real.pem").path])
        #expect(verify.status != 0 && (verify.stdout + verify.stderr).contains("permitted subtree violation"), "\(verify.stdout)\(verify.stderr)")
        // Control: names inside (a DNS name under test, an address in 127.0.0.0/8) draw no name-constraint warning; the
        // address draws the one about BoringSSL, which cannot evaluate IP constraints (issue 36, item 10).
        let inside = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", directory.path, "--name", "fine", "--host", "api.team.test",
                                                      "--host", "127.0.0.1"])
        let insideWarnings = inside.stderr.split(separator: "\n").filter { $0.hasPrefix("warning:") }
        #expect(inside.status == 0 && insideWarnings.count == 1 && insideWarnings[0].contains("BoringSSL")
                && !inside.stderr.contains("outside the name constraints"), "\(inside.stderr)")
    }

    @Test("NameConstraints.permits follows RFC 5280: a DNS subtree covers itself and names under it, CIDR blocks by prefix")
    func permitsFollowsRFC5280() throws {
        let constraints = NameConstraints.localDevelopment
        #expect(constraints.permits(try SubjectAltName(host: "localhost")))
        #expect(constraints.permits(try SubjectAltName(host: "a.b.test")))
        #expect(!constraints.permits(try SubjectAltName(host: "notatest")))   // a label boundary, not a suffix
        #expect(!constraints.permits(try SubjectAltName(host: "example.com")))
        #expect(constraints.permits(try SubjectAltName(host: "127.9.9.9")))
        #expect(!constraints.permits(try SubjectAltName(host: "128.0.0.1")))
        #expect(constraints.permits(try SubjectAltName(host: "::1")))
        #expect(!constraints.permits(try SubjectAltName(host: "::2")))
        let excluding = NameConstraints(permitted: [], excluded: ["bad.test"])
        #expect(!excluding.permits(try SubjectAltName(host: "x.bad.test")))
        #expect(excluding.permits(try SubjectAltName(host: "good.test")))
    }

    @Test("pins client-cert-required prints the key file (and a .p12), and curl gets in with either")
    func pinsPrintsTheClientKeyFile() async throws {
        let store = TestEnvironment.sharedStore
        let pins = try await TestEnvironment.tlsFixturesAwaiting(
            ["pins", "client-cert-required", "--dir", store.directory.path])
        #expect(pins.status == 0, "\(pins.stderr)")
        func path(after label: String) -> String? {
            pins.stdout.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label + " ") }
                .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
                .map { String($0.split(separator: " ").first ?? "") }
        }
        let keyFile = try #require(path(after: "key"), "\(pins.stdout)")
        let certificateFile = try #require(path(after: "certificate"), "\(pins.stdout)")
        let p12File = try #require(path(after: "PKCS#12"), "\(pins.stdout)")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: keyFile, isDirectory: &isDirectory) && !isDirectory.boolValue, "\(keyFile) is not a file")
        // The key is the certificate's: the same public key, as OpenSSL reads each file.
        let fromKey = try await TestEnvironment.opensslAwaiting(["pkey", "-in", keyFile, "-pubout"]).stdout
        let fromCertificate = try await TestEnvironment.opensslAwaiting(
            ["x509", "-in", certificateFile, "-noout", "-pubkey"]).stdout
        #expect(!fromKey.isEmpty && fromKey == fromCertificate)

        try await withFixture("client-cert-required") { fixture in
            let url = fixture.url.absoluteString
            let caFile = try TestEnvironment.file(fixture.caCertificate.pem, name: "ca.pem")
            let withPEM = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", caFile, "--cert", certificateFile, "--key", keyFile, url])
            #expect(withPEM.status == 0 && withPEM.stdout.contains("\"client-cert-required\""), "\(withPEM.stderr)")
            let withP12 = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", caFile, "--cert-type", "P12",
                                              "--cert", "\(p12File):\(PKCS12Export.defaultPassword)", url])
            #expect(withP12.status == 0 && withP12.stdout.contains("\"client-cert-required\""), "\(withP12.stderr)")
            // Control: without a certificate the server refuses.
            let without = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", caFile, url])
            #expect(without.status != 0)
        }
    }

    @Test("Credential.pkcs12() is the client identity as a .p12 that OpenSSL opens with the documented password")
    func clientIdentityFromTheLibrary() async throws {
        try await withFixture("client-cert-required") { fixture in
            let client = try #require(fixture.prepared.clientCredential)
            let p12 = try TestEnvironment.file(try client.pkcs12(), name: "client.p12")
            let opened = try await TestEnvironment.opensslAwaiting(["pkcs12", "-in", p12, "-passin", "pass:\(PKCS12Export.defaultPassword)", "-nodes"])
            #expect(opened.status == 0, "\(opened.stderr)")
            #expect(opened.stdout.contains("BEGIN PRIVATE KEY") && opened.stdout.contains("BEGIN CERTIFICATE"))
            let wrong = try await TestEnvironment.opensslAwaiting(
                ["pkcs12", "-in", p12, "-passin", "pass:wrong", "-nodes"])
            #expect(wrong.status != 0)
            // And the server accepts it: the probe presents the identity the .p12 holds.
            var options = ProbeOptions()
            options.trustRoots = [fixture.caCertificate]
            options.clientCredential = client
            let result = try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port))
            #expect(result.succeeded && result.http?.status == 200, "\(result.failure ?? "")")
        }
    }

    @Test("probe stops after a pin failure: no HTTP request, and it says so; with a matching pin the request is sent")
    func probeStopsAfterPinFailure() async throws {
        try await withFixture("pinned") { fixture in
            let caFile = try TestEnvironment.file(fixture.caCertificate.pem, name: "ca.pem")
            let target = "localhost:\(fixture.port)"
            let wrongPin = "sha256/\(fixture.pins.backup)"
            let failed = try await TestEnvironment.tlsFixturesAwaiting(
                ["probe", target, "--ca", caFile, "--pin", wrongPin])
            #expect(failed.status == 4)
            #expect(failed.stdout.contains("not sent: no pin matched"), "\(failed.stdout)")
            let json = try await TestEnvironment.tlsFixturesAwaiting(
                ["probe", target, "--ca", caFile, "--pin", wrongPin, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
            let result = try #require(object["result"] as? [String: Any])
            #expect(result["http"] == nil && (result["httpNotSent"] as? String)?.contains("no pin matched") == true, "\(json.stdout)")
            // Control: the right pin lets the request through (the fixture answers 200 with its name).
            let matched = try await TestEnvironment.tlsFixturesAwaiting(["probe", target, "--ca", caFile, "--pin", "sha256/\(fixture.pins.leaf ?? "")"])
            #expect(matched.status == 0 && matched.stdout.contains("HTTP") && matched.stdout.contains("200"), "\(matched.stdout)")
            #expect(!matched.stdout.contains("not sent"))
        }
    }

    @Test("the interception CA is reachable from the API: pin-mitm verifies against deviceTrustRoots, not the CA alone")
    func interceptionCAFromTheAPI() async throws {
        try await withFixture("pin-mitm") { fixture in
            let interception = try TestEnvironment.sharedStore.authority(.interceptionRoot).certificate
            #expect(fixture.deviceTrustRoots.contains(interception) && fixture.deviceTrustRoots.contains(fixture.caCertificate))
            let target = ProbeTarget(host: "localhost", port: fixture.port)
            let device = try await TLSProbe(trusting: fixture.deviceTrustRoots).probe(target)
            let caOnly = try await TLSProbe(trusting: [fixture.caCertificate]).probe(target)
            #expect(device.verification?.summary == "ok")
            #expect(caOnly.verification?.summary == "unable to get local issuer certificate")
            // The CLI's route to the same certificate.
            let out = TestEnvironment.temporaryDirectory("interception").appendingPathComponent("proxy.pem").path
            let export = try await TestEnvironment.tlsFixturesAwaiting(["ca", "export", "--dir", TestEnvironment.sharedStore.directory.path,
                                                          "--authority", "interception-root", "--out", out])
            #expect(export.status == 0, "\(export.stderr)")
            #expect(try Certificate.all(pem: Data(contentsOf: URL(fileURLWithPath: out))) == [interception])
        }
    }

    // README: ephemeral-example begin
    @Test func anEphemeralCAIsServedWithNoFiles() async throws {
        let ca = try CertificateAuthority.ephemeral()
        let fixture = try await FixtureServer.start(serving: try ca.issueServerCertificate(hosts: ["localhost"]))
        let result = try await TLSProbe(trusting: [ca.certificate]).probe(ProbeTarget(host: "localhost", port: fixture.port))
        await fixture.stop()

        #expect(result.verification?.summary == "ok")
        #expect(result.presentedChain.first?.spkiSHA256 == fixture.pins.leaf)
    }
    // README: ephemeral-example end

    @Test("an ephemeral CA's fixture is judged by a second TLS stack too (curl), and the store's CA does not vouch for it")
    func ephemeralServedToCurl() async throws {
        let ca = try CertificateAuthority.ephemeral()
        let fixture = try await FixtureServer.start(serving: try ca.issueServerCertificate(hosts: ["localhost"]))
        let ownCA = try TestEnvironment.file(ca.certificate.pem, name: "ephemeral.pem")
        let builtIn = try TestEnvironment.file(try TestEnvironment.sharedStore.ca().certificate.pem, name: "builtin.pem")
        let accepted = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ownCA, fixture.url.absoluteString])
        let refused = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", builtIn, fixture.url.absoluteString])
        await fixture.stop()
        #expect(accepted.status == 0 && accepted.stdout.contains("\"ats-compliant\""), "\(accepted.stderr)")
        #expect(refused.status != 0)
        // What needs the store's material says so instead of serving something else.
        await #expect { try await FixtureServer.start(serving: try ca.issueServerCertificate(),
                                                      scenario: try ScenarioCatalog.builtIn.scenario(named: "client-cert-required")) }
            throws: { "\($0)".contains("client CA") }
    }
}

/// docs/macos.md's example, in a namespace of its own (the page shows it at file scope).
struct NameClashExample {
    // README: name-clash-example begin
    typealias FixtureCertificate = TLSFixtures.Certificate   // one alias per file keeps call sites short

    func leafPin(of fixture: FixtureServer) -> String? {
        let leaf: FixtureCertificate? = fixture.chain.first
        let version: TLSFixtures.TLSVersion = .tls1_2
        let usage: TLSFixtures.KeyUsage = .digitalSignature
        let constraints: TLSFixtures.NameConstraints = .localDevelopment
        _ = (version, usage, constraints)
        return leaf?.spkiSHA256
    }
    // README: name-clash-example end
}

@Suite("Names shared with swift-certificates and NIOSSL")
struct NameClashTests {
    init() { TestEnvironment.useSharedStoreAsDefault() }

    @Test("module-qualified names compile and mean this package's types (nothing here is named TLSFixtures)")
    func qualifiedNamesWork() async throws {
        try await withFixture("pinned") { fixture in
            #expect(NameClashExample().leafPin(of: fixture) == fixture.pins.pinnedLeaf)
        }
    }
}
