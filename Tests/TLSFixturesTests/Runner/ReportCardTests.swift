import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesClient

/// `ReportCard` as values: what each verdict takes, and the three ways it is written.
@Suite("Report card: the verdicts and the files")
struct ReportCardValueTests {
    static let date = Date(timeIntervalSince1970: 1_780_000_000)
    static let expired = FixtureExpectations(
        verify: "certificate has expired", ats: .block,
        refusal: RefusalExpectation(control: "ats-compliant", step: .certificate, alerts: [.certificateExpired]))
    static let compliant = FixtureExpectations(verify: "ok", ats: .allow)

    static func observation(_ scenario: String, _ outcome: ConnectionRecord.Outcome, requests: Int = 0,
                            threw: Bool) -> ReportCard.Observation {
        let record = ConnectionRecord(id: 1, acceptedAt: date, endedAt: date, peer: "127.0.0.1:1", outcome: outcome,
                                      requests: (0..<requests).map { .init(method: "GET", path: "/", status: 200,
                                                                             number: $0 + 1) })
        struct Refused: Error, CustomStringConvertible { var description: String { "exit 60" } }
        return .init(load: .init(scenario: scenario, target: "localhost:1", thrown: threw ? Refused() : nil,
                                 records: [record]),
                     said: .init(accepted: !threw, detail: threw ? "exit 60" : "200"))
    }

    static let completed = ConnectionRecord.Outcome.handshakeCompleted(
        .init(protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", group: nil, clientCertificate: false))
    static let controlAccepted = observation("ats-compliant", completed, requests: 1, threw: false)

    @Test("as expected, unexpected and unproven, each for its reason")
    func verdicts() {
        let refused = Self.observation("expired", .alertReceived(.certificateExpired, phase: .afterServerFlight),
                                       threw: true)
        let asExpected = ReportCard.entry(scenario: "expired", group: "certificate", expect: Self.expired,
                                          expected: .refuse, control: Self.controlAccepted, observation: refused,
                                          judgesAppleErrors: false)
        #expect(asExpected.verdict == .asExpected && asExpected.why.contains("at the certificate"), "\(asExpected)")
        let accepted = Self.observation("expired", Self.completed, requests: 1, threw: false)
        let unexpected = ReportCard.entry(scenario: "expired", group: "certificate", expect: Self.expired,
                                          expected: .refuse, control: Self.controlAccepted, observation: accepted,
                                          judgesAppleErrors: false)
        #expect(unexpected.verdict == .unexpected && unexpected.why.contains("your client accepted expired"))
        let controlRefused = Self.observation("ats-compliant", .alertReceived(.unknownCA, phase: .afterServerFlight),
                                              threw: true)
        let unproven = ReportCard.entry(scenario: "expired", group: "certificate", expect: Self.expired,
                                        expected: .refuse, control: controlRefused, observation: refused,
                                        judgesAppleErrors: false)
        #expect(unproven.verdict == .unproven && unproven.why.contains("refuses the control too"), "\(unproven)")
        // Expected accepted: a refusal of a scenario a verifying client accepts is unexpected.
        let acceptedControl = ReportCard.entry(scenario: "ats-compliant", group: "control", expect: Self.compliant,
                                               expected: .accept, control: nil, observation: Self.controlAccepted)
        #expect(acceptedControl.verdict == .asExpected)
        let refusedControl = ReportCard.entry(scenario: "ats-compliant", group: "control", expect: Self.compliant,
                                              expected: .accept, control: nil, observation: controlRefused)
        #expect(refusedControl.verdict == .unexpected && refusedControl.why.contains("unknown_ca(48)"))
    }

    @Test("what a family expects: verify, the matrix's verdict, ATS, pins; every client is refused without a certificate")
    func families() {
        #expect(ReportCard.expected(Self.expired, family: .verifying, isCleartext: false) == .refuse)
        #expect(ReportCard.expected(Self.compliant, family: .apple, isCleartext: false) == .accept)
        #expect(ReportCard.expected(Self.expired, family: .matrix("java"), isCleartext: false,
                                    clientOutcome: "accept") == .accept)
        let rotated = FixtureExpectations(verify: "ok", ats: .allow,
                                          pins: PinExpectation(leafSPKI: false, caSPKI: true, certificate: false))
        #expect(ReportCard.expected(rotated, family: .verifying, isCleartext: false) == .accept)
        #expect(ReportCard.expected(rotated, family: .pinning(.verifying, pin: .leaf), isCleartext: false) == .refuse)
        #expect(ReportCard.expected(rotated, family: .pinning(.apple, pin: .ca), isCleartext: false) == .accept)
        let clientCertificate = FixtureExpectations(
            verify: "ok", ats: .notApplicable,
            refusal: RefusalExpectation(control: "ats-compliant", step: .clientCertificate))
        #expect(ReportCard.expected(clientCertificate, family: .verifying, isCleartext: false) == .refuse)
        let http = FixtureExpectations(verify: nil, ats: .block)
        #expect(ReportCard.expected(http, family: .verifying, isCleartext: true) == .accept)
        #expect(ReportCard.expected(http, family: .apple, isCleartext: true) == .refuse)
    }

