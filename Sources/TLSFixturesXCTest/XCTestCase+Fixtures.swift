import TLSFixtures
import XCTest

extension XCTestCase {
    /// Starts the built-in scenario `name` and stops it when the test finishes (in teardown, also after a failure).
    ///
    /// ```swift
    /// func testRejectsExpiredCertificate() async throws {
    ///     let fixture = try await startFixture("expired")
    ///     // connect to fixture.url …
    /// }
    /// ```
    public func startFixture(_ name: String, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        let fixture = try await FixtureServer.start(name, store: store, configuration: configuration)
        addTeardownBlock { await fixture.stop() }
        return fixture
    }

    /// The same for a scenario value.
    public func startFixture(_ scenario: Scenario, store: CertificateStore = .resolved(),
                             configuration: FixtureConfiguration = FixtureConfiguration()) async throws -> FixtureServer {
        let fixture = try await FixtureServer.start(scenario, store: store, configuration: configuration)
        addTeardownBlock { await fixture.stop() }
        return fixture
    }
}
