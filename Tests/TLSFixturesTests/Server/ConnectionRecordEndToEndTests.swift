import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a fixture records of each connection, proven with clients we did not write: every outcome kind, the
/// ClientHello's fields, and the assertions built on them. The alert names and numbers are the IANA registry's (RFC 8446
/// §6); which alert OpenSSL's client sends for which verify error is its `ssl_x509err2alert` table
/// (ssl/statem/statem_lib.c): `certificate_expired` for CERT_HAS_EXPIRED, `unknown_ca` for an issuer it cannot find.
@Suite("Connection records, end to end")
struct ConnectionRecordEndToEndTests {
    static var store: CertificateStore { TestEnvironment.sharedStore }

    /// `name` started from the tests' store for `body`, and stopped after it.
    static func with(_ name: String, configuration: FixtureConfiguration = FixtureConfiguration(),
                     _ body: (FixtureServer) async throws -> Void) async throws {
        try await withFixture(name, store: store, configuration: configuration, body)
    }

    /// The one record the load since `cursor` made, once it has ended.
    static func onlyRecord(_ fixture: FixtureServer, after cursor: Int,
                           sourceLocation: SourceLocation = #_sourceLocation) async throws -> ConnectionRecord {
        // 60 s only detects a hang: each returns as soon as the record has settled.
        var records = await fixture.connections(after: cursor, wait: .seconds(60))
        // Settled can mean "answered a request" while the connection is still closing: wait for the end too.
        if let record = records.first, record.endedAt == nil {
            records = await fixture.log.records(after: cursor, until: FixtureServer.deadline(after: .seconds(60))) {
                $0.allSatisfy { $0.endedAt != nil }
            }
        }
        #expect(records.count == 1, "records: \(records.map(\.summary))", sourceLocation: sourceLocation)
        return try #require(records.first, sourceLocation: sourceLocation)
    }

    /// `openssl s_client` verifying against the built-in CA (`-verify_return_error`), sending `GET /` if it gets there.
    static func sClient(_ fixture: FixtureServer, trustCA: Bool = true, extra: [String] = []) async throws -> Subprocess.Result {
        var arguments = ["s_client", "-connect", "127.0.0.1:\(fixture.port)", "-servername", "localhost", "-verify_return_error",
                         "-verify_hostname", "localhost", "-ign_eof"]
        if trustCA { arguments += ["-CAfile", try External.pemFile([fixture.caCertificate], name: "ca.pem")] }
        return try await External.openssl(arguments + extra, stdin: External.closingRequest)
    }

    struct ClientFailed: Error, CustomStringConvertible {
        let output: String
        var description: String { "client failed: \(output.suffix(300))" }
    }

    // MARK: - Outcomes

    @Test("openssl s_client refusing `expired` is recorded as certificate_expired(45) received after the server's flight",
          .requires(Tools.openssl))
    func sClientRefusesExpired() async throws {
        try await Self.with("expired") { fixture in
            let cursor = fixture.latestConnectionID
            try await fixture.expectRefused {
                let result = try await Self.sClient(fixture)
                if result.status != 0 { throw ClientFailed(output: result.combined) }
            }
            let record = try await Self.onlyRecord(fixture, after: cursor)
            #expect(record.outcome == .alertReceived(.certificateExpired, phase: .afterServerFlight), "\(record.summary)")
            #expect(record.requests.isEmpty)
            #expect(record.peer.hasPrefix("127.0.0.1:"))
            let hello = try #require(record.clientHello)
            #expect(hello.serverName == "localhost")
            #expect(hello.legacyVersion == "TLSv1.2")   // RFC 8446 §4.1.2: a TLS 1.3 client sends 0x0303
            #expect(hello.supportedVersions.contains("TLSv1.3"))
            #expect(hello.cipherSuites.contains("TLS_AES_256_GCM_SHA384"))   // RFC 8446 §B.4, 0x1302
            #expect(hello.extensions.contains("server_name") && hello.extensions.contains("supported_versions"))
            #expect(!hello.groups.isEmpty && !hello.signatureAlgorithms.isEmpty)
        }
    }

