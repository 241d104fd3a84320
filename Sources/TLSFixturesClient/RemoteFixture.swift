import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TLSFixturesWire

/// A fixture running in `tls-fixtures serve`, started through its control API: the same properties, by the same
/// names, as the in-process `FixtureServer` (`url`, `qualifiedURL`, `port`, `pins`, `chainDER`, `chainPEM`,
/// `scenario.name`, `scenario.expect`, `stop()`), so a test reads the same either way.
///
/// Its lease (`ttl`) keeps it running; `stop()` ends it at once, `renew()` extends it.
public final class RemoteFixture: Sendable, CustomStringConvertible {
    /// The scenario it serves, as the API describes it.
    public struct Scenario: Sendable, Hashable {
        /// The catalog name (`expired`, `pin-mitm`, …), or a custom scenario's own name.
        public var name: String
        /// The catalog group (`protocol`, `certificate`, `pinning`, …; `custom` for your own scenarios).
        public var group: String
        /// What is deliberately different, in one line.
        public var summary: String
        /// What standard clients are expected to make of it (OpenSSL's verify result, the ATS verdict, pins).
        public var expect: FixtureExpectations
        /// True for the plain-HTTP scenario (`http`): no TLS, no chain, no pins.
        public var isCleartext: Bool
    }

    private let state: Locked<FixtureDescription>
    let runner: RemoteFixtures
    private let stopped = Locked(false)

    init(_ description: FixtureDescription, runner: RemoteFixtures) {
        state = Locked(description)
        self.runner = runner
    }

    /// Everything the runner said about it (the API's JSON, decoded).
    public var info: FixtureDescription { state.value }

    public var id: String { info.id }
    /// The scenario this fixture serves, read from the runner's answer (no second request).
    public var scenario: Scenario {
        let info = info
        return Scenario(name: info.scenario, group: info.group, summary: info.summary, expect: info.expect,
                        isCleartext: info.chainPEM.isEmpty)
    }
    /// The fixture's TCP port on the runner's host; every URL below uses it.
    public var port: Int { info.port }
    /// `https://localhost:PORT/` (`http://` for the cleartext scenario). Fine for pinning tests; ATS does not apply to
    /// localhost, so ATS tests use `qualifiedURL`.
    public var url: URL { info.url }
    /// `https://NAME.fixtures.test:PORT/`: what ATS tests must use — through `proxy`, or with the name in /etc/hosts.
    public var qualifiedURL: URL { info.qualifiedURL }
    /// `https://NAME.DOMAIN:PORT/` for each domain the runner serves (`serve --domain`): names TrustKit accepts.
    public var domainURLs: [URL] { info.domainURLs }
    /// SPKI pins (base64 SHA-256): this leaf, the CA, the backup, the published pinned leaf.
    public var pins: FixturePins { info.pins }
    /// The built-in CA, DER: what `SecCertificateCreateWithData` takes, and what a test trusts or pins; nil only when
    /// the runner's answer held no certificate.
    public var caCertificateDER: Data? { (try? PEM.blocks(in: info.caPEM))?.first }
    /// The built-in CA as PEM: install it (or pass it to your trust evaluator) so the control scenarios verify. `Data`,
    /// as `chainPEM` and the in-process `Certificate.pem` are.
    public var caCertificatePEM: Data { Data(info.caPEM.utf8) }
    /// The certificates the server sends, leaf first, DER (Alamofire's and AFNetworking's pinned `.cer` content).
    public var chainDER: [Data] { (try? PEM.blocks(in: info.chainPEM)) ?? [] }
    /// The certificates the server sends, leaf first, as concatenated PEM; empty for plain HTTP.
    public var chainPEM: Data { Data(info.chainPEM.utf8) }
    /// The simulated TLS proxy's root (`pin-mitm`), DER, for a test that installs it as a device would.
    public var interceptionRootDER: Data? { info.interceptionRootPEM.flatMap { try? PEM.blocks(in: $0).first } }
    /// The client certificate the server demands (`client-cert-required`): PEM and a `.p12` for `SecPKCS12Import`.
    public var clientIdentity: ClientIdentity? { info.clientIdentity }
    /// When the runner stops it unless renewed.
    public var expiresAt: Date { info.expiresAt }
    /// The runner's proxy, which resolves `qualifiedURL`'s name without /etc/hosts: give it to a URLSession with
    /// `URLSessionConfiguration.fixtures(through:)`.
    public var proxy: FixtureProxy? {
        guard let endpoint = info.proxy else { return nil }
        return FixtureProxy(host: runner.runnerURL.host ?? "localhost", port: endpoint.port, domains: endpoint.domains)
    }

