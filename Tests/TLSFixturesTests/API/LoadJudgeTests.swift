import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixturesWire

/// The judge as values: records and thrown errors in, a verdict out. Every way a load can look refused (or accepted)
/// without being so, each one a case that failed the old judge or a rule it must keep: issue 34's numbered cases, and
/// Apple-shaped errors, which no Linux run can produce.
@Suite("LoadJudge: a refusal proven by difference, at the scenario's step, on records nobody else made")
struct LoadJudgeTests {
    static let date = Date(timeIntervalSince1970: 1_780_000_000)

    static let expired = RefusalExpectation(
        control: "ats-compliant", step: .certificate, alerts: [.certificateExpired],
        apple: .init(error: ATSLikelyError(urlErrorCode: -1202, urlErrorName: "NSURLErrorServerCertificateUntrusted",
                                           streamErrorCode: -9814, streamErrorName: "errSSLCertExpired"),
                     source: "a log"))
    static let pinRotated = RefusalExpectation(control: "pinned", step: .afterHandshake, alerts: [.certificateUnknown])
    static let http = RefusalExpectation(
        control: "ats-compliant", step: .beforeConnecting,
        apple: .init(error: ATSLikelyError(urlErrorCode: -1022,
                                           urlErrorName: "NSURLErrorAppTransportSecurityRequiresSecureConnection")))
    static let tls10 = RefusalExpectation(control: "ats-compliant", step: .negotiation, alerts: [.protocolVersion])
    static let wrongHost = RefusalExpectation(control: "ats-compliant", step: .certificate, alerts: [.badCertificate],
                                              lateCheck: .init(clients: "libcurl", source: "curl's ossl_verifyhost"))

    static func judge(_ scenario: String = "expired", _ expectation: RefusalExpectation? = expired,
                      apple: Bool = false) -> LoadJudge {
        LoadJudge(scenario: scenario, target: "localhost:9831", expectation: expectation, judgesAppleErrors: apple)
    }

    static func record(_ outcome: ConnectionRecord.Outcome?, id: Int = 1, peer: String = "127.0.0.1:50001",
                       ended: Bool = true, requests: [Int] = [], hello: Bool = true) -> ConnectionRecord {
        ConnectionRecord(id: id, acceptedAt: date, endedAt: ended ? date : nil, peer: peer,
                         clientHello: hello ? Self.hello : nil, outcome: outcome,
                         requests: requests.map { .init(method: "GET", path: "/", status: 200, number: $0) })
    }

