import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixturesClient
import TLSFixturesClientXCTest
import XCTest

// The documentation's iOS examples, exactly as they appear there (the regions between the markers; DocExamplesTests
// fails if the two drift apart). Both prove a refusal by difference through a real `tls-fixtures serve`, so they pass
// only where URLSession trusts the kit's CA and routes through the runner's proxy: here, in this process on Linux,
// neither holds (FoundationNetworking ignores connectionProxyDictionary, and libcurl trusts the system's roots), and
// each must fail on the control half. `ExampleRuns` runs them again in a private mount namespace with the proxy in the
// environment: once with the CA trusted, where they must pass, and once without, where they must fail for the CA.

/// Starts `serve` for the examples, or uses the one `TLS_FIXTURES_URL` names (an `ExampleRuns` re-run).
enum ExampleRunner {
    static func start() async throws -> ControlAPIRunner? {
        if ProcessInfo.processInfo.environment["TLS_FIXTURES_URL"] != nil { return nil }
        return try await ControlAPIRunner.start(["ats-compliant"])
    }

    /// The runner's URL for the Swift Testing suite's tests (set by `WithExampleRunner`).
    @TaskLocal static var url: URL?
}

final class IOSReadmeExample: DocumentationExampleTestCase {
    private var serve: ControlAPIRunner?

    override func setUp() async throws {
        try await super.setUp()
        serve = try await ExampleRunner.start()
        if let serve { fixtures = RemoteFixtures(runner: serve.runnerURL) }
    }

    override func tearDown() async throws {
        try await super.tearDown()
        // The differential check stops the fixtures it starts.
        if let serve {
            let left = try await serve.api("GET", "/api/fixtures")
            XCTAssertEqual(try left.decode(FixtureList.self).fixtures, [], "the check left a fixture running")
            serve.stop()
        }
    }

    // README: remote-xctest-example begin
    var fixtures = RemoteFixtures()   // TLS_FIXTURES_URL, else http://localhost:9800

    func testExpiredCertificateIsRefused() async {
        // Through the runner's proxy, by the names ATS judges (expired.fixtures.test:PORT); or your app's own session.
        let session = URLSession(configuration: .fixtures(through: fixtures.proxy))
        // Starts a fresh ats-compliant (the control) and a fresh expired, and loads each once: passes only if the
        // session accepts the first and refuses the second at the certificate. Until the Simulator trusts the kit's
        // CA, it fails on the control, saying so.
        await XCTAssertRefused("expired", runner: fixtures) { url in try await session.data(from: url) }
    }
    // README: remote-xctest-example end
}

/// docs/report-card.md's example: URLSession's whole card in one test. It asserts every verdict proven, so it fails
/// until the client trusts the kit's CA and reaches the fixtures, naming the first scenario left unproven.
final class ReportCardExample: DocumentationExampleTestCase {
    override class var failureSignature: String { "unproven" }
    private var serve: ControlAPIRunner?

    override func setUp() async throws {
        try await super.setUp()
        if ProcessInfo.processInfo.environment["TLS_FIXTURES_URL"] == nil {
            serve = try await ControlAPIRunner.start(["ats-compliant", "expired", "pin-rotated-key", "pinned"])
        }
        if let serve { fixtures = RemoteFixtures(runner: serve.runnerURL) }
    }

    override func tearDown() async throws {
        try await super.tearDown()
        serve?.stop()
    }

    // README: report-card-example begin
    var fixtures = RemoteFixtures()   // TLS_FIXTURES_URL, else http://localhost:9800

    func testReportCard() async throws {
        let session = URLSession(configuration: .fixtures(through: fixtures.proxy))   // or your app's session
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("report-card")
        // Every scenario the runner serves and its control, each on a fresh fixture: report.md, .json, .junit.xml.
        let card = try await fixtures.reportCard(client: "URLSession", family: .apple, to: folder) { url in
            try await session.data(from: url)
        }
        // Every verdict proven: until the CA is trusted, the controls are refused and this names the first one.
        let unproven = card.entries.first { $0.verdict == .unproven }
        XCTAssertNil(unproven, "\(card.summaryLine): \(unproven?.scenario ?? ""): \(unproven?.why ?? "")")
    }
    // README: report-card-example end
}

