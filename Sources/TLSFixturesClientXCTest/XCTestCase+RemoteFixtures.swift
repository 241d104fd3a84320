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

/// Fails the test, at the call, unless your client refuses the scenario `name` for its reason, proven by difference
/// (`RemoteFixtures.expectRefused(_:url:wait:_:)`): `load` runs once on a fresh fixture of the scenario's control, which
/// must be accepted, and once on a fresh fixture of the scenario, which must be refused at its step. The failure says
/// which half failed: "your client refuses the control too … it does not trust the kit's CA", "your client accepted
/// pin-rotated-key …: no pin was checked". Returns what each half showed (nil when the check failed); its notes
/// (an Apple error code other than the scenario file's, say) are printed.
///
/// ```swift
/// func testExpiredIsRefused() async {
///     let session = URLSession(configuration: .fixtures(through: RemoteFixtures().proxy))
///     await XCTAssertRefused("expired") { url in try await session.data(from: url) }
/// }
/// ```
@discardableResult
public func XCTAssertRefused<T>(_ name: String, runner: RemoteFixtures = RemoteFixtures(),
                                url: FixtureURLChoice = .qualifiedName, wait: TimeInterval = 5,
                                _ message: @autoclosure () -> String = "", file: StaticString = #filePath,
                                line: UInt = #line, isolation: isolated (any Actor)? = #isolation,
                                _ load: (URL) async throws -> T) async -> RefusalVerdict? {
    do {
        let verdict = try await runner.expectRefused(name, url: url, wait: wait, load)
        for note in verdict.notes { print("note: \(note)") }
        return verdict
    } catch {
        let prefix = message()
        XCTFail(prefix.isEmpty ? "\(error)" : "\(prefix): \(error)", file: file, line: line)
        return nil
    }
}

/// Fails the test, at the call, unless the client refused `fixture`, as far as one fixture, which others may share,
/// can show it (`RemoteFixture.expectRefused`): `load` threw, one connection from it reached the fixture, and it ended
/// at the scenario's step without a request. A handshake that completed and closed without a request fails as
/// `unproven`, and several connections in the window as `ambiguous`: the form above, which takes the scenario's name,
/// proves more.
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