    /// The scenario, where it listens and which fixture of which runner it is, for test logs:
    /// `expired at https://localhost:52011/ (fixture 3f2a…, runner http://localhost:9800)`.
    public var description: String {
        let info = info
        let runner = runner.runnerURL.absoluteString
        return "\(info.scenario) at \(info.url.absoluteString) (fixture \(info.id), runner \(runner))"
    }

    /// Extends the lease by `ttl` seconds from now (default: the fixture's own ttl).
    public func renew(ttl: Int? = nil) async throws {
        let body = try FixtureAPI.encoder().encode(RenewFixtureRequest(ttl: ttl))
        let renewed: FixtureDescription = try await runner.call("POST", "\(FixtureAPI.fixturesPath)/\(id)/renew", body: body, expecting: 200)
        state.value = renewed
    }

    /// Stops the fixture now. Idempotent, and safe from several tasks at once. If the runner cannot be reached the
    /// lease ends the fixture within its ttl, so this never throws; `stopChecked()` does.
    public func stop() async {
        try? await stopChecked()
    }

    /// `stop()`, reporting a runner that could not be reached.
    public func stopChecked() async throws {
        guard !stopped.exchange(true) else { return }
        let (data, status) = try await runner.send("DELETE", "\(FixtureAPI.fixturesPath)/\(id)")
        guard status == 204 || status == 200 else {
            stopped.value = false
            throw RemoteFixtureError.unexpectedAnswer(url: runner.endpoint("\(FixtureAPI.fixturesPath)/\(id)"), status: status,
                                                      detail: String(decoding: data.prefix(200), as: UTF8.self))
        }
    }
}

/// Runs `body` with a remote fixture and stops it afterwards, whether `body` returns or throws — the scope Swift
/// Testing tests use, as `withFixture` is in process:
///
/// ```swift
/// @Test func rejectsExpired() async throws {
///     try await withRemoteFixture("expired") { fixture in
///         // connect to fixture.url and expect your client to refuse it
///     }
/// }
/// ```
///
/// The body's value is returned and may be ignored (`@discardableResult`), as `withFixture`'s.
@discardableResult
public func withRemoteFixture<T: Sendable>(_ name: String, runner: RemoteFixtures = RemoteFixtures(), ttl: Int? = nil,
                                           _ body: (RemoteFixture) async throws -> T) async throws -> T {
    try await running(try await runner.start(name, ttl: ttl), body)
}

/// The same for a scenario given as JSON.
@discardableResult
public func withRemoteFixture<T: Sendable>(scenario: JSONValue, runner: RemoteFixtures = RemoteFixtures(), ttl: Int? = nil,
                                           _ body: (RemoteFixture) async throws -> T) async throws -> T {
    try await running(try await runner.start(scenario: scenario, ttl: ttl), body)
}

private func running<T: Sendable>(_ fixture: RemoteFixture, _ body: (RemoteFixture) async throws -> T) async throws -> T {
    try await runThenStop(fixture, body) { await $0.stop() }
}

/// A value behind a lock (Foundation only: this module links nothing else).
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }

    /// Runs `body` on the value under the lock: a read and a write no other thread comes between.
    func update<T>(_ body: (inout Value) -> T) -> T {
        lock.lock(); defer { lock.unlock() }
        return body(&stored)
    }

    /// Sets `newValue` and returns the old one, atomically.
    func exchange(_ newValue: Value) -> Value {
        lock.lock(); defer { lock.unlock() }
        let old = stored
        stored = newValue
        return old
    }
}