    @Test("curl refusing `expired` sends certificate_expired(45); curl trusting another CA sends unknown_ca(48), and expectRefused says the client refused for another reason", .requires(Tools.curl))
    func curlRefuses() async throws {
        try await Self.with("expired") { fixture in
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            try await fixture.expectRefused {
                let result = try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", ca, fixture.url.absoluteString])
                if result.status != 0 { throw ClientFailed(output: result.combined) }
            }
            #expect(fixture.connections.last?.outcome?.alert == .certificateExpired)

            // Another CA trusted instead: curl refuses for the issuer, not the date.
            let stranger = try External.pemFile([try CertificateAuthority.ephemeral().certificate], name: "stranger.pem")
            let failure = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused {
                    let result = try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", stranger,
                                                         fixture.url.absoluteString])
                    if result.status != 0 { throw ClientFailed(output: result.combined) }
                }
            }
            #expect(failure?.code == .refusedForAnotherReason)
            #expect(failure?.description.contains("unknown_ca(48)") == true, "\(failure?.description ?? "")")
            #expect(failure?.description.contains("certificate_expired(45)") == true, "\(failure?.description ?? "")")
        }
    }

    @Test("a server that cannot agree sends the alert, and the record says which and why: protocol_version(70) for a TLS 1.2-only client of tls-v1-0", .requires(Tools.openssl))
    func serverSendsProtocolVersion() async throws {
        try await Self.with("tls-v1-0") { fixture in
            let cursor = fixture.latestConnectionID
            let result = try await Self.sClient(fixture, extra: ["-min_protocol", "TLSv1.2"])
            #expect(result.status != 0)
            let record = try await Self.onlyRecord(fixture, after: cursor)
            guard case .alertSent(let alert, let reason, let phase)? = record.outcome else {
                Issue.record("expected an alert sent: \(record.summary)")
                return
            }
            #expect(alert == .protocolVersion)
            #expect(phase == .afterClientHello)
            #expect(reason == "unsupported protocol", "OpenSSL's reason: \(reason ?? "none")")
            #expect(record.clientHello?.offeredVersions == [.tls1_2, .tls1_3])
        }
    }

    @Test("a handshake then a hang-up without a request is recorded so; on one fixture that proves nothing (unproven)",
          .requires(Tools.openssl))
    func handshakeThenHangUp() async throws {
        try await Self.with("pin-rotated-key") { fixture in
            let cursor = fixture.latestConnectionID
            let unproven = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused {
                    // A client that rejects a pin after the handshake, one that verifies nothing, and one that crashed
                    // all do this: s_client with nothing to send closes at once.
                    let result = try await External.openssl(["s_client", "-connect", "127.0.0.1:\(fixture.port)",
                                                             "-servername", "localhost"], stdin: Data())
                    throw ClientFailed(output: "pin rejected after the handshake (s_client exited \(result.status))")
                }
            }
            #expect(unproven?.code == .unproven && unproven?.fix?.contains("expectRefused(\"pin-rotated-key\")") == true,
                    "\(String(describing: unproven))")
            let record = try await Self.onlyRecord(fixture, after: cursor)
            guard case .handshakeCompleted(let handshake)? = record.outcome else {
                Issue.record("expected a completed handshake: \(record.summary)")
                return
            }
            #expect(handshake.protocol == "TLSv1.3")
            #expect(!handshake.clientCertificate)
            #expect(record.requestCount == 0 && record.endedAt != nil)
            #expect(record.summary.contains("closed the connection without sending a request"), "\(record.summary)")
        }
    }

    @Test("a request answered is recorded (method, path, status); expectAccepted passes and expectRefused fails saying the client accepted the certificate", .requires(Tools.curl))
    func requestServed() async throws {
        try await Self.with("ats-compliant") { fixture in
            let ca = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let fetch = {
                let result = try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", ca,
                                                     fixture.url.appendingPathComponent("hello").absoluteString + "?x=1"])
                if result.status != 0 { throw ClientFailed(output: result.combined) }
                return result.stdout
            }
            let body = try await fixture.expectAccepted { try await fetch() }
            #expect(body.contains("\"scenario\":\"ats-compliant\""))
            let record = try #require(fixture.connections.last)
            #expect(record.requests.map { [$0.method, $0.path, "\($0.status)"] } == [["GET", "/hello?x=1", "200"]])
            #expect(record.requests.first?.number == record.lastRequestNumber && record.lastRequestNumber != nil)
            #expect(record.outcome?.kind == "handshakeCompleted")

            let failure = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused { _ = try await fetch() }
            }
            #expect(failure?.code == .loadSucceeded)
            #expect(failure?.description.contains("GET /hello?x=1 was answered 200") == true, "\(failure?.description ?? "")")
            #expect(failure?.description.contains("the client accepted ats-compliant") == true, "\(failure?.description ?? "")")
        }
    }

    @Test("a client that connects and says nothing is recorded as timed out before its ClientHello; one that connects and closes, as closed without an alert")
    func timeoutAndSilentClose() async throws {
        // Each on a fixture of its own: a client that closes must not race a short handshake timeout (on a loaded
        // machine its close could reach the server after 300 ms, and be recorded as the timeout).
        try await Self.with("ats-compliant", configuration: FixtureConfiguration(handshakeTimeout: .milliseconds(300))) { fixture in
            let cursor = fixture.latestConnectionID
            let silent = try RawConnection(port: fixture.port)
            let timedOut = try await Self.onlyRecord(fixture, after: cursor)
            #expect(timedOut.outcome == .timedOut(phase: .beforeClientHello), "\(timedOut.summary)")
            silent.close()
        }
        try await Self.with("ats-compliant", configuration: FixtureConfiguration(handshakeTimeout: .seconds(600))) { fixture in
            let cursor = fixture.latestConnectionID
            try RawConnection(port: fixture.port).close()
            let closed = try await Self.onlyRecord(fixture, after: cursor)
            #expect(closed.outcome == .closedWithoutAlert(phase: .beforeClientHello), "\(closed.summary)")
        }
    }

    /// The false green of issue 25: URLSession to `NAME.fixtures.test` without the proxy never reaches the fixture (the
    /// name does not resolve), and a DNS failure is not a refusal.
    @Test("expectRefused fails when the load never reached the fixture, naming the error and the proxy")
    func neverReached() async throws {
        try await Self.with("expired") { fixture in
            let session = URLSession(configuration: .ephemeral)
            defer { session.invalidateAndCancel() }
            let failure = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused(wait: .milliseconds(500)) {
                    _ = try await session.data(from: fixture.qualifiedURL)
                }
            }
            #expect(failure?.code == .neverReached)
            let message = failure?.description ?? ""
            #expect(message.contains("never reached expired at localhost:\(fixture.port)"), "\(message)")
            #expect(message.contains("NSURLErrorDomain -1003"), "\(message)")
            #expect(message.contains("FixtureProxy.environment"), "\(message)")
        }
    }

    // MARK: - The proxy seam

    @Test("the connection annotator fills in the CONNECT authority for the peers it knows, and only those")
    func annotator() async throws {
        let proxied = NIOLockedValueBox<Set<Int>>([])
        var configuration = FixtureConfiguration()
        configuration.connectionAnnotator = ConnectionAnnotator { address, port in
            proxied.withLockedValue { $0.contains(port) } && address == "127.0.0.1"
                ? ConnectionRecord.Proxy(authority: "expired.fixtures.test:443") : nil
        }
        try await Self.with("expired", configuration: configuration) { fixture in
            let hello = try HandshakeBytes.clientHello()

            /// Connects (a raw client, whose port is known before it sends anything, as the proxy's own socket is), sends a
            /// ClientHello and waits until the fixture has read it; `registered` runs around that, then it closes.
            func connection(before: (Int) -> Void = { _ in }, after: (Int) -> Void = { _ in }) async throws -> ConnectionRecord {
                let cursor = fixture.latestConnectionID
                let client = try RawConnection(port: fixture.port)
                let port = client.localPort
                before(port)
                client.send(hello)
                _ = await fixture.log.records(after: cursor, until: FixtureServer.deadline(after: .seconds(10))) {
                    $0.first?.clientHello != nil
                }
                after(port)
                client.close()
                return try await Self.onlyRecord(fixture, after: cursor)
            }
            // The proxy knows its socket before the first byte, and forgets it when the tunnel closes.
            let tunnelled = try await connection(before: { port in _ = proxied.withLockedValue { $0.insert(port) } },
                                                 after: { port in _ = proxied.withLockedValue { $0.remove(port) } })
            #expect(tunnelled.proxy == ConnectionRecord.Proxy(authority: "expired.fixtures.test:443"), "\(tunnelled)")
            // Known only after the first bytes: asked again at the close.
            let late = try await connection(after: { port in _ = proxied.withLockedValue { $0.insert(port) } })
            #expect(late.proxy == ConnectionRecord.Proxy(authority: "expired.fixtures.test:443"), "\(late)")
            let direct = try await connection()
            #expect(direct.proxy == nil)
        }
    }
}

