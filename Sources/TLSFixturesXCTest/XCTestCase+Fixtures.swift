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

/// Fails the test, at the call, unless the client refused `fixture`: `load` threw, a connection from it reached the
/// fixture, and it ended without a request being answered — and, where the scenario says what its refusing clients
/// object to, for that reason (`FixtureServer.expectRefused`). The failure says what happened instead.
///
/// ```swift
/// func testExpiredIsRefused() async throws {
///     let fixture = try await startFixture("expired")
///     await XCTAssertRefused(fixture) { try await URLSession.shared.data(from: fixture.url) }
/// }
/// ```
public func XCTAssertRefused<T>(_ fixture: FixtureServer, checkingReason: Bool = true, wait: Duration = .seconds(5),
                                _ message: @autoclosure () -> String = "", file: StaticString = #filePath,
                                line: UInt = #line, isolation: isolated (any Actor)? = #isolation,
                                _ load: () async throws -> T) async {
    do {
        try await fixture.expectRefused(checkingReason: checkingReason, wait: wait, load)
    } catch {
        let prefix = message()
        XCTFail(prefix.isEmpty ? "\(error)" : "\(prefix): \(error)", file: file, line: line)
    }
}

/// Fails the test, at the call, unless the client accepted `fixture`: `load` returned and the fixture answered a
/// request of it (`FixtureServer.expectAccepted`). Returns what `load` returned, or nil when the check failed.
@discardableResult
public func XCTAssertAccepted<T>(_ fixture: FixtureServer, wait: Duration = .seconds(5),
                                 _ message: @autoclosure () -> String = "", file: StaticString = #filePath,
                                 line: UInt = #line, isolation: isolated (any Actor)? = #isolation,
                                 _ load: () async throws -> T) async -> T? {
    do {
        return try await fixture.expectAccepted(wait: wait, load)
    } catch {
        let prefix = message()
        XCTFail(prefix.isEmpty ? "\(error)" : "\(prefix): \(error)", file: file, line: line)
        return nil
    }
}
