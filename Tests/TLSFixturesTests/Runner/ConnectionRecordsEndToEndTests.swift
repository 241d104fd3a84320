import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures
import TLSFixturesClient

/// Issue 25, part 2: what a fixture of a real `serve` saw, read over the control API by `TLSFixturesClient`, with real
/// clients (curl, and URLSession in a program that links TLSFixturesClient alone) loading through the real proxy.
@Suite("connection records through serve, end to end", .serialized)
struct ConnectionRecordsEndToEndTests {
    /// curl's exit code for a certificate it refused (CURLE_PEER_FAILED_VERIFICATION, libcurl-errors(3)).
    static let curlRefusedCertificate: Int32 = 60

    @Test("curl --proxy: records name the proxy's authority, not a direct load's; a wait returns its load; catalog",
          .requires(Tools.curl))
    func recordsThroughTheProxy() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let remote = RemoteFixtures(runner: runner.runnerURL)
        let fixture = try await remote.start("ats-compliant")
        let ca = try TestEnvironment.file(fixture.caCertificatePEM, name: "ca.pem")
        // A proxy setting of the developer's own must not decide which way curl goes.
        let environment = ["no_proxy": "", "NO_PROXY": "", "https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "",
                           "ALL_PROXY": ""]
        #expect(try await fixture.latestConnectionID() == 0)
        #expect(try await fixture.connections().isEmpty)

