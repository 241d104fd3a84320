import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixturesClient
import TLSFixturesClientXCTest
import XCTest

// The README's "Testing an iOS app" examples, exactly as they appear there (the regions between the README markers;
// ReadmeExamplesTests fails if the two drift apart). They use the default runner, `TLS_FIXTURES_URL`, as an iOS test
// does: here it names a real `tls-fixtures serve` started for them on free ports.

/// Starts `serve` for the examples and points `TLS_FIXTURES_URL` at it.
enum ExampleRunner {
    static func start() throws -> ControlAPIRunner {
        let runner = try ControlAPIRunner.start(["ats-compliant"])
        setenv(FixtureAPI.environmentVariable, runner.url, 1)
        return runner
    }
}

final class RemoteXCTestExampleTests: XCTestCase {
    private var runner: ControlAPIRunner?

    override func setUp() async throws {
        runner = try ExampleRunner.start()
    }

    override func tearDown() async throws {
        // Teardown blocks (the fixture's stop) have run by now.
        let left = try XCTUnwrap(runner).api("GET", "/api/fixtures")
        XCTAssertEqual(try left.decode(FixtureList.self).fixtures, [], "startRemoteFixture left a fixture running")
        runner?.stop()
    }

    // README: remote-xctest-example begin
    func testRotatedKeyFailsTheLeafPin() async throws {
        let fixture = try await startRemoteFixture("pin-rotated-key")   // stopped in teardown, also after a failure

        // The app's pin set as TrustKit takes it (two pins: the published leaf and a backup) …
        let appPins: Set<String> = [fixture.pins.pinnedLeaf, fixture.pins.backup]
        // … does not hold the key this server presents; the CA pin still matches.
        XCTAssertFalse(appPins.contains(try XCTUnwrap(fixture.pins.leaf)))
        XCTAssertEqual(fixture.scenario.expect.pins?.caSPKI, true)

        // Load it by name, as ATS sees it, through the runner's proxy: no /etc/hosts entry. In a session with the app's
        // pinning (its URLSessionDelegate, or TrustKit) this load must fail; a plain session, as here, may load it.
        let session = URLSession(configuration: .fixtures(through: try XCTUnwrap(fixture.proxy)))
        XCTAssertEqual(fixture.qualifiedURL.host, "pin-rotated-key.fixtures.test")
        let loaded = try? await session.data(from: fixture.qualifiedURL)
        _ = loaded
    }
    // README: remote-xctest-example end
}

/// Runs a suite with `serve` started for it and `TLS_FIXTURES_URL` naming it.
struct WithExampleRunner: SuiteTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let runner = try ExampleRunner.start()
        defer { runner.stop() }
        try await function()
        let left = try runner.api("GET", "/api/fixtures").decode(FixtureList.self)
        #expect(left.fixtures.isEmpty, "withRemoteFixture left a fixture running")
    }
}

@Suite("README: the Swift Testing example for iOS test targets", WithExampleRunner())
struct RemoteSwiftTestingExampleTests {
    // README: remote-swift-testing-example begin
    @Test func expiredCertificateIsRefusedByDefaultTrust() async throws {
        try await withRemoteFixture("expired") { fixture in   // stopped when the block ends, or throws
            #expect(fixture.scenario.expect.verify == "certificate has expired")
            #expect(fixture.scenario.expect.ats == .block)
            // The certificates, leaf first, as Alamofire's PinnedCertificatesTrustEvaluator takes them.
            #expect(fixture.chainDER.count == 1)
            #expect(fixture.caCertificateDER != fixture.chainDER[0])
            // Loaded with default trust, it fails.
            await #expect(throws: (any Error).self) { try await URLSession.shared.data(from: fixture.url) }
        }
    }
    // README: remote-swift-testing-example end
}
