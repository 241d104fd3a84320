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

/// Fails the test, at the call, unless the client refused `fixture`: `load` threw, a connection from it reached the
/// fixture, and it ended without a request being answered — and, where the scenario says what its refusing clients
/// object to, for that reason (`RemoteFixture.expectRefused`). The failure says what happened instead: the client never
/// reached the fixture (and why, from the error it threw), or it accepted the certificate.
///
/// ```swift
/// func testExpiredIsRefused() async throws {
///     let fixture = try await startRemoteFixture("expired")
///     let session = URLSession(configuration: .fixtures(through: try XCTUnwrap(fixture.proxy)))
///     await XCTAssertRefused(fixture) { try await session.data(from: fixture.qualifiedURL) }
/// }
/// ```
public func XCTAssertRefused<T>(_ fixture: RemoteFixture, checkingReason: Bool = true, wait: TimeInterval = 5,
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
/// request of it (`RemoteFixture.expectAccepted`). Returns what `load` returned, or nil when the check failed.
@discardableResult
public func XCTAssertAccepted<T>(_ fixture: RemoteFixture, wait: TimeInterval = 5,
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
