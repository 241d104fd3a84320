import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TLSFixturesWire
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesOpenSSL

/// Why a control API request failed: the HTTP status and the one-line body.
struct ControlAPIFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package var status: Int
    package var body: APIError
    /// For `405`: the methods the resource takes (the `Allow` header).
    public var allow: String?

    package init(_ status: Int, _ message: String, field: String? = nil) {
        self.status = status
        body = APIError(error: message.escapingControlCharacters, field: field)
    }

    public var description: String { "\(status): \(body.error)" }
}

/// The fixtures started through the control API, each on a free port with a lease: a fixture whose lease passes
/// without a renew is stopped, so a test run that crashed leaves nothing listening.
///
/// Inline scenarios (a scenario file's JSON in the request) are decoded by the scenario files' own strict decoder and
/// prepared in memory only (`PreparationStorage.memory`): nothing they name is written to the user's store, so an
/// inline scenario called `pinned` (refused anyway: catalog names are taken) or one whose `keyName` is `pinned` can
/// neither replace the published pinned certificate nor the key apps pin. A `keyName` may name a key the catalog uses
/// (with the catalog's key type), which is how an inline scenario re-issues on the pinned key, as `pin-reissued` does;
/// it is read, never replaced. `backup` (the published backup pin, which no server may use) and `client` (the client
/// identity) are not catalog keys, so they are refused.
package final class FixtureLeases: Sendable {
    struct Lease: Sendable {
        var fixture: FixtureServer
        /// Everything but the lease fields, made once at start.
        var description: FixtureDescription
        var expiry: Scheduled<Void>
        /// Moves on every renew, so an expiry timer that fired late cannot stop a renewed fixture.
        var generation: Int
    }

    private struct State {
        var leases: [String: Lease] = [:]
        /// Starts under way: they count against the cap before their fixture exists.
        var starting = 0
        var stopped = false
    }

    private let store: CertificateStore
    private let catalog: ScenarioCatalog
    private let options: ScenarioRunner.Options
    private let directory: FixtureDirectory
    private let state = NIOLockedValueBox(State())
    private let proxyEndpoint = NIOLockedValueBox<ProxyEndpoint?>(nil)
    /// Inline scenarios prepared lately, so the same scenario started again gets the same leaf (and pins) quickly.
    private let inlineCache = NIOLockedValueBox<[(Scenario, PreparedScenario)]>([])
    private static let inlineCacheSize = 32
    private let eventLoop = MultiThreadedEventLoopGroup.singleton.next()

    init(store: CertificateStore, catalog: ScenarioCatalog, options: ScenarioRunner.Options, directory: FixtureDirectory) {
        self.store = store; self.catalog = catalog; self.options = options; self.directory = directory
    }

    /// The proxy every description names (set once the dashboard or `--proxy-port` listens).
    public func setProxy(_ endpoint: ProxyEndpoint?) { proxyEndpoint.withLockedValue { $0 = endpoint } }

    /// Where the runner's proxy listens, once it does.
    public var proxy: ProxyEndpoint? { proxyEndpoint.withLockedValue { $0 } }

    /// Fixtures running now.
    public var count: Int { state.withLockedValue { $0.leases.count } }

    // MARK: Starting

    /// Starts the fixture `request` asks for: `201`'s body, or a failure with its status.
    public func start(_ request: StartFixtureRequest) async throws -> FixtureDescription {
        let ttl = try Self.checkTTL(request.ttl)
        if let session = request.session, !FixtureAPI.isValidSession(session) {
            throw ControlAPIFailure(400, "session \"\(session)\" is not a session tag: use 1–\(FixtureAPI.maximumSessionLength) letters, digits, '.', '_' or '-'", field: "session")
        }
        let (scenario, storage) = try resolve(request.scenario)
        try state.withLockedValue { state in
            if state.stopped { throw ControlAPIFailure(503, "the runner is stopping") }
            if state.leases.count + state.starting >= FixtureAPI.maximumLiveFixtures {
                throw ControlAPIFailure(429, "\(FixtureAPI.maximumLiveFixtures) fixtures started through the API are running, the most at once; "
                                        + "stop some (DELETE /api/fixtures/ID or /api/sessions/TAG) or let their leases end")
            }
            state.starting += 1
        }
        defer { state.withLockedValue { $0.starting -= 1 } }

        let prepared: PreparedScenario
        do {
            prepared = try await prepare(scenario, storage: storage)
        } catch let unsupported as ScenarioUnsupported {
            throw ControlAPIFailure(422, "\(unsupported)", field: "scenario")
        } catch {
            throw ControlAPIFailure(422, "cannot prepare \(scenario.name): \(error)", field: "scenario")
        }
        let configuration = options.fixtureConfiguration(port: 0)
        let fixture: FixtureServer
        do {
            fixture = try await FixtureServer.start(prepared, configuration: configuration)
        } catch {
            throw ControlAPIFailure(503, "cannot listen for \(scenario.name): \(error)")
        }
        let id = Self.newID()
        let description: FixtureDescription
        do {
            description = try describe(fixture, id: id, session: request.session, ttl: ttl)
        } catch {
            await fixture.stop()
            throw ControlAPIFailure(500, "cannot describe \(scenario.name): \(error)")
        }
        let admitted = state.withLockedValue { state -> Bool in
            guard !state.stopped else { return false }
            state.leases[id] = Lease(fixture: fixture, description: description, expiry: schedule(id, generation: 0, after: ttl),
                                     generation: 0)
            return true
        }
        guard admitted else {
            await fixture.stop()
            throw ControlAPIFailure(503, "the runner is stopping")
        }
        directory.add(fixture)
        return withProxy(description)
    }

    static func checkTTL(_ ttl: Int?) throws -> Int {
        let ttl = ttl ?? FixtureAPI.defaultTTL
        guard (1...FixtureAPI.maximumTTL).contains(ttl) else {
            throw ControlAPIFailure(400, "ttl \(ttl) is not a lease: give whole seconds from 1 to \(FixtureAPI.maximumTTL)", field: "ttl")
        }
        return ttl
    }

    /// The scenario a request names, and where its material may live.
    private func resolve(_ reference: ScenarioReference) throws -> (Scenario, PreparationStorage) {
        switch reference {
        case .name(let name):
            do { return (try catalog.scenario(named: name), .store) } catch {
                throw ControlAPIFailure(400, "\(error)", field: "scenario")
            }
        case .inline(let json):
            let scenario: Scenario
            do {
                scenario = try ScenarioCatalog.decode(try JSONEncoder().encode(json), source: "scenario")
            } catch let error as ScenarioError where error.code == .malformed {
                let problem = error.problem ?? error.reason
                // "at tls.minVersion: …" names the key; the field is that key inside `scenario`.
                if problem.hasPrefix("at "), let colon = problem.range(of: ": ") {
                    let path = String(problem[problem.index(problem.startIndex, offsetBy: 3)..<colon.lowerBound])
                    throw ControlAPIFailure(400, "scenario.\(path): \(problem[colon.upperBound...])", field: "scenario.\(path)")
                }
                throw ControlAPIFailure(400, "scenario: \(problem)", field: "scenario")
            }
            if catalog.names.contains(scenario.name) {
                throw ControlAPIFailure(400, "\"\(scenario.name)\" is the name of a catalog scenario; give yours a name of its own "
                                        + "(or start the catalog's with {\"scenario\": \"\(scenario.name)\"})", field: "scenario.name")
            }
            if let plan = scenario.certificate, let keyName = plan.keyName {
                let keys = catalogKeys()
                guard let spec = keys[keyName] else {
                    throw ControlAPIFailure(400, "keyName \"\(keyName)\" is not a key of the catalog's (such as pinned, or a scenario's own name); "
                                            + "leave it out for a key of this fixture's own", field: "scenario.certificate.keyName")
                }
                guard spec == plan.key else {
                    throw ControlAPIFailure(400, "keyName \"\(keyName)\" is a \(spec) key; a scenario that shares it must say \"key\": \"\(spec)\"",
                                            field: "scenario.certificate.key")
                }
            }
            return (scenario, .memory)
        }
    }

    /// Every key the catalog's scenarios use, by name, with its type.
    private func catalogKeys() -> [String: KeySpec] {
        var keys: [String: KeySpec] = [:]
        for scenario in catalog.scenarios {
            guard let plan = scenario.certificate else { continue }
            keys[plan.keyName ?? scenario.name] = plan.key
        }
        return keys
    }

    private func prepare(_ scenario: Scenario, storage: PreparationStorage) async throws -> PreparedScenario {
        if storage == .memory, let cached = inlineCache.withLockedValue({ $0.first { $0.0 == scenario }?.1 }) { return cached }
        let domains = options.domains
        let store = store
        let made = try await NIOThreadPool.singleton.runIfActive { try store.prepare(scenario, domains: domains, storage: storage) }
        if storage == .memory {
            inlineCache.withLockedValue { cache in
                cache.removeAll { $0.0 == scenario }
                cache.insert((scenario, made), at: 0)
                if cache.count > Self.inlineCacheSize { cache.removeLast() }
            }
        }
        return made
    }

    private static func newID() -> String {
        (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.map { String(repeating: "0", count: 16 - $0.count) + $0 }
            .joined().prefix(20).description
    }

    private func describe(_ fixture: FixtureServer, id: String, session: String?, ttl: Int) throws -> FixtureDescription {
        let prepared = fixture.prepared
        let scenario = prepared.scenario
        var interception: String? = nil
        if scenario.expect.trustedRoots?.contains(BuiltinAuthority.interceptionRoot.rawValue) == true {
            interception = String(decoding: try store.authority(.interceptionRoot).certificate.pem, as: UTF8.self)
        }
        var identity: ClientIdentity? = nil
        if let client = prepared.clientCredential {
            identity = ClientIdentity(
                certificatePEM: String(decoding: client.chainPEM, as: UTF8.self),
                privateKeyPEM: String(decoding: try client.privateKey.pem, as: UTF8.self),
                pkcs12: try PKCS12Export.archive(certificate: client.certificate, key: client.privateKey, chain: client.intermediates,
                                                 friendlyName: "swift-tls-fixtures client"),
                pkcs12Password: PKCS12Export.defaultPassword)
        }
        let expect = scenario.expect
        return FixtureDescription(
            id: id, scenario: scenario.name, group: scenario.group.rawValue, summary: scenario.summary, port: fixture.port,
            url: fixture.url, qualifiedURL: fixture.qualifiedURL, domainURLs: fixture.domainURLs, pins: fixture.pins,
            caPEM: String(decoding: prepared.caCertificate.pem, as: UTF8.self),
            chainPEM: String(decoding: fixture.chainPEM, as: UTF8.self), interceptionRootPEM: interception,
            clientIdentity: identity,
            expect: FixtureExpectations(verify: expect.verify, ats: expect.ats, atsFix: expect.atsFix, trustedRoots: expect.trustedRoots,
                                        pins: expect.pins, note: expect.note),
            proxy: nil, session: session, ttl: ttl, expiresAt: Date().addingTimeInterval(TimeInterval(ttl)))
    }

    // MARK: Leases

    private func schedule(_ id: String, generation: Int, after ttl: Int) -> Scheduled<Void> {
        eventLoop.scheduleTask(in: .seconds(Int64(ttl))) { [weak self] in
            self?.expire(id, generation: generation)
        }
    }

    private func expire(_ id: String, generation: Int) {
        let ended = state.withLockedValue { state -> FixtureServer? in
            guard let lease = state.leases[id], lease.generation == generation else { return nil }
            state.leases[id] = nil
            return lease.fixture
        }
        guard let ended else { return }
        directory.remove(ended)
        eventLoop.makeFutureWithTask { await ended.stop() }.whenComplete { _ in }
    }

    /// A fresh lease of `ttl` seconds (default: the fixture's own) from now.
    public func renew(_ id: String, ttl: Int?) throws -> FixtureDescription {
        let requested = try ttl.map { try Self.checkTTL($0) }
        return try state.withLockedValue { state in
            guard var lease = state.leases[id] else { throw Self.unknown(id) }
            lease.expiry.cancel()
            lease.generation += 1
            lease.description.ttl = requested ?? lease.description.ttl
            lease.description.expiresAt = Date().addingTimeInterval(TimeInterval(lease.description.ttl))
            lease.expiry = schedule(id, generation: lease.generation, after: lease.description.ttl)
            state.leases[id] = lease
            return withProxy(lease.description)
        }
    }

    package func describe(_ id: String) throws -> FixtureDescription {
        guard let lease = state.withLockedValue({ $0.leases[id] }) else { throw Self.unknown(id) }
        return withProxy(lease.description)
    }

    /// Running fixtures, oldest lease end first; only `session`'s when given.
    public func list(session: String? = nil) -> [FixtureDescription] {
        state.withLockedValue { $0.leases.values.map(\.description) }
            .filter { session == nil || $0.session == session }
            .sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
            .map(withProxy)
    }

    private func withProxy(_ description: FixtureDescription) -> FixtureDescription {
        var description = description
        description.proxy = proxy
        return description
    }

    static func unknown(_ id: String) -> ControlAPIFailure {
        ControlAPIFailure(404, "no fixture \"\(id)\": it was stopped or its lease ended (GET /api/fixtures lists the running ones)")
    }

    // MARK: Stopping

    /// Stops the fixture; false when there was none by that id (already stopped: not an error).
    @discardableResult
    public func stop(_ id: String) async -> Bool {
        guard let lease = state.withLockedValue({ $0.leases.removeValue(forKey: id) }) else { return false }
        lease.expiry.cancel()
        directory.remove(lease.fixture)
        await lease.fixture.stop()
        return true
    }

    /// Stops everything `session` started; how many.
    public func stopSession(_ session: String) async -> Int {
        let ended = state.withLockedValue { state -> [Lease] in
            let ids = state.leases.filter { $0.value.description.session == session }.map(\.key)
            return ids.compactMap { state.leases.removeValue(forKey: $0) }
        }
        await stopLeases(ended)
        return ended.count
    }

    /// Stops every API fixture and refuses new ones (the runner is stopping).
    public func stopAll() async {
        let ended = state.withLockedValue { state -> [Lease] in
            state.stopped = true
            defer { state.leases = [:] }
            return Array(state.leases.values)
        }
        await stopLeases(ended)
    }

    private func stopLeases(_ leases: [Lease]) async {
        for lease in leases { lease.expiry.cancel(); directory.remove(lease.fixture) }
        await withTaskGroup(of: Void.self) { group in
            for lease in leases { group.addTask { await lease.fixture.stop() } }
        }
    }
}
