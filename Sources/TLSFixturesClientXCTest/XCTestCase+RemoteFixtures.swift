import TLSFixturesClient
import XCTest

extension XCTestCase {
    /// Starts the scenario `name` in the running `tls-fixtures serve` and stops it when the test finishes (in
    /// teardown, also after a failure): `startFixture` for a test target that cannot link OpenSSL.
    ///
    /// ```swift
    /// func testRejectsExpiredCertificate() async throws {
    ///     let fixture = try await startRemoteFixture("expired")
    ///     // connect to fixture.url …
    /// }
    /// ```
    public func startRemoteFixture(_ name: String, runner: RemoteFixtures = RemoteFixtures(), ttl: Int? = nil) async throws -> RemoteFixture {
        let fixture = try await runner.start(name, ttl: ttl)
        addTeardownBlock { await fixture.stop() }
        return fixture
    }

    /// The same for a scenario given as a scenario file's JSON.
    public func startRemoteFixture(scenario: JSONValue, runner: RemoteFixtures = RemoteFixtures(), ttl: Int? = nil) async throws -> RemoteFixture {
        let fixture = try await runner.start(scenario: scenario, ttl: ttl)
        addTeardownBlock { await fixture.stop() }
        return fixture
    }
}