    @Test("written as Markdown, JSON that reads back, and JUnit XML that a JUnit parser reads", .requires(Tools.python))
    func files() async throws {
        let refused = Self.observation("expired", .alertReceived(.certificateExpired, phase: .afterServerFlight),
                                       threw: true)
        let accepted = Self.observation("expired", Self.completed, requests: 1, threw: false)
        var card = ReportCard(client: "curl | grep <x> & \"y\"", family: .matrix("curl"), date: Self.date)
        card.entries = [
            ReportCard.entry(scenario: "ats-compliant", group: "control", expect: Self.compliant, expected: .accept,
                             control: nil, observation: Self.controlAccepted),
            ReportCard.entry(scenario: "expired", group: "certificate", expect: Self.expired, expected: .refuse,
                             control: Self.controlAccepted, observation: refused, judgesAppleErrors: false),
            ReportCard.entry(scenario: "self-signed", group: "certificate", expect: Self.expired, expected: .refuse,
                             control: Self.controlAccepted, observation: accepted, judgesAppleErrors: false),
        ]
        #expect(card.summaryLine == "report: 2 as expected, 1 unexpected, 0 unproven")
        let markdown = card.markdown()
        #expect(markdown.contains("| `expired` | refuse certificate |") && markdown.contains("curl \\| grep"))
        #expect(try ReportCard.decode(card.json()) == card)
        let folder = TestEnvironment.temporaryDirectory("card")
        let files = try card.write(to: folder)
        #expect(files.map(\.lastPathComponent) == ["report.md", "report.json", "report.junit.xml"])
        // Python's xml.etree, as CI's JUnit readers parse it: one case per scenario, the unexpected one a failure.
        let script = """
            import sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.argv[1]).getroot()
            cases = root.findall('./testsuite/testcase')
            print(len(cases), root.get('failures'), [c.get('name') for c in cases if c.find('failure') is not None])
            """
        let parsed = try await Subprocess.runAwaiting(["python3", "-c", script,
                                                       folder.appendingPathComponent("report.junit.xml").path])
        #expect(parsed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3 1 ['self-signed']",
                "\(parsed.combined)")
    }
}

/// The card, live: `tls-fixtures report` with real clients against a real `serve` (the whole catalog), and URLSession
/// from a program that links TLSFixturesClient alone. curl, s_client and URLSession each get a card with nothing
/// unexpected (the scenario files say what each does); curl -k, which verifies nothing, gets "unexpected" on every
/// scenario a verifying client refuses at the certificate, and a non-zero exit.
@Suite("Report card, live", .serialized)
struct ReportCardLiveTests {
    static func runner() async throws -> ControlAPIRunner {
        try await ControlAPIRunner.start(ScenarioCatalog.builtIn.names)
    }

    static func report(_ runner: ControlAPIRunner, _ client: String, family: String, out: URL) async throws
        -> (Subprocess.Result, ReportCard)
    {
        let result = try await Subprocess.runAwaiting(
            [TestEnvironment.cli, "report", "--runner", runner.url, "--client", client, "--family", family,
             "--out", out.path], timeout: 600)
        let card = try ReportCard.decode(Data(contentsOf: out.appendingPathComponent("report.json")))
        return (result, card)
    }