/// Each scenario file's `expect.refusal.alerts` held to a real OpenSSL client: `openssl s_client` trusting the built-in
/// CA alone, checking the name `localhost`, with the system's defaults otherwise. Every scenario it refuses ends with an
/// alert the file lists (or one that names no reason); every scenario whose `verify` is not `ok` is refused.
@Suite("Refusal expectations, held to openssl s_client")
struct RefusalExpectationEndToEndTests {
    static let names = ScenarioCatalog.builtIn.scenarios
        .filter { $0.expect.refusal?.alerts.isEmpty == false && $0.expect.trustedRoots == nil && !$0.isCleartext }.map(\.name)

    @Test("the alert a refusing OpenSSL client's handshake ends with is one the scenario file lists", .requires(Tools.openssl),
          arguments: names)
    func alertsMatch(name: String) async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        do {
            try await ConnectionRecordEndToEndTests.with(name) { fixture in
                let cursor = fixture.latestConnectionID
                let result = try await ConnectionRecordEndToEndTests.sClient(fixture)
                let record = try await ConnectionRecordEndToEndTests.onlyRecord(fixture, after: cursor)
                let refused = record.requestCount == 0
                if scenario.expect.verify != "ok" {
                    #expect(refused, "\(name): verify says \(scenario.expect.verify ?? ""), yet s_client was answered: \(record.summary)")
                }
                guard refused else { return }
                #expect(result.status != 0)
                let expected = try #require(scenario.expect.refusal?.alerts)
                let alert = try #require(record.outcome?.alert, "\(name): \(record.summary)")
                // OpenSSL names its reason (ssl_x509err2alert): its alert must be listed, no "names no reason" escape.
                #expect(expected.contains(alert),
                        "\(name): \(record.summary); Scenarios/\(name).json lists \(expected.map(\.description))")
                let judge = LoadJudge(scenario: name, target: "localhost", expectation: scenario.expect.refusal,
                                      judgesAppleErrors: false)
                if case .failure(let why) = judge.refusalShown(by: [record]) {
                    Issue.record(Comment(rawValue: "\(name): s_client's refusal is not at the scenario's step: \(why)"))
                }
            }
        } catch let unsupported as ScenarioUnsupported {
            // ssl-v3, rc4, 3des on an OpenSSL without them: nothing to connect to.
            #expect(scenario.expect.handshake?.requires != nil, "\(name): \(unsupported)")
        }
    }
}