        // A wait asked before the load (curl, so the test's own process holds no connection open), then the load.
        let waiting = try Subprocess.launch(
            ["curl", "-sS", runner.url + "/api/fixtures/\(fixture.id)/connections?after=0&wait=20"])
        let authority = "ats-compliant.fixtures.test:\(fixture.port)"
        let loaded = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ca, "--proxy", runner.url,
                                         fixture.qualifiedURL.absoluteString], environment: environment)
        #expect(loaded.status == 0, "\(loaded.combined)")
        let waited = await waiting.finished(timeout: 60)
        let list = try FixtureAPI.decoder().decode(ConnectionList.self, from: Data(waited.stdout.utf8))
        let proxied = try #require(list.connections.first, "the wait returned no record: \(waited.stdout)")
        #expect(proxied.proxy?.authority == authority, "\(proxied)")
        #expect(proxied.clientHello?.serverName == "ats-compliant.fixtures.test")
        #expect(proxied.requests.first.map { [$0.method, $0.path, "\($0.status)"] } == ["GET", "/", "200"])

        // Straight to the port: no proxy in the record.
        let cursor = try await fixture.latestConnectionID()
        let direct = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ca, fixture.url.absoluteString],
                                        environment: environment)
        #expect(direct.status == 0, "\(direct.combined)")
        let directRecords = try await fixture.connections(after: cursor, wait: 10)
        #expect(directRecords.count == 1 && directRecords.first?.proxy == nil, "\(directRecords)")
        #expect(directRecords.first?.requestCount == 1)

        // The catalog's own expired, on its fixed port: curl refuses it with certificate_expired(45), the alert
        // OpenSSL sends for X509_V_ERR_CERT_HAS_EXPIRED (ssl/statem/statem_lib.c, ssl_x509err2alert).
        let before = try await remote.connections(scenario: "expired").latestID
        let expiredURL = "https://expired.fixtures.test:\(runner.base + 31)/"
        let refused = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", ca, "--proxy", runner.url, expiredURL],
            environment: environment)
        #expect(refused.status == Self.curlRefusedCertificate, "\(refused.combined)")
        let catalog = try await remote.connections(scenario: "expired", after: before, wait: 10)
        let record = try #require(catalog.connections.first, "\(catalog)")
        #expect(record.outcome?.alert == .certificateExpired && record.requestCount == 0, "\(record.summary)")
        #expect(record.proxy?.authority == "expired.fixtures.test:\(runner.base + 31)")
        #expect(catalog.latestID == record.id)

        // The same record at a terminal: `tls-fixtures connections`, with the judgement of curl's offer against ATS.
        // curl offered TLS 1.0 (its supported_versions, as recorded), below ATS's TLS 1.2 minimum, so it falls short.
        let shown = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", "expired", "--runner", runner.url, "--after", "\(before)"])
        #expect(shown.status == 0, "\(shown.combined)")
        #expect(shown.stdout.contains("#\(record.id) 127.0.0.1:"), "\(shown.stdout)")
        #expect(shown.stdout.contains("through the proxy for expired.fixtures.test:\(runner.base + 31)"))
        #expect(shown.stdout.contains("the client sent certificate_expired(45) after the server's certificate"))
        #expect(shown.stdout.contains("ATS: the client's offer does not meet ATS"), "\(shown.stdout)")
        struct Shown: Decodable {
            struct Entry: Decodable { var record: ConnectionRecord; var atsOffer: Offer? }
            struct Offer: Decodable { var meetsATS: Bool; var versionsBelowMinimum: [String] }
            var connections: [Entry]
            var latestID: Int
        }
        let json = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", "expired", "--runner", runner.url, "--after", "\(before)", "--json"])
        let document = try FixtureAPI.decoder().decode(Shown.self, from: Data(json.stdout.utf8))
        #expect(document.connections.map(\.record) == [record] && document.latestID == record.id, "\(json.stdout)")
        #expect(document.connections.first?.atsOffer?.meetsATS == false)
        #expect(document.connections.first?.atsOffer?.versionsBelowMinimum.contains("TLSv1.0") == true)
        let missing = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", "no-such-scenario", "--runner", runner.url])
        #expect(missing.status != 0, "\(missing.combined)")
        #expect(missing.stderr.contains("no scenario \"no-such-scenario\""), "\(missing.combined)")
        #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        let misspelt = try await TestEnvironment.tlsFixturesAwaiting(["connections", "expird", "--runner", runner.url])
        #expect(misspelt.status == 1 && misspelt.stderr.contains("did you mean \"expired\"?"), "\(misspelt.combined)")
        for (bad, option) in [(["--wait", "31"], "--wait"), (["--after=-1"], "--after")] {
            let refused = try await TestEnvironment.tlsFixturesAwaiting(
                ["connections", "expired", "--runner", runner.url] + bad)
            #expect(refused.status == 1 && refused.stderr.contains(option), "\(bad): \(refused.combined)")
        }

        // Plain HTTP through the proxy (an absolute-form GET, forwarded): the record names the host the client asked.
        let http = try await remote.start("http")
        let plain = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--proxy", runner.url, http.qualifiedURL.absoluteString],
            environment: environment)
        #expect(plain.status == 0, "\(plain.combined)")
        let forwarded = try await http.connections(after: 0, wait: 10)
        #expect(forwarded.first?.proxy?.authority == "http.fixtures.test:\(http.port)", "\(forwarded)")
        #expect(forwarded.first?.requests.first?.status == 200, "\(forwarded)")
        // `connections --json` for it: every key present, atsOffer and clientHello null (no TLS, so no offer).
        let httpJSON = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", http.id, "--runner", runner.url, "--json"])
        #expect(httpJSON.status == 0, "\(httpJSON.combined)")
        let httpDocument = try #require(try JSONSerialization.jsonObject(with: Data(httpJSON.stdout.utf8)) as? [String: Any])
        #expect(Set(httpDocument.keys) == ["connections", "latestID", "stopped"], "\(httpJSON.stdout)")
        let httpEntry = try #require((httpDocument["connections"] as? [[String: Any]])?.first, "\(httpJSON.stdout)")
        #expect(Set(httpEntry.keys) == ["record", "atsOffer"] && httpEntry["atsOffer"] is NSNull, "\(httpJSON.stdout)")
        let httpRecord = try #require(httpEntry["record"] as? [String: Any])
        #expect(Set(httpRecord.keys) == ["id", "acceptedAt", "endedAt", "peer", "proxy", "clientHello", "outcome",
                                         "alertAfterHandshake", "requests", "requestCount", "lastRequestNumber"],
                "\(httpJSON.stdout)")
        #expect(httpRecord["clientHello"] is NSNull && httpRecord["alertAfterHandshake"] is NSNull, "\(httpJSON.stdout)")

        // Names the runner does not serve here are 404s that say so; a wait over the limit is a 400 naming it.
        let unknown = try await runner.api("GET", "/api/scenarios/no-such-scenario/connections")
        #expect(unknown.status == 404 && unknown.error?.error.contains("no scenario") == true, "\(unknown.text)")
        let notNamed = try await runner.api("GET", "/api/scenarios/wrong-host/connections")
        #expect(notNamed.status == 404 && notNamed.error?.error.contains("does not serve") == true, "\(notNamed.text)")
        let tooLong = try await runner.api("GET", "/api/fixtures/\(fixture.id)/connections?wait=3600")
        #expect(tooLong.status == 400 && tooLong.error?.field == "wait", "\(tooLong.text)")
        // Teardown reads a stopped fixture's records: DELETE, then they are still there, marked stopped and final.
        let kept = try await fixture.connections()
        await fixture.stop()
        #expect(try await runner.api("GET", "/api/fixtures/\(fixture.id)").status == 404)
        let stopped = try await runner.api("GET", "/api/fixtures/\(fixture.id)/connections?wait=20")
        #expect(stopped.status == 200, "\(stopped.text)")
        let stoppedList = try FixtureAPI.decoder().decode(ConnectionList.self, from: Data(stopped.text.utf8))
        #expect(stoppedList.stopped?.reason == "it was deleted", "\(stopped.text)")
        #expect(stoppedList.connections.map(\.id) == kept.map(\.id) && stoppedList.connections.count >= 2, "\(stopped.text)")
        #expect(stoppedList.connections.allSatisfy { $0.endedAt != nil }, "\(stopped.text)")
        #expect(try await fixture.connections().map(\.id) == kept.map(\.id), "RemoteFixture reads them after its stop()")
        let stoppedShown = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", fixture.id, "--runner", runner.url])
        #expect(stoppedShown.status == 0, "\(stoppedShown.combined)")
        #expect(stoppedShown.stdout.contains("\(fixture.id) has stopped (it was deleted"), "\(stoppedShown.stdout)")
        #expect(stoppedShown.stdout.contains("GET / was answered 200"), "\(stoppedShown.stdout)")
        let stoppedJSON = try await TestEnvironment.tlsFixturesAwaiting(
            ["connections", fixture.id, "--runner", runner.url, "--json"])
        let stoppedDocument = try #require(try JSONSerialization.jsonObject(with: Data(stoppedJSON.stdout.utf8)) as? [String: Any])
        #expect(Set(stoppedDocument.keys) == ["connections", "latestID", "stopped"], "\(stoppedJSON.stdout)")
        #expect((stoppedDocument["stopped"] as? [String: Any])?["reason"] as? String == "it was deleted")
        #expect(httpDocument["stopped"] is NSNull, "a running fixture: null")

        // A name that never was here is not called stopped; an id shaped right but never given says so.
        let typo = try await TestEnvironment.tlsFixturesAwaiting(["connections", "nosuch", "--runner", runner.url])
        #expect(typo.status != 0 && !typo.stderr.contains("stopped"), "\(typo.combined)")
        #expect(typo.stderr.contains("\"nosuch\" is not a started fixture's id"), "\(typo.combined)")
        let never = try await runner.api("GET", "/api/fixtures/0123456789abcdef0123/connections")
        #expect(never.status == 404, "\(never.text)")
        #expect(never.error?.error.contains("no fixture \"0123456789abcdef0123\" was started by this runner") == true,
                "\(never.text)")
        // Renewing the stopped one says it stopped, and when.
        let renew = try await runner.api("POST", "/api/fixtures/\(fixture.id)/renew", json: "{}")
        #expect(renew.status == 404 && renew.error?.error.contains("has stopped (it was deleted") == true, "\(renew.text)")
    }

    /// The new user: a program that links TLSFixturesClient alone, on Linux, where /etc/hosts names nothing
    /// under fixtures.test and libcurl trusts the built-in CA (a private mount namespace).
    @Test("URLSession on Linux: expectRefused passes only when the fixture saw the refusal, and says why otherwise",
          .enabled(if: ProxyEndToEndTests.namespace == nil,
                   Comment(rawValue: ProxyEndToEndTests.namespace ?? "")))
    func clientAssertions() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let ca = try TestEnvironment.file(try runner.store.ca().certificate.pem, name: "ca.pem")
        let check = TestEnvironment.productsDirectory.appendingPathComponent("tls-fixtures-client-check").path
        var environment = ProcessInfo.processInfo.environment
        environment["TLS_FIXTURES_URL"] = runner.url
        for variable in ["https_proxy", "http_proxy", "HTTPS_PROXY", "HTTP_PROXY", "no_proxy", "NO_PROXY"] {
            environment[variable] = nil
        }
        struct Outcome: Decodable { var judgement: String?; var error: String? }
        func run(_ arguments: [String]) async throws -> (status: Int32, outcome: Outcome, output: String) {
            let result = try await ProxyEndToEndTests.isolated(
                [check] + arguments, caFile: ca, environment: environment)
            return (result.status, try JSONDecoder().decode(Outcome.self, from: Data(result.stdout.utf8)),
                    result.combined)
        }

        // Refused for its reason (libcurl sends certificate_expired), and accepted, both through the proxy.
        let expired = try await run(["expired", "--expect", "refused"])
        #expect(expired.status == 0 && expired.outcome.judgement == "passed", "\(expired.output)")
        let compliant = try await run(["ats-compliant", "--expect", "accepted"])
        #expect(compliant.status == 0 && compliant.outcome.judgement == "passed", "\(compliant.output)")

        // The false green: no proxy environment, so the name never resolves and nothing reaches the fixture.
        let unrouted = try await run(["expired", "--expect", "refused", "--without-proxy-environment"])
        #expect(unrouted.status == 1, "\(unrouted.output)")
        let unroutedJudgement = unrouted.outcome.judgement ?? ""
        #expect(unroutedJudgement.hasPrefix("the client never reached expired"), "\(unrouted.output)")
        #expect(unroutedJudgement.contains("NSURLErrorDomain -1003"), "\(unrouted.output)")
        #expect(unroutedJudgement.contains("FixtureProxy.environment"), "\(unrouted.output)")

        // The runner's proxy refused the CONNECT (no fixture on that port): not a refusal of the certificate.
        let wrongPort = try await run(["expired", "wrong-port", "--expect", "refused"])
        #expect(wrongPort.status == 1, "\(wrongPort.output)")
        #expect(wrongPort.outcome.judgement?.contains("the runner's proxy refused the CONNECT") == true,
                "\(wrongPort.output)")
        #expect(wrongPort.outcome.judgement?.contains("403") == true, "\(wrongPort.output)")

        // A client that accepts what it was expected to refuse: the message says what the fixture answered.
        let accepted = try await run(["ats-compliant", "--expect", "refused"])
        #expect(accepted.status == 1, "\(accepted.output)")
        #expect(accepted.outcome.judgement?.contains("GET / was answered 200") == true, "\(accepted.output)")
    }
}