    @Test("curl and openssl s_client: every scenario as expected; curl -k: unexpected wherever verifying matters",
          .requires(Tools.curl, Tools.openssl))
    func commandCards() async throws {
        let runner = try await Self.runner()
        defer { runner.stop() }
        let scratch = TestEnvironment.temporaryDirectory("cards")
        let (curl, curlCard) = try await Self.report(runner, "curl -sS --max-time 10 --cacert {ca} {url}",
                                                     family: "curl", out: scratch.appendingPathComponent("curl"))
        #expect(curl.status == 0, "\(curl.combined)")
        #expect(curlCard.counts[.unexpected] == nil && curlCard.counts[.unproven] == nil, "\(curl.combined)")
        #expect(curlCard.entries.count >= 55, "\(curlCard.entries.count) scenarios")
        #expect(curl.stdout.contains(curlCard.summaryLine))

        let sClient = "sh -c 'printf \"GET / HTTP/1.0\\r\\n\\r\\n\" | openssl s_client -quiet -verify_return_error "
            + "-verify_hostname localhost -CAfile {ca} -connect localhost:{port} -servername localhost'"
        let (openssl, opensslCard) = try await Self.report(runner, sClient, family: "openssl",
                                                           out: scratch.appendingPathComponent("openssl"))
        #expect(openssl.status == 0 && opensslCard.counts[.unexpected] == nil, "\(openssl.combined)")

        let (insecure, insecureCard) = try await Self.report(runner, "curl -sSk --max-time 10 {url}", family: "curl",
                                                             out: scratch.appendingPathComponent("insecure"))
        #expect(insecure.status == 3, "\(insecure.combined)")
        let judged = Set(insecureCard.entries.map(\.scenario))
        let certificateRefusals = ScenarioCatalog.builtIn.scenarios.filter { scenario in
            // What verification refuses (curl -k turns it off), not a limit curl keeps (10000-sans' size).
            scenario.expect.refusal?.step == .certificate && scenario.expect.verify != "ok"
                && scenario.expect.outcome(for: .curl)?.outcome == .reject && judged.contains(scenario.name)
        }.map(\.name)
        #expect(certificateRefusals.count >= 10)
        for name in certificateRefusals {
            let entry = insecureCard.entries.first { $0.scenario == name }
            #expect(entry?.verdict == .unexpected, "\(name): \(String(describing: entry?.why))")
        }
    }

    /// URLSession (FoundationNetworking's, libcurl under it) from `tls-fixtures-client-check`, which links
    /// TLSFixturesClient alone, through `RemoteFixtures.reportCard`: in a namespace where libcurl trusts the kit's CA.
    @Test("URLSession on Linux, from a program linking TLSFixturesClient alone: the whole card, nothing unexpected",
          .enabled(if: ProxyEndToEndTests.namespace == nil, Comment(rawValue: ProxyEndToEndTests.namespace ?? "")))
    func urlSessionCard() async throws {
        let runner = try await Self.runner()
        defer { runner.stop() }
        let ca = try TestEnvironment.file(try runner.store.ca().certificate.pem, name: "ca.pem")
        let out = TestEnvironment.temporaryDirectory("urlsession-card")
        let check = TestEnvironment.productsDirectory.appendingPathComponent("tls-fixtures-client-check").path
        let hosts = try TestEnvironment.file(Data("127.0.0.1\tlocalhost\n::1\tlocalhost\n".utf8), name: "hosts")
        let prefix = getuid() == 0 ? ["unshare", "--mount"] : ["unshare", "--mount", "--map-root-user"]
        let script = "mount --bind '\(hosts)' /etc/hosts && mount --bind '\(ca)' /etc/ssl/certs/ca-certificates.crt "
            + "&& exec \"$@\""
        let result = try await Subprocess.runAwaiting(
            prefix + ["sh", "-c", script, "sh", check, "--report-card", out.path, "urlsession"],
            environment: ["TLS_FIXTURES_URL": runner.url], timeout: 600)
        let card = try ReportCard.decode(Data(contentsOf: out.appendingPathComponent("report.json")))
        let problems = card.entries.filter { $0.verdict != .asExpected }.map { "\($0.scenario): \($0.why)" }
        #expect(result.status == 0 && problems.isEmpty, "\(result.combined)\n\(problems.joined(separator: "\n"))")
        #expect(card.entries.count >= 55)
    }
}

/// docs/apple/: report cards Apple's URLSession made on a Mac (`make apple-report`), and the scenario files held to
/// them on every machine, so a committed card turns the files' guesses into evidence.
@Suite("Apple's report cards and the scenario files")
struct AppleCardTests {
    static var expectations: [String: FixtureExpectations] {
        Dictionary(uniqueKeysWithValues: ScenarioCatalog.builtIn.scenarios.map { scenario in
            let expect = scenario.expect
            return (scenario.name, FixtureExpectations(verify: expect.verify, ats: expect.ats,
                                                       trustedRoots: expect.trustedRoots, pins: expect.pins,
                                                       refusal: expect.refusal))
        })
    }

    @Test("every committed card agrees with the scenario files")
    func committedCards() throws {
        let folder = TestEnvironment.packageRoot.appendingPathComponent("docs/apple")
        let cards = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
        for file in cards {
            let card = try ReportCard.decode(Data(contentsOf: folder.appendingPathComponent(file)))
            #expect(card.family == .apple, "\(file) was not made by make apple-report")
            let disagreements = card.appleDisagreements(with: Self.expectations)
            #expect(disagreements.isEmpty, "docs/apple/\(file): \(disagreements.joined(separator: "; "))")
        }
        // None yet: the README there says so, and must stop saying so once one is committed.
        let readme = try String(contentsOf: folder.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("No card has been recorded yet") == cards.isEmpty)
    }