/// A pinning client on another TLS stack: swift-nio-ssl (BoringSSL) from Matrix/, told to pin the `pinned` leaf's key
/// (`MATRIX_PIN_CERTIFICATE`). `make test` builds it (`make matrix-test-clients`); elsewhere the test says how.
@Suite("A pinning client's refusal, recorded")
struct PinningClientRecordTests {
    @Test("swift-nio-ssl pinning the published leaf accepts `pinned`, refuses `pin-rotated-key`, and the fixture records it",
          .enabled(if: MatrixEnvironment.runnable, MatrixEnvironment.skipReason))
    func nioSSLPinning() async throws {
        let client = MatrixEnvironment.swiftClients.appendingPathComponent("matrix-nio-ssl").path
        try #require(MatrixEnvironment.built("matrix-nio-ssl"), "\(client) is missing: `make matrix-test-clients` builds it")
        try await ConnectionRecordEndToEndTests.with("pinned") { pinned in
            try await ConnectionRecordEndToEndTests.with("pin-rotated-key") { rotated in
                let ca = try External.pemFile([pinned.caCertificate], name: "ca.pem")
                let pin = try External.pemFile([try #require(pinned.chain.first)], name: "pinned-leaf.pem")

                /// Runs the client against `fixture`: whether it accepted (exit 0), and its one line.
                func run(_ fixture: FixtureServer) async throws -> (accepted: Bool, line: String) {
                    let result = try await External.run(["env", "MATRIX_PIN_CERTIFICATE=\(pin)", client, ca, "localhost",
                                                         "\(fixture.port)"], timeout: 60)
                    return (result.status == 0, result.stdout)
                }
                let control = try await run(pinned)
                #expect(control.accepted, "the pinning client must accept the leaf it pins: \(control.line)")

                let cursor = rotated.latestConnectionID
                try await rotated.expectRefused {
                    let answer = try await run(rotated)
                    if !answer.accepted { throw ConnectionRecordEndToEndTests.ClientFailed(output: answer.line) }
                }
                let record = try await ConnectionRecordEndToEndTests.onlyRecord(rotated, after: cursor)
                // BoringSSL ends a handshake its verification callback failed with certificate_unknown: no finer reason.
                #expect(record.outcome == .alertReceived(.certificateUnknown, phase: .afterServerFlight), "\(record.summary)")
            }
        }
    }
}
