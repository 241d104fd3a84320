import Foundation
import Testing
@testable import TLSFixtures

/// The refusals the catalog promises (a client that does not allow the weakness must fail), client authentication,
/// curl's verdicts, many fixtures at once, and HTTP keep-alive.
@Suite("ScenarioEndToEnd: refusals, client auth, many fixtures, keep-alive")
struct ScenarioEndToEndBehaviourTests {
    typealias E2E = ScenarioEndToEndTests

    // MARK: - Negative proofs

    @Test("a client offering only TLS 1.2 and later cannot connect", .requires(Tools.openssl, Tools.pythonSSL), arguments: [("tls-v1-0", "TLSv1"), ("tls-v1-1", "TLSv1.1")])
    func oldProtocolsRefused(name: String, version: String) async throws {
        try await E2E.withFixture(name) { fixture in
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            async let modern = E2E.probe(fixture) { $0.minVersion = .tls1_2 }
            async let modernSClient = SClient.connect(port: fixture.port, minProtocol: "TLSv1.2", cipher: "ALL:@SECLEVEL=0")
            async let pythonDefault = External.run(["python3", "-c", Python.connect, String(fixture.port), ca])
            async let pythonPermissive = External.run(["python3", "-c", Python.connect, String(fixture.port), ca, "permissive"])

            let probed = try await modern
            #expect(probed.failure != nil && probed.protocolName == nil, "a TLS 1.2+ probe connected with \(probed.protocolName ?? "?")")
            let transcript = try await modernSClient
            #expect(!transcript.handshakeCompleted, "s_client -min_protocol TLSv1.2 connected:\n\(transcript.output.suffix(1500))")
            #expect(transcript.output.contains("protocol version") || transcript.output.contains("unsupported protocol"),
                    "s_client's refusal does not name the protocol:\n\(transcript.output.suffix(1500))")
            // Python's default context (TLS 1.2 minimum) refuses; the same context allowing TLS 1.0 connects, so the
            // version alone is the cause.
            let refused = try await pythonDefault
            #expect(refused.stdout.hasPrefix("REFUSED") && refused.stdout.lowercased().contains("protocol"), "python default: \(refused.combined)")
            let allowed = try await pythonPermissive
            #expect(allowed.stdout.hasPrefix("OK \(version) ECDHE-RSA-AES128-SHA"), "python allowing TLS 1.0: \(allowed.combined)")
        }
    }

    @Test("a client offering only ECDHE suites cannot connect to static-rsa", .requires(Tools.openssl))
    func staticRSARefusesForwardSecrecy() async throws {
        try await E2E.withFixture("static-rsa") { fixture in
            async let ecdheOnly = E2E.probe(fixture) { $0.ciphers = "ECDHE:@SECLEVEL=0" }
            async let rsaOnly = E2E.probe(fixture) { $0.ciphers = "kRSA:@SECLEVEL=0"; $0.maxVersion = .tls1_2 }
            async let sclient = SClient.connect(port: fixture.port, cipher: "ECDHE:@SECLEVEL=0")
            let refused = try await ecdheOnly
            #expect(refused.failure != nil && refused.cipher == nil, "an ECDHE-only probe negotiated \(refused.cipher?.openssl ?? "?")")
            let transcript = try await sclient
            #expect(!transcript.handshakeCompleted && transcript.output.contains("handshake failure"),
                    "s_client -cipher ECDHE:\n\(transcript.output.suffix(1500))")
            // The control: the same probe offering static RSA only is served.
            let served = try await rsaOnly
            #expect(served.failure == nil && served.keyExchange == nil, "kRSA-only probe: \(served.failure ?? served.keyExchange ?? "")")
        }
    }

    @Test("stock OpenSSL clients refuse small DH groups with 'dh key too small'; the probe reports the size",
          .requires(Tools.openssl, Tools.curl, Tools.pythonSSL),
          arguments: [("dh1024", 1024), ("dh512", 512)])
    func smallDHRefused(name: String, bits: Int) async throws {
        try await E2E.withFixture(name) { fixture in
            async let stock = SClient.stock(port: fixture.port)
            async let curl = External.run(["curl", "-sS", "-k", "--max-time", "20", "https://localhost:\(fixture.port)/"])
            async let python = External.run(["python3", "-c", Python.connect, String(fixture.port),
                                             try External.pemFile([fixture.caCertificate]), "noverify"])
            async let probed = E2E.probe(fixture)

            let transcript = try await stock
            #expect(!transcript.handshakeCompleted && transcript.output.contains("dh key too small"), "stock s_client:\n\(transcript.output.suffix(1500))")
            let curled = try await curl
            #expect(curled.status != 0 && curled.stderr.contains("dh key too small"), "curl -k: \(curled.combined)")
            let pythonOutcome = try await python
            #expect(pythonOutcome.stdout.hasPrefix("REFUSED") && pythonOutcome.stdout.contains("DH_KEY_TOO_SMALL"), "python: \(pythonOutcome.combined)")
            let result = try await probed
            #expect(result.failure == nil && result.keyExchange == "DH \(bits)", "probe: \(result.failure ?? result.keyExchange ?? "")")
        }
    }

    // MARK: - Client authentication

    @Test("client-cert-required refuses a client without a certificate and names the one that has it", .requires(Tools.openssl, Tools.curl))
    func clientCertificateRequired() async throws {
        try await E2E.withFixture("client-cert-required") { fixture in
            let credential = try #require(fixture.prepared.clientCredential, "no client credential for client-cert-required")
            let certFile = try External.pemFile([credential.certificate] + credential.intermediates, name: "client.pem")
            let keyFile = try External.file(credential.privateKey.pem, name: "client.key")
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let url = "https://localhost:\(fixture.port)/"

            async let anonymous = E2E.probe(fixture)
            async let anonymousSClient = SClient.connect(port: fixture.port)
            async let anonymousCurl = External.run(["curl", "-sS", "--max-time", "20", "--cacert", ca, url])
            async let authenticated = E2E.probe(fixture) { $0.clientCredential = credential }
            async let authenticatedCurl = External.run(["curl", "-sS", "--max-time", "20", "--cacert", ca, "--cert", certFile, "--key", keyFile, url])

            let refused = try await anonymous
            #expect(refused.failure != nil, "the probe reports success without a client certificate (TLS 1.3 sends the refusal after the client's Finished): \(refused.protocolName ?? "") http=\(refused.http?.status ?? 0)")
            #expect(refused.http == nil, "served without a client certificate")
            let transcript = try await anonymousSClient
            #expect(transcript.output.contains("certificate required"), "s_client without -cert:\n\(transcript.output.suffix(1500))")
            #expect(transcript.httpBody.flatMap(E2E.response) == nil, "s_client without -cert got an answer")
            let curled = try await anonymousCurl
            #expect(curled.status != 0 && curled.stderr.contains("certificate required"), "curl without --cert: \(curled.combined)")

            let served = try await authenticated
            #expect(served.failure == nil, "with the client certificate: \(served.failure ?? "")")
            let answer = E2E.response(served.http?.body)
            #expect(answer?.scenario == "client-cert-required")
            #expect(answer?.tls?.clientCertificate == credential.certificate.subject,
                    "the server reports client \(answer?.tls?.clientCertificate ?? "none"), expected \(credential.certificate.subject)")
            let curledWithCert = try await authenticatedCurl
            #expect(curledWithCert.status == 0, "curl --cert: \(curledWithCert.stderr)")
            #expect(E2E.response(curledWithCert.stdout)?.tls?.clientCertificate == credential.certificate.subject, "curl --cert got: \(curledWithCert.stdout)")
        }
    }

    // MARK: - curl, trusting the built-in CA

    /// nil: curl connects and gets the JSON. Otherwise the message curl (its own host check, OpenSSL's chain check)
    /// prints. Written from curl's and OpenSSL's documented wording, confirmed against certificates made by hand.
    static let curlVerdicts: [(String, String?)] = [
        ("ats-compliant", nil),
        ("no-san", nil),   // curl, like OpenSSL, falls back to the CN when there is no SAN
        ("no-common-name", nil),
        ("pin-mitm", nil),   // with the interception root trusted, as the catalog assumes
        ("wrong-host", "no alternative certificate subject name matches target host name 'localhost'"),
        ("expired", "SSL certificate problem: certificate has expired"),
        ("not-yet-valid", "SSL certificate problem: certificate is not yet valid"),
        ("self-signed", "SSL certificate problem: self-signed certificate"),
        ("untrusted-root", "SSL certificate problem: self-signed certificate in certificate chain"),
        ("incomplete-chain", "SSL certificate problem: unable to get local issuer certificate"),
        ("no-server-auth-eku", "SSL certificate problem: unsuitable certificate purpose"),
        ("sha1-leaf", "SSL certificate problem: CA signature digest algorithm too weak"),
        ("rsa1024", "SSL certificate problem: EE certificate key too weak"),
        ("name-constraint-violation", "SSL certificate problem: permitted subtree violation"),
    ]

    @Test("curl with the CA trusted accepts or rejects each certificate for the expected reason", .requires(Tools.curl), arguments: curlVerdicts)
    func curlVerdict(name: String, problem: String?) async throws {
        try await E2E.withFixture(name) { fixture in
            let roots = name == "pin-mitm" ? fixture.prepared.deviceTrustRoots : [fixture.caCertificate]
            let result = try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", try External.pemFile(roots),
                                                 "https://localhost:\(fixture.port)/"])
            if let problem {
                #expect(result.status == 60, "curl exit \(result.status): \(result.stderr)")
                #expect(result.stderr.contains(problem), "curl said: \(result.stderr)")
            } else {
                #expect(result.status == 0, "curl: \(result.stderr)")
                #expect(E2E.response(result.stdout)?.scenario == name, "curl got: \(result.stdout)")
            }
        }
    }

    // MARK: - Many fixtures

    @Test("two fixtures of one scenario side by side both answer")
    func sideBySide() async throws {
        let first = try await E2E.start("ats-compliant")
        let second = try await E2E.start("ats-compliant")
        async let a = E2E.probe(first)
        async let b = E2E.probe(second)
        let (resultA, resultB) = try await (a, b)
        await first.stop()
        await second.stop()
        #expect(first.port != second.port)
        for result in [resultA, resultB] {
            #expect(result.failure == nil && result.verification?.summary == "ok", "\(result.target): \(result.failure ?? "")")
            #expect(E2E.response(result.http?.body)?.scenario == "ats-compliant", "\(result.target)")
        }
    }

    @Test("fifty fixtures in one process all answer, then all stop and free their ports")
    func fifty() async throws {
        let names = ["ats-compliant", "ecc256", "tls-v1-2", "tls-v1-3", "cbc", "wrong-host", "sha384", "pinned", "static-rsa", "no-san"]
        let wanted = (0..<50).map { names[$0 % names.count] }
        var fixtures: [FixtureServer] = []
        do {
            fixtures = try await withThrowingTaskGroup(of: FixtureServer.self) { group in
                for name in wanted { group.addTask { try await E2E.start(name) } }
                var started: [FixtureServer] = []
                for try await fixture in group { started.append(fixture) }
                return started
            }
        } catch {
            for fixture in fixtures { await fixture.stop() }
            throw error
        }
        #expect(fixtures.count == 50)
        #expect(Set(fixtures.map(\.port)).count == 50, "two fixtures share a port")

        let answers = try await withThrowingTaskGroup(of: (String, Int, ProbeResult).self) { group in
            for fixture in fixtures {
                group.addTask { (fixture.scenario.name, fixture.port, try await E2E.probe(fixture)) }
            }
            var all: [(String, Int, ProbeResult)] = []
            for try await answer in group { all.append(answer) }
            return all
        }
        for (name, port, result) in answers {
            #expect(result.failure == nil, "\(name) on \(port): \(result.failure ?? "")")
            #expect(E2E.response(result.http?.body)?.scenario == name, "\(name) on \(port) answered \(result.http?.body ?? "nothing")")
        }

        // Its sockets (IPv4 and IPv6) must be gone; another test may be given the same port afterwards (HeldPort).
        let held = fixtures.map { (fixture: $0, v4: Ports.held($0.port), v6: Ports.held($0.port, host: "::1")) }
        await withTaskGroup(of: Void.self) { group in
            for fixture in fixtures { group.addTask { await fixture.stop() } }
        }
        for (fixture, v4, v6) in held {
            #expect(fixture.connectionCount == 0, "\(fixture.port): connections left open")
            #expect(v4.released, "\(fixture.port) still accepts connections after stop()")
            #expect(v4.reusable, "\(fixture.port) cannot be bound again after stop(); its sockets: \(v4.sockets)")
            if fixture.boundAddresses.contains("::1") {
                #expect(v6.released && v6.reusable, "[::1]:\(fixture.port) held after stop(); its sockets: \(v6.sockets)")
            }
        }
    }

    // MARK: - Keep-alive

    @Test("keep-alive serves several requests on one connection, and Connection: close is honoured", .requires(Tools.openssl, Tools.curl))
    func keepAlive() async throws {
        try await E2E.withFixture("ats-compliant") { fixture in
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let url = "https://localhost:\(fixture.port)/"
            async let reused = External.run(["curl", "-sS", "-v", "--max-time", "20", "--cacert", ca, url, url])
            async let closed = External.run(["curl", "-sS", "-v", "--max-time", "20", "--cacert", ca, "-H", "Connection: close", url, url])
            // Three pipelined requests on one TLS connection: the second asks to close, so the third is never answered.
            let pipelined = Data(("GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                  + "GET /two HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                                  + "GET /three HTTP/1.1\r\nHost: localhost\r\n\r\n").utf8)
            async let sclient = SClient.connect(port: fixture.port, request: pipelined)

            let keepAlive = try await reused
            #expect(keepAlive.status == 0, "curl: \(keepAlive.stderr)")
            #expect(keepAlive.stderr.contains("Re-using existing connection"), "curl did not reuse the connection:\n\(keepAlive.stderr)")
            #expect(keepAlive.stdout.components(separatedBy: "\"scenario\":\"ats-compliant\"").count - 1 == 2, "answers: \(keepAlive.stdout)")

            let close = try await closed
            #expect(close.status == 0, "curl: \(close.stderr)")
            #expect(!close.stderr.contains("Re-using existing connection"), "curl reused a connection the server was asked to close")
            #expect(close.stderr.lowercased().contains("< connection: close"), "no Connection: close in the answer:\n\(close.stderr)")
            #expect(close.stdout.components(separatedBy: "\"scenario\":\"ats-compliant\"").count - 1 == 2)

            let transcript = try await sclient
            let paths = transcript.httpBodies.compactMap { E2E.response($0)?.request.path }
            #expect(paths == ["/one", "/two"], "answered \(paths) on one connection:\n\(transcript.output.suffix(2000))")
            #expect(transcript.httpStatusLines == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"])
        }
    }
}