    @Test("a card's codes are held to the files: another code or a verdict other than expected is named")
    func disagreementsNamed() {
        let date = Date(timeIntervalSince1970: 1_780_000_000)
        let refused = ConnectionRecord(id: 1, acceptedAt: date, endedAt: date, peer: "127.0.0.1:1",
                                       outcome: .alertReceived(.certificateUnknown, phase: .afterServerFlight))
        let served = ConnectionRecord(id: 1, acceptedAt: date, endedAt: date, peer: "127.0.0.1:1",
                                      outcome: .handshakeCompleted(.init(protocol: "TLSv1.3", cipher: "x", group: nil,
                                                                         clientCertificate: false)),
                                      requests: [.init(method: "GET", path: "/", status: 200, number: 1)])
        func entry(_ scenario: String, code: Int, stream: Int?) -> ReportCard.Entry {
            ReportCard.Entry(scenario: scenario, group: "certificate", expected: .refuse, steps: [.certificate],
                             control: "ats-compliant",
                             said: .init(accepted: false, detail: "NSURLErrorDomain \(code)", errorDomain: "NSURLErrorDomain",
                                         errorCode: code, streamErrorCode: stream),
                             controlSaid: .init(accepted: true, detail: "200"), records: [refused],
                             controlRecords: [served], verdict: .asExpected, why: "refused at the certificate")
        }
        let card = ReportCard(client: "URLSession", family: .apple, date: date, entries: [
            entry("expired", code: -1202, stream: -9814),   // what the file says now
            entry("self-signed", code: -1200, stream: -9802),   // ATS's system trust: another code
        ])
        let found = card.appleDisagreements(with: Self.expectations)
        #expect(found.count == 2, "\(found)")
        #expect(found.allSatisfy { $0.hasPrefix("self-signed: ") }, "\(found)")
        #expect(found.contains { $0.contains("-1200") && $0.contains("-1202") })
    }
}

/// `serve --report DIR`: a card of clients driven by hand, kept current as their connections end.
@Suite("serve --report: the card of clients driven by hand", .serialized)
struct ManualReportTests {
    @Test("a verifying curl is as expected; the same client with -k accepting expired is unexpected",
          .requires(Tools.curl))
    func cardFromRecords() async throws {
        let folder = TestEnvironment.temporaryDirectory("manual-report")
        let runner = try await ControlAPIRunner.start(["ats-compliant", "expired"], extra: ["--report", folder.path])
        defer { runner.stop() }
        let ca = try TestEnvironment.file(try runner.store.ca().certificate.pem, name: "ca.pem")
        let compliant = URL(string: "https://localhost:\(runner.base + 1)/")!
        let expired = URL(string: "https://localhost:\(runner.base + 31)/")!
        _ = try await CurlLoad(trusting: [ca])(compliant)
        _ = try? await CurlLoad(trusting: [ca])(expired)
        let file = folder.appendingPathComponent("report.json")
        @Sendable func card() throws -> ReportCard? { try? ReportCard.decode(Data(contentsOf: file)) }
        try await Poll.require("a report card with two entries") { (try? card())??.entries.count == 2 }
        let first = try #require(try card())
        #expect(first.entries.map(\.verdict) == [.asExpected, .asExpected], "\(first.markdown())")
        #expect(first.entries.last?.why.contains("at the certificate") == true)
        // The same ClientHello from curl -k: one client, which has now accepted expired.
        _ = try await CurlLoad(insecure: true)(expired)
        try await Poll.require("expired's verdict turning unexpected") {
            (try? card())??.entries.first { $0.scenario == "expired" }?.verdict == .unexpected
        }
        let markdown = try String(contentsOf: folder.appendingPathComponent("report.md"), encoding: .utf8)
        #expect(markdown.contains("**unexpected**: accepted what a verifying client refuses"), "\(markdown)")
    }

    @Test("a --report folder that cannot be written is refused in one line before anything serves")
    func unwritable() async throws {
        let file = try TestEnvironment.file(Data("x".utf8), name: "not-a-folder")
        let result = try await Subprocess.runAwaiting([TestEnvironment.cli, "serve", "ats-compliant", "--port-base",
                                                       "\(try ServeEndToEndTests.freePortBase())", "--report", file])
        #expect(result.status == 1 && result.stderr.contains("--report \(file) cannot be written"), "\(result.combined)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}