/// Runs a suite with `serve` started for it and `ExampleRunner.url` naming it.
struct WithExampleRunner: SuiteTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let runner = try await ExampleRunner.start()
        defer { runner?.stop() }
        let url = runner?.runnerURL ?? RemoteFixtures().runnerURL
        try await ExampleRunner.$url.withValue(url) { try await function() }
        if let runner {
            let left = try await runner.api("GET", "/api/fixtures").decode(FixtureList.self)
            #expect(left.fixtures.isEmpty, "the check left a fixture running")
        }
    }
}

@Suite("docs/ios.md: the Swift Testing example for iOS test targets", WithExampleRunner(), HoldsExampleOutcome())
struct RemoteSwiftTestingExampleTests {
    struct NoRunner: Error {}

    init() throws {
        guard let url = ExampleRunner.url else { throw NoRunner() }
        fixtures = RemoteFixtures(runner: url)
    }

    // README: remote-swift-testing-example begin
    var fixtures = RemoteFixtures()   // TLS_FIXTURES_URL, else http://localhost:9800

    @Test func expiredCertificateIsRefused() async throws {
        let session = URLSession(configuration: .fixtures(through: fixtures.proxy))
        // The control (ats-compliant) must be accepted and expired refused at the certificate, by this session.
        try await fixtures.expectRefused("expired") { url in try await session.data(from: url) }
    }
    // README: remote-swift-testing-example end
}

/// The remote XCTest helpers themselves: each must fail the test when its check fails.
final class RemoteXCTestHelperTests: FailureCapturingTestCase {
    private var serve: ControlAPIRunner?
    private var fixtures = RemoteFixtures()

    override func setUp() async throws {
        let serve = try await ControlAPIRunner.start(["ats-compliant"])
        self.serve = serve
        fixtures = RemoteFixtures(runner: serve.runnerURL)
    }

    override func tearDown() async throws { serve?.stop() }

    func testAssertionsFailWhenTheirCheckFails() async throws {
        let ca = try TestEnvironment.file(try XCTUnwrap(serve).store.ca().certificate.pem, name: "ca.pem")
        let trusting = CurlLoad(trusting: [ca], resolveToLoopback: true)
        let differential = await failures {
            await XCTAssertRefused("pin-rotated-key", runner: fixtures) { url in try await trusting(url) }
        }
        XCTAssertEqual(differential.count, 1, "\(differential)")
        XCTAssertTrue(differential.first?.contains("no pin was checked") == true, "\(differential)")

        let fixture = try await startRemoteFixture("ats-compliant", runner: fixtures)
        let single = await failures { await XCTAssertRefused(fixture) { try await trusting(fixture.url) } }
        XCTAssertEqual(single.count, 1, "\(single)")
        XCTAssertTrue(single.first?.contains("the client accepted ats-compliant") == true, "\(single)")
        let expired = try await startRemoteFixture("expired", runner: fixtures)
        let refused = await failures { await XCTAssertAccepted(expired) { try await trusting(expired.url) } }
        XCTAssertEqual(refused.count, 1, "\(refused)")
        XCTAssertTrue(refused.first?.contains("the client refused expired") == true, "\(refused)")
        // And a check that holds passes quietly.
        let passed = await failures {
            await XCTAssertRefused("expired", runner: fixtures) { url in try await trusting(url) }
        }
        XCTAssertEqual(passed, [])
    }

    /// Issue 34, case 4, through the runner: the second load reuses the first's kept-alive connection, opened before its
    /// cursor, and the runner must list it by the request it answered since (`requestsAfter`).
    func testKeptAliveThroughTheRunner() async throws {
        let fixture = try await startRemoteFixture("http", runner: fixtures)
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let first = await failures { await XCTAssertAccepted(fixture) { try await session.data(from: fixture.url) } }
        let second = await failures { await XCTAssertAccepted(fixture) { try await session.data(from: fixture.url) } }
        XCTAssertEqual(first + second, [])
        let records = try await fixture.connections()
        XCTAssertEqual(records.count, 1, "libcurl did not keep the connection alive: \(records)")
        XCTAssertEqual(records.first?.requestCount, 2)
    }
}
