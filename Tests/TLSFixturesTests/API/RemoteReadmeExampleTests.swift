import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixturesClient
import TLSFixturesClientXCTest
import XCTest

// The iOS examples of the README and docs/ios.md, exactly as they appear there (the regions between the README markers;
// ReadmeExamplesTests fails if the two drift apart). Each loads a fixture for real and asserts, from the fixture's
// records, that the client refused it. In the README `RemoteFixtures()` reads `TLS_FIXTURES_URL`; here each test points
// it at a real `tls-fixtures serve` started for it on free ports, outside the region, so nothing sets the process's
// environment mid-run.
//
// The scenarios are ones default trust refuses whether or not the built-in CA is trusted (a self-signed leaf, a chain
// to a root nobody trusts), loaded at `fixture.url`, so the examples hold on Linux, where this test process neither
// trusts the CA with libcurl nor routes URLSession through the proxy (both are the environment's: docs/ios.md, "On
// Linux").

/// Starts `serve` for the examples.
enum ExampleRunner {
    static func start() throws -> ControlAPIRunner {
        try ControlAPIRunner.start(["ats-compliant"])
    }

    /// The runner's URL for the Swift Testing suite's tests (set by `WithExampleRunner`).
    @TaskLocal static var url: URL?
}

final class RemoteXCTestExampleTests: XCTestCase {
    private var serve: ControlAPIRunner?

    override func setUp() async throws {
        let serve = try ExampleRunner.start()
        self.serve = serve
        runner = RemoteFixtures(runner: serve.runnerURL)
    }

    override func tearDown() async throws {
        // Teardown blocks (the fixture's stop) have run by now.
        let left = try XCTUnwrap(serve).api("GET", "/api/fixtures")
        XCTAssertEqual(try left.decode(FixtureList.self).fixtures, [], "startRemoteFixture left a fixture running")
        serve?.stop()
    }

    // README: remote-xctest-example begin
    var runner = RemoteFixtures()   // TLS_FIXTURES_URL, else http://localhost:9800

    func testUntrustedRootIsRefused() async throws {
        let fixture = try await startRemoteFixture("untrusted-root", runner: runner)   // stopped in teardown
        // What a client refusing it for its reason shows: the alert the fixture records, and Apple's error code.
        XCTAssertEqual(fixture.scenario.expect.refusal?.alerts, [.unknownCA])
        XCTAssertEqual(fixture.scenario.expect.refusal?.apple?.error.urlErrorCode, -1202)

        // Passes only if the load threw AND the fixture saw this client refuse it, for that reason. A DNS failure,
        // the proxy's 403, a runner still starting or a wrong port fails here, saying which.
        await XCTAssertRefused(fixture) { try await URLSession.shared.data(from: fixture.url) }
    }
    // README: remote-xctest-example end
}

/// Runs a suite with `serve` started for it and `ExampleRunner.url` naming it.
struct WithExampleRunner: SuiteTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let runner = try ExampleRunner.start()
        defer { runner.stop() }
        try await ExampleRunner.$url.withValue(runner.runnerURL) { try await function() }
        let left = try runner.api("GET", "/api/fixtures").decode(FixtureList.self)
        #expect(left.fixtures.isEmpty, "withRemoteFixture left a fixture running")
    }
}

@Suite("docs/ios.md: the Swift Testing example for iOS test targets", WithExampleRunner())
struct RemoteSwiftTestingExampleTests {
    struct NoRunner: Error {}

    init() throws {
        guard let url = ExampleRunner.url else { throw NoRunner() }
        runner = RemoteFixtures(runner: url)
    }

    // README: remote-swift-testing-example begin
    var runner = RemoteFixtures()   // TLS_FIXTURES_URL, else http://localhost:9800

    @Test func selfSignedCertificateIsRefusedByDefaultTrust() async throws {
        try await withRemoteFixture("self-signed", runner: runner) { fixture in   // stopped when the block ends
            #expect(fixture.scenario.expect.verify == "self-signed certificate")
            #expect(fixture.scenario.expect.ats == .block)
            // The certificates, leaf first, as Alamofire's PinnedCertificatesTrustEvaluator takes them.
            #expect(fixture.chainDER.count == 1)
            #expect(fixture.caCertificateDER != fixture.chainDER[0])
            // Loaded with default trust, the client refuses it, and the fixture saw it refuse (unknown_ca(48)).
            try await fixture.expectRefused { try await URLSession.shared.data(from: fixture.url) }
        }
    }
    // README: remote-swift-testing-example end
}
