import Foundation
import TLSFixturesPKI
import TLSFixturesWire
import TLSFixturesScenario

/// Runs `body` with a started fixture and stops it afterwards, whether `body` returns or throws — the scope
/// Swift Testing tests use:
///
/// ```swift
/// @Test func rejectsExpired() async throws {
///     try await withFixture("expired") { fixture in
///         // connect to fixture.url and expect your client to refuse it
///     }
/// }
/// ```
///
/// The body's value is returned and may be ignored (`@discardableResult`), so a body that only asserts — the usual
/// case, and every `#expect(throws:)` around one — needs no `_ =`.
@discardableResult
public func withFixture<T: Sendable>(_ name: String, store: CertificateStore = .resolved(),
                                     configuration: FixtureConfiguration = FixtureConfiguration(),
                                     _ body: (FixtureServer) async throws -> T) async throws -> T {
    try await running(try await FixtureServer.start(name, store: store, configuration: configuration), body)
}

/// The same for a scenario value (your own, or a built-in one you modified).
@discardableResult
public func withFixture<T: Sendable>(_ scenario: Scenario, store: CertificateStore = .resolved(),
                                     configuration: FixtureConfiguration = FixtureConfiguration(),
                                     _ body: (FixtureServer) async throws -> T) async throws -> T {
    try await running(try await FixtureServer.start(scenario, store: store, configuration: configuration), body)
}

private func running<T: Sendable>(_ fixture: FixtureServer, _ body: (FixtureServer) async throws -> T) async throws -> T {
    try await runThenStop(fixture, body) { await $0.stop() }
}