    static let hello = ConnectionRecord.ClientHello(serverName: "expired.fixtures.test", legacyVersion: "TLSv1.2",
                                                    supportedVersions: ["TLSv1.3"], cipherSuites: [], groups: [],
                                                    signatureAlgorithms: [], alpn: [], extensions: [])
    static let completed = ConnectionRecord.Outcome.handshakeCompleted(
        .init(protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", group: "x25519", clientCertificate: false))
    static let certificateExpired = ConnectionRecord.Outcome.alertReceived(.certificateExpired, phase: .afterServerFlight)
    static let untrustedError = URLError(.serverCertificateUntrusted)
    static let dnsFailure = URLError(.cannotFindHost)
    static let anyTLSError = NSError(domain: "OpenSSL", code: 1, userInfo: nil)

    /// The differential check from two loads' evidence.
    static func differential(control: [ConnectionRecord], controlThrew: Error? = nil, scenario: [ConnectionRecord],
                             scenarioThrew: Error? = anyTLSError, name: String = "expired",
                             expectation: RefusalExpectation? = expired, apple: Bool = false)
        -> Result<RefusalVerdict, LoadExpectationFailure>
    {
        LoadJudge.differential(
            control: .init(scenario: expectation?.control ?? "ats-compliant", target: "localhost:9800",
                           thrown: controlThrew, records: control),
            scenario: .init(scenario: name, target: "localhost:9831", thrown: scenarioThrew, records: scenario),
            expectation: expectation, judgesAppleErrors: apple)
    }

    static let controlServed = [record(completed, requests: [1])]

    // MARK: The differential check

    @Test("passes when the same client accepts the control and refuses the scenario at its step, for its reason")
    func differentialPasses() throws {
        let verdict = try Self.differential(control: Self.controlServed, scenario: [Self.record(Self.certificateExpired)])
            .get()
        #expect(verdict.step == .certificate && verdict.notes.isEmpty, "\(verdict)")
        #expect(verdict.description.contains("certificate_expired(45)") && verdict.description.contains("GET / was answered"))
        // A close after the server's certificate, without an alert, is a certificate refusal too; so is an alert that
        // names no reason (Apple's TLS sends certificate_unknown(46), docs/apple-evidence.md §3).
        _ = try Self.differential(control: Self.controlServed,
                                  scenario: [Self.record(.closedWithoutAlert(phase: .afterServerFlight))]).get()
        _ = try Self.differential(control: Self.controlServed,
                                  scenario: [Self.record(.alertReceived(.certificateUnknown, phase: .afterServerFlight))])
            .get()
    }

    /// Issue 34, case 2: `openssl s_client` verifies nothing, completes the handshake with `expired` and sends no
    /// request; the load then throws. The old judge counted that as a refusal of any scenario.
    @Test("a client that verifies nothing and sends no request refuses nothing: it fails on the control half first")
    func verifiesNothing() throws {
        let closedAfterHandshake = [Self.record(Self.completed)]
        let failure = try #require(Self.differential(control: closedAfterHandshake,
                                                     scenario: closedAfterHandshake).failure)
        #expect(failure.code == .controlRefused, "\(failure)")
        #expect(failure.reason.contains("your client refuses the control too"), "\(failure)")
        #expect(failure.reason.contains("did not refuse the server at the certificate"), "\(failure)")
        #expect(failure.fix?.contains("must send a request") == true, "\(String(describing: failure.fix))")
        // Even with the control accepted, a completed handshake is no certificate refusal.
        let completed = try #require(Self.differential(control: Self.controlServed, scenario: closedAfterHandshake)
            .failure)
        #expect(completed.code == .refusedForAnotherReason && completed.reason.contains("completed the handshake"),
                "\(completed)")
    }

    /// Issue 34, case 1: plain URLSession (no pinning) on `pin-rotated-key` by 127.0.0.1; libcurl refused the host
    /// name after the handshake. With its control `pinned` loaded the same way, the same refusal shows on both.
    @Test("a client that refuses for a reason of its own refuses the control too: the failure says which half")
    func hostNameRefusalOnBoth() throws {
        let closed = [Self.record(Self.completed)]
        let failure = try #require(Self.differential(control: closed, scenario: closed, name: "pin-rotated-key",
                                                     expectation: Self.pinRotated).failure)
        #expect(failure.code == .controlRefused, "\(failure)")
        #expect(failure.reason.contains("a client that refuses the control proves nothing"), "\(failure)")
        // A client that does not trust the kit's CA: told how to fix it.
        let untrusted = [Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))]
        let notTrusted = try #require(Self.differential(control: untrusted, controlThrew: Self.anyTLSError,
                                                        scenario: [Self.record(Self.certificateExpired)]).failure)
        #expect(notTrusted.code == .controlRefused && notTrusted.reason.contains("unknown_ca(48)"), "\(notTrusted)")
        #expect(notTrusted.fix?.contains("tls-fixtures ca install") == true)
    }

    @Test("a client that accepts the scenario is told what that means at the scenario's step")
    func acceptedScenario() throws {
        let failure = try #require(Self.differential(control: Self.controlServed, scenario: Self.controlServed,
                                                     scenarioThrew: nil, name: "pin-rotated-key",
                                                     expectation: Self.pinRotated).failure)
        #expect(failure.code == .accepted, "\(failure)")
        #expect(failure.reason.contains("your client accepted pin-rotated-key") && failure.reason.contains("no pin was "
            + "checked"), "\(failure)")
    }

    @Test("a pin scenario may be refused after the handshake without a request; a certificate scenario may not")
    func stepsDiffer() throws {
        let closed = [Self.record(Self.completed)]
        _ = try Self.differential(control: Self.controlServed, scenario: closed, name: "pin-rotated-key",
                                  expectation: Self.pinRotated).get()
        #expect(Self.differential(control: Self.controlServed, scenario: closed).failure?.code
            == .refusedForAnotherReason)
        // A scenario whose file names clients that check after the handshake counts it, with a note naming them.
        let late = try Self.differential(control: Self.controlServed, scenario: closed, name: "wrong-host",
                                         expectation: Self.wrongHost).get()
        #expect(late.notes.contains { $0.contains("libcurl") && $0.contains("ossl_verifyhost") }, "\(late.notes)")
        // A protocol scenario: the server's alert before its flight, or the client's alert about the version.
        let serverRefused = Self.record(.alertSent(.protocolVersion, reason: "unsupported protocol",
                                                   phase: .afterClientHello))
        _ = try Self.differential(control: Self.controlServed, scenario: [serverRefused], name: "tls-v1-0",
                                  expectation: Self.tls10).get()
        // … but not a certificate objection.
        let certificate = Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))
        #expect(Self.differential(control: Self.controlServed, scenario: [certificate], name: "tls-v1-0",
                                  expectation: Self.tls10).failure?.code == .refusedForAnotherReason)
    }

    @Test("a timed-out or early-closed connection refuses nothing, at any step")
    func timedOutIsNoRefusal() throws {
        for phase in [ConnectionRecord.Phase.beforeClientHello, .afterClientHello, .afterServerFlight] {
            let failure = try #require(Self.differential(control: Self.controlServed,
                                                         scenario: [Self.record(.timedOut(phase: phase))]).failure,
                                       "timed out \(phase)")
            #expect(failure.code == .refusedForAnotherReason, "\(failure)")
            let pin = Self.differential(control: Self.controlServed, scenario: [Self.record(.timedOut(phase: phase))],
                                        name: "pin-rotated-key", expectation: Self.pinRotated)
            #expect(pin.failure?.code == .refusedForAnotherReason, "pin, timed out \(phase)")
        }
        let early = try #require(Self.differential(
            control: Self.controlServed, scenario: [Self.record(.closedWithoutAlert(phase: .afterClientHello))]).failure)
        #expect(early.reason.contains("never saw the server's certificate"), "\(early)")
    }

    @Test("another reason's alert fails, naming both; a scenario without a refusal cannot be expected refused")
    func otherReasons() throws {
        let unknownCA = [Self.record(.alertReceived(.unknownCA, phase: .afterServerFlight))]
        let failure = try #require(Self.differential(control: Self.controlServed, scenario: unknownCA).failure)
        #expect(failure.code == .refusedForAnotherReason && failure.reason.contains("not for expired's reason"))
        #expect(failure.reason.contains("unknown_ca(48)") && failure.reason.contains("certificate_expired(45)"))
        let none = try #require(Self.differential(control: Self.controlServed, scenario: unknownCA,
                                                  name: "ats-compliant", expectation: nil).failure)
        #expect(none.code == .noRefusal && none.fix?.contains("expectAccepted") == true, "\(none)")
    }

    @Test("a fixture of its own that a second machine also reached is ambiguous")
    func differentialAmbiguity() throws {
        let two = [Self.record(Self.certificateExpired),
                   Self.record(Self.certificateExpired, id: 2, peer: "192.0.2.7:4000")]
        #expect(Self.differential(control: Self.controlServed, scenario: two).failure?.code == .ambiguous)
        // Two connections from the client's own address, both refusing: a client that retried.
        let retried = [Self.record(Self.certificateExpired), Self.record(Self.certificateExpired, id: 2,
                                                                        peer: "127.0.0.1:50002")]
        _ = try Self.differential(control: Self.controlServed, scenario: retried).get()
        // An opened-and-closed connection that said nothing (a client racing IPv4 and IPv6) carries no evidence.
        let raced = [Self.record(.closedWithoutAlert(phase: .beforeClientHello), hello: false),
                     Self.record(Self.certificateExpired, id: 2)]
        _ = try Self.differential(control: Self.controlServed, scenario: raced).get()
    }

    // MARK: Apple's errors (values: no Apple client runs here)

    /// Issue 34, case 6: modern Apple clients report an expired certificate as -1202 (-9814 underneath), or -1200/-9802
    /// under ATS, where the scenario files said -1201. A code of the same family is a note, never a failure alone.
    @Test("an Apple TLS error of the step's family is a note when the record proves the refusal; outside it, a failure")
    func appleFamily() throws {
        let refused = [Self.record(Self.certificateExpired)]
        for code in [-1200, -1201, -1202, -1203] {
            let error = NSError(domain: NSURLErrorDomain, code: code)
            let verdict = try Self.differential(control: Self.controlServed, scenario: refused, scenarioThrew: error,
                                                apple: true).get()
            #expect(verdict.notes.isEmpty == (code == -1202), "\(code): \(verdict.notes)")
            if code != -1202 {
                #expect(verdict.notes.first?.contains("not a failure") == true && verdict.notes.first?.contains(
                    "NSURLErrorDomain \(code)") == true, "\(verdict.notes)")
            }
        }
        // A delegate that cancels the server-trust challenge (pinning code does): -999.
        let cancelled = NSError(domain: NSURLErrorDomain, code: NSURLErrorCancelled)
        _ = try Self.differential(control: Self.controlServed, scenario: [Self.record(Self.completed)],
                                  scenarioThrew: cancelled, name: "pin-rotated-key", expectation: Self.pinRotated,
                                  apple: true).get()
        // A timeout is not a TLS refusal, whatever the fixture saw.
        let timeout = NSError(domain: NSURLErrorDomain, code: NSURLErrorTimedOut)
        let failure = try #require(Self.differential(control: Self.controlServed, scenario: refused,
                                                     scenarioThrew: timeout, apple: true).failure)
        #expect(failure.code == .refusedForAnotherReason && failure.reason.contains("-1001"), "\(failure)")
        // Off Apple platforms the same error is libcurl's and not judged by Apple's families.
        _ = try Self.differential(control: Self.controlServed, scenario: refused, scenarioThrew: timeout, apple: false)
            .get()
    }

    /// Issue 34, case 5: ATS refuses `http://` with -1022 before connecting, so no record can ever show it.
    @Test("http: -1022 with no connection is the one refusal proven by the client's error, beside an accepted control")
    func httpBeforeConnecting() throws {
        let ats = NSError(domain: NSURLErrorDomain, code: NSURLErrorAppTransportSecurityRequiresSecureConnection)
        let verdict = try Self.differential(control: Self.controlServed, scenario: [], scenarioThrew: ats, name: "http",
                                            expectation: Self.http, apple: true).get()
        #expect(verdict.step == .beforeConnecting && verdict.refusalEvidence.contains("-1022"), "\(verdict)")
        // Any other error before connecting proves nothing.
        let other = try #require(Self.differential(control: Self.controlServed, scenario: [],
                                                   scenarioThrew: Self.anyTLSError, name: "http",
                                                   expectation: Self.http, apple: true).failure)
        #expect(other.code == .refusedForAnotherReason && other.reason.contains("only App Transport Security's -1022"))
        // Loaded and answered (FoundationNetworking has no ATS): accepted, and told why.
        let cleartext = [Self.record(.cleartext, requests: [1], hello: false)]
        let accepted = try #require(Self.differential(control: Self.controlServed, scenario: cleartext,
                                                      scenarioThrew: nil, name: "http", expectation: Self.http).failure)
        #expect(accepted.code == .accepted && accepted.reason.contains("App Transport Security"), "\(accepted)")
        // The control must still be accepted: -1022 from a client that reaches no fixture at all proves nothing.
        let unreached = try #require(Self.differential(control: [], controlThrew: Self.dnsFailure, scenario: [],
                                                       scenarioThrew: ats, name: "http", expectation: Self.http,
                                                       apple: true).failure)
        #expect(unreached.code == .controlRefused && unreached.reason.contains("never reached"), "\(unreached)")
    }

    // MARK: The single-fixture checks

    /// Issue 34, case 3: a load refused by the proxy (a mistyped host) while another test's client refused the shared
    /// fixture; and a DNS failure while another client's connection arrived.
    @Test("a load whose error says it made no connection never counts another client's record")
    func othersRecordsNotCounted() throws {
        let other = [Self.record(Self.certificateExpired, id: 7)]
        let curl403 = NSError(domain: NSURLErrorDomain, code: -1,
                              userInfo: [NSLocalizedDescriptionKey: "CONNECT tunnel failed, response 403"])
        for thrown in [curl403, Self.dnsFailure as Error, URLError(.cannotConnectToHost) as Error,
                       NSError(domain: "kCFErrorDomainCFNetwork", code: 310)] {
            let failure = try #require(Self.judge().refused(thrown: thrown, records: other), "\(thrown)")
            #expect(failure.code == .neverReached, "\(failure)")
            #expect(failure.reason.contains("another client's connection arrived, not counted: #7"), "\(failure)")
        }
        let proxied = try #require(Self.judge().refused(thrown: curl403, records: []))
        #expect(proxied.fix?.contains("the runner's proxy refused the CONNECT") == true)
    }

    @Test("several connections in a shared fixture's window are ambiguous, named; one that completed is unproven")
    func singleFixtureRules() throws {
        #expect(Self.judge().refused(thrown: Self.anyTLSError, records: [Self.record(Self.certificateExpired)]) == nil,
                "one refusing connection at the step passes")
        let two = [Self.record(Self.certificateExpired, id: 3), Self.record(Self.certificateExpired, id: 4,
                                                                            peer: "127.0.0.1:50002")]
        let ambiguous = try #require(Self.judge().refused(thrown: Self.anyTLSError, records: two))
        #expect(ambiguous.code == .ambiguous && ambiguous.reason.contains("#3") && ambiguous.reason.contains("#4"))
        #expect(ambiguous.fix?.contains("expectRefused(\"NAME\") { url in") == true)
        // A pin scenario too: on one fixture, a close after the handshake is a pin, a host name, or nothing at all.
        let closed = [Self.record(Self.completed)]
        let unproven = try #require(Self.judge("pin-rotated-key", Self.pinRotated).refused(thrown: Self.anyTLSError,
                                                                                         records: closed))
        #expect(unproven.code == .unproven && unproven.fix?.contains("expectRefused(\"pin-rotated-key\")") == true)
        #expect(Self.judge().refused(thrown: Self.anyTLSError, records: closed)?.code == .unproven)
        // Timed out: no refusal, on one fixture as on two.
        #expect(Self.judge().refused(thrown: Self.anyTLSError, records: [Self.record(.timedOut(phase: .afterServerFlight))])?
            .code == .refusedForAnotherReason)
        let open = try #require(Self.judge().refused(thrown: Self.anyTLSError, records: [Self.record(Self.completed,
                                                                                                   ended: false)]))
        #expect(open.code == .stillOpen)
    }

    /// Issue 34, case 4: two `expectAccepted` in a row on one URLSession; the second reuses the first's kept-alive
    /// connection, opened before its cursor.
    @Test("a request on a connection kept alive from before the cursor counts for expectAccepted")
    func keepAlive() throws {
        let cursor = ConnectionCursor(connection: 1, request: 1)
        let reused = [Self.record(Self.completed, ended: false, requests: [1, 2])]
        #expect(Self.judge().accepted(thrown: nil, records: reused, cursor: cursor) == nil)
        // … but not one answered before it: the load's answer came from somewhere else (a cache, say).
        let old = [Self.record(Self.completed, ended: false, requests: [1])]
        #expect(Self.judge().accepted(thrown: nil, records: old, cursor: cursor)?.code == .loadSucceeded)
        #expect(cursor.window(old).isEmpty)
    }

    /// Issue 34, case 3 for acceptance: a load answered by the catalog's `ats-compliant` on another port, beside a
    /// parallel test's real load of this fixture.
    @Test("the answer's stamp decides which fixture answered: another port's, an old request, or none fails")
    func stampedAnswers() throws {
        let cursor = ConnectionCursor(connection: 4, request: 9)
        let parallel = [Self.record(Self.completed, id: 5, requests: [10])]
        func response(_ stamp: String?) -> (Data, URLResponse) {
            let headers = stamp.map { [ResponseStamp.header: $0] } ?? [:]
            let url = URL(string: "https://localhost:9831/")!
            return (Data(), HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!)
        }
        let judge = Self.judge()
        #expect(judge.accepted(thrown: nil, value: response("9831/5/10"), records: parallel, cursor: cursor,
                               port: 9831) == nil)
        let elsewhere = try #require(judge.accepted(thrown: nil, value: response("9800/1/3"), records: parallel,
                                                    cursor: cursor, port: 9831))
        #expect(elsewhere.code == .loadSucceeded && elsewhere.reason.contains("port 9800"), "\(elsewhere)")
        let cached = try #require(judge.accepted(thrown: nil, value: response("9831/2/4"), records: parallel,
                                                 cursor: cursor, port: 9831))
        #expect(cached.reason.contains("a cache"), "\(cached)")
        let mock = try #require(judge.accepted(thrown: nil, value: response(nil), records: parallel, cursor: cursor,
                                               port: 9831))
        #expect(mock.code == .loadSucceeded && mock.reason.contains(ResponseStamp.header), "\(mock)")
        // Without a response to read, two answering connections cannot be told apart.
        let two = parallel + [Self.record(Self.completed, id: 6, requests: [11])]
        #expect(judge.accepted(thrown: nil, value: 42, records: two, cursor: cursor, port: 9831)?.code == .ambiguous)
        #expect(ResponseStamp("9831/5/10") == ResponseStamp(port: 9831, connection: 5, request: 10))
        #expect(ResponseStamp("9831/5") == nil && ResponseStamp("a/b/c") == nil)
    }

    @Test("an outcome this version cannot read, and bytes that are not TLS, count neither way")
    func unreadable() throws {
        let newer = Self.record(.unrecognized(kind: "exploded"))
        let refused = try #require(Self.judge().refused(thrown: Self.anyTLSError, records: [newer]))
        #expect(refused.code == .unrecognizedOutcome && refused.reason.contains("\"exploded\""), "\(refused)")
        #expect(refused.fix?.contains("--version") == true)
        #expect(Self.judge().accepted(thrown: Self.anyTLSError, records: [newer])?.code == .unrecognizedOutcome)
        #expect(Self.differential(control: Self.controlServed, scenario: [newer]).failure?.code == .unrecognizedOutcome)
        let plain = Self.record(.notTLS(firstBytes: "GET / HTTP/1.1", reason: "http request"), hello: false)
        let notTLS = try #require(Self.judge().refused(thrown: Self.anyTLSError, records: [plain]))
        #expect(notTLS.code == .notTLS && notTLS.reason.contains("plain HTTP (a GET request)"), "\(notTLS)")
        #expect(notTLS.fix?.contains("https://") == true)
    }

    @Test("a refusal expectation names its control and step; lateCheck belongs to the certificate step only")
    func expectationDecoding() throws {
        let decoder = JSONDecoder()
        #expect(throws: DecodingError.self) { try decoder.decode(RefusalExpectation.self, from: Data("{}".utf8)) }
        #expect(throws: DecodingError.self) {
            try decoder.decode(RefusalExpectation.self, from: Data(#"{"control": "ats-compliant"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try decoder.decode(RefusalExpectation.self, from: Data(#"{"control": "pinned", "step": "afterHandshake", "lateCheck": {"clients": "x", "source": "y"}}"#.utf8))
        }
        let full = try decoder.decode(RefusalExpectation.self, from: Data(#"""
            {"control": "ats-compliant", "step": "certificate", "alerts": ["certificate_expired"],
             "apple": {"urlErrorCode": -1202, "urlErrorName": "NSURLErrorServerCertificateUntrusted", "source": null}}
            """#.utf8))
        #expect(full.apple?.source == nil && full.apple?.error.urlErrorCode == -1202)
        #expect(full.apple?.description.contains("a guess: no source") == true)
        let again = try decoder.decode(RefusalExpectation.self, from: JSONEncoder().encode(full))
        #expect(again == full)
    }
}

extension Result {
    /// The failure, or nil.
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
