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

/// Fails the test, at the call, unless your client refuses the catalog scenario `name` for its reason, proven by
/// difference (`FixtureServer.expectRefused(_:store:configuration:url:wait:_:)`): `load` runs once on a fresh fixture
/// of the scenario's control, which must be accepted, and once on a fresh fixture of the scenario, which must be
/// refused at its step. The failure says which half failed. Returns what each half showed (nil when the check
/// failed); its notes are printed.
///
/// ```swift
/// func testExpiredIsRefused() async {
///     await XCTAssertRefused("expired") { url in try await URLSession.shared.data(from: url) }
/// }
/// ```
@discardableResult
public func XCTAssertRefused<T>(_ name: String, store: CertificateStore = .resolved(),
                                configuration: FixtureConfiguration = FixtureConfiguration(),
                                url: FixtureURLChoice = .localhost, wait: Duration = .seconds(5),
                                _ message: @autoclosure () -> String = "", file: StaticString = #filePath,
                                line: UInt = #line, isolation: isolated (any Actor)? = #isolation,
                                _ load: (URL) async throws -> T) async -> RefusalVerdict? {
    do {
        let verdict = try await FixtureServer.expectRefused(name, store: store, configuration: configuration, url: url,
                                                            wait: wait, load)
        for note in verdict.notes { print("note: \(note)") }
        return verdict
    } catch {
        let prefix = message()
        XCTFail(prefix.isEmpty ? "\(error)" : "\(prefix): \(error)", file: file, line: line)
        return nil
    }
}

/// Fails the test, at the call, unless the client refused `fixture`, as far as one fixture, which others may share,
/// can show it (`FixtureServer.expectRefused`): `load` threw, one connection from it reached the fixture, and it ended
/// at the scenario's step without a request. A handshake that completed and closed without a request fails as
/// `unproven`, and several connections in the window as `ambiguous`: the form above, which takes the scenario's name,
/// proves more.
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
