import Foundation
import Logging
import NIOCore
import NIOPosix

/// Serves many scenarios at once on their fixed ports: what `tls-fixtures serve` runs.
public final class ScenarioRunner: Sendable {
    public struct Options: Sendable {
        /// Dashboard port; scenario `P` of the catalog listens on `P - 9800 + portBase`.
        public var portBase: Int = ScenarioCatalog.defaultPortBase
        public var bindAddresses: [String]? = nil
        public var handshakeTimeout: TimeAmount = .seconds(10)
        /// For the fixtures and the dashboard alike.
        public var idleTimeout: TimeAmount = .seconds(60)
        /// For the fixtures and the dashboard alike (see `FixtureConfiguration.headerTimeout`).
        public var headerTimeout: TimeAmount = .seconds(20)
        /// Per fixture; nil: a quarter of the descriptor limit. The dashboard holds at most 256 whatever this says.
        public var maximumConnections: Int? = nil
        public var logger: Logger? = nil
        /// The `make legacy-openssl` helper that serves, in a process of its own, the built-in scenarios the linked
        /// OpenSSL cannot (SSLv3, RC4, 3DES); nil leaves them reported unsupported.
        public var legacyHelper: URL? = nil
        public init() {}
    }

    /// Progress for the slow first run (RSA-4096/8192 key generation).
    public enum Progress: Sendable {
        case generating(scenario: String, key: KeySpec)
        case prepared(scenario: String)
    }

    public struct Started: Sendable {
        public let scenario: Scenario
        public let fixture: FixtureServer
    }

    public let catalog: ScenarioCatalog
    public let store: CertificateStore
    public let options: Options
    public let started: [Started]
    public let unsupported: [(scenario: Scenario, reason: String)]
    /// The OCSP responder, CRL endpoint and refusing port of the revocation scenarios, on their fixed ports
    /// (`portBase` + 99 and + 98); nil when none is served.
    public let revocationServices: RevocationServices?
    /// Scenarios the legacy helper serves, as its report lists them.
    public let legacyServed: [(scenario: Scenario, entry: CatalogEntry)]
    private let legacyHelper: LegacyHelperProcess?
    /// Set when this process may hold fewer descriptors than these fixtures want (macOS's default soft limit is 256,
    /// and it cannot be raised past kern.maxfilesperproc): one line saying so and how to raise it.
    public let descriptorWarning: String?

    private init(catalog: ScenarioCatalog, store: CertificateStore, options: Options, started: [Started],
                 unsupported: [(scenario: Scenario, reason: String)], revocationServices: RevocationServices?,
                 legacyServed: [(scenario: Scenario, entry: CatalogEntry)], legacyHelper: LegacyHelperProcess?, descriptorWarning: String?) {
        self.catalog = catalog; self.store = store; self.options = options; self.started = started; self.unsupported = unsupported
        self.revocationServices = revocationServices; self.legacyServed = legacyServed; self.legacyHelper = legacyHelper
        self.descriptorWarning = descriptorWarning
    }

    /// Prepares every scenario (in parallel, slowest keys first), then starts each on its port. Scenarios the linked
    /// OpenSSL cannot serve are reported, not fatal; any other failure (a port in use) stops everything started so far
    /// and throws, so nothing is left listening.
    public static func start(_ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options(),
                             progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> ScenarioRunner {
        // Bad timeouts are refused before minutes of key generation, not after.
        try options.fixtureConfiguration(port: 0).validate()
        let plans = scenarios.filter(\.needsRevocationServices).compactMap { $0.certificate?.revocation }
        var services: RevocationServices? = nil
        if !plans.isEmpty {
            services = try await RevocationServices.start(
                bindAddresses: options.bindAddresses,
                responderPort: options.portBase + ScenarioCatalog.revocationResponderOffset,
                refusingPort: options.portBase + ScenarioCatalog.refusingPortOffset,
                responder: plans.contains(where: \.needsResponder), refusing: plans.contains(where: \.needsRefusingPort))
        }
        let endpoints = services?.endpoints ?? .serve(portBase: options.portBase)
        let prepared: [String: Result<PreparedScenario, Error>]
        do {
            prepared = try await prepare(scenarios, store: store, revocationEndpoints: endpoints, progress: progress)
        } catch {
            await services?.stop()
            throw error
        }
        for case .success(let ready) in prepared.values {
            if let record = ready.revocation { services?.registry.register(record) }
        }
        var started: [Started] = []
        var unsupported: [(Scenario, String)] = []
        do {
            for scenario in scenarios {
                switch prepared[scenario.name] {
                case .failure(let error as ScenarioUnsupported)?:
                    unsupported.append((scenario, error.reason))
                case .failure(let error)?:
                    throw error
                case .success(let ready)?:
                    let configuration = options.fixtureConfiguration(port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
                    started.append(Started(scenario: scenario, fixture: try await FixtureServer.start(ready, configuration: configuration)))
                case nil:
                    continue
                }
            }
        } catch {
            for running in started { await running.fixture.stop() }
            await services?.stop()
            throw error
        }
        // The built-in scenarios this OpenSSL cannot serve go to the legacy helper, if there is one; whatever it cannot serve
        // either stays reported, with its reason.
        var legacyServed: [(Scenario, CatalogEntry)] = []
        var helper: LegacyHelperProcess? = nil
        let forHelper = unsupported.map(\.0).filter { ScenarioCatalog.builtIn.names.contains($0.name) }
        if let path = options.legacyHelper, !forHelper.isEmpty {
            do {
                let process = try await NIOThreadPool.singleton.runIfActive {
                    try LegacyHelperProcess(helper: path, names: forHelper.map(\.name), storeDirectory: store.directory, options: options)
                }
                helper = process
                for entry in process.document.scenarios where entry.status == .serving {
                    guard let scenario = forHelper.first(where: { $0.name == entry.name }) else { continue }
                    var served = entry
                    served.servedBy = "the legacy helper, linked with \(process.document.openSSL)"
                    legacyServed.append((scenario, served))
                }
                unsupported.removeAll { pair in legacyServed.contains { $0.0.name == pair.0.name } }
            } catch {
                for running in started { await running.fixture.stop() }
                await services?.stop()
                throw error
            }
        }
        // Every address a fixture listens on (loopback: 127.0.0.1 and ::1) is a descriptor, and so is each connection.
        let addresses = max(1, started.map(\.fixture.boundAddresses.count).max() ?? options.bindAddresses?.count ?? 2)
        let warning = FileDescriptorLimit.warning(FileDescriptorLimit.raiseOnce(), scenarios: started.count, addresses: addresses)
        return ScenarioRunner(catalog: catalog, store: store, options: options, started: started, unsupported: unsupported,
                              revocationServices: services, legacyServed: legacyServed, legacyHelper: helper, descriptorWarning: warning)
    }

    /// Prepares scenarios in parallel (one per core, slowest keys first): key generation is CPU-bound, and the
    /// store's per-item locks keep parallel preparations from making anything twice. Results by scenario name.
    public static func prepare(_ scenarios: [Scenario], store: CertificateStore, revocationEndpoints: RevocationEndpoints = .serveDefault,
                               progress: @escaping @Sendable (Progress) -> Void) async throws -> [String: Result<PreparedScenario, Error>] {
        // The CA first, once, so parallel preparations do not all wait on its lock.
        _ = try await NIOThreadPool.singleton.runIfActive { try store.ca() }   // may generate a key: not on the cooperative pool
        let ordered = scenarios.sorted { cost($0) > cost($1) }
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (String, Result<PreparedScenario, Error>).self) { group in
            var results: [String: Result<PreparedScenario, Error>] = [:]
            var iterator = ordered.makeIterator()
            func launch(_ scenario: Scenario) {
                group.addTask {
                    if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
                       !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key) {
                        progress(.generating(scenario: scenario.name, key: plan.key))
                    }
                    let result = await Result { try await FixtureServer.prepare(scenario, store: store, revocationEndpoints: revocationEndpoints) }
                    progress(.prepared(scenario: scenario.name))
                    return (scenario.name, result)
                }
            }
            for _ in 0..<width { if let next = iterator.next() { launch(next) } }
            while let (name, result) = await group.next() {
                results[name] = result
                if let next = iterator.next() { launch(next) }
            }
            return results
        }
    }

    private static func cost(_ scenario: Scenario) -> Int {
        guard let plan = scenario.certificate, case .rsa(let bits) = plan.key else { return 0 }
        return bits
    }

    /// Stops every fixture; each closes its connections within a second, and they stop concurrently.
    public func stop() async {
        await withTaskGroup(of: Void.self) { group in
            for running in started { group.addTask { await running.fixture.stop() } }
        }
        await revocationServices?.stop()
        if let legacyHelper { try? await NIOThreadPool.singleton.runIfActive { legacyHelper.stop() } }
    }

    /// The catalog document for what is running (dashboard `/scenarios.json`, `serve --json`).
    public func document(dashboard: String?) -> CatalogDocument {
        let servingByName = Dictionary(started.map { ($0.scenario.name, $0.fixture) }, uniquingKeysWith: { a, _ in a })
        let unsupportedByName = Dictionary(unsupported.map { ($0.scenario.name, $0.reason) }, uniquingKeysWith: { a, _ in a })
        let legacyByName = Dictionary(legacyServed.map { ($0.scenario.name, $0.entry) }, uniquingKeysWith: { a, _ in a })
        let requested = started.map(\.scenario) + unsupported.map(\.scenario) + legacyServed.map(\.scenario)
        let entries = catalog.scenarios.filter { s in requested.contains { $0.name == s.name } }.map { scenario -> CatalogEntry in
            if let fixture = servingByName[scenario.name] {
                var entry = CatalogEntry(scenario: scenario, port: fixture.port, host: FixtureServer.urlHost(listeningOn: fixture.boundAddresses),
                                         status: .serving, pins: fixture.pins)
                entry.revocationSources = fixture.prepared.credential.flatMap { RevocationSources(leaf: $0.certificate) }
                entry.unavailableCiphers = fixture.prepared.unavailableCiphers.isEmpty ? nil : fixture.prepared.unavailableCiphers
                return entry
            }
            if let served = legacyByName[scenario.name] { return served }
            return CatalogEntry(scenario: scenario, port: catalog.port(of: scenario, portBase: options.portBase), status: .unsupported,
                                reason: unsupportedByName[scenario.name])
        }
        var document = CatalogDocument(dashboard: dashboard, scenarios: entries)
        document.revocationResponder = revocationServices?.responderPort.map { _ in revocationServices!.endpoints.responder }
        return document
    }
}

extension ScenarioRunner.Options {
    /// How each fixture listens: these options, on `port`.
    func fixtureConfiguration(port: Int) -> FixtureConfiguration {
        var configuration = FixtureConfiguration(bindAddresses: bindAddresses, port: port, handshakeTimeout: handshakeTimeout,
                                                 idleTimeout: idleTimeout, headerTimeout: headerTimeout,
                                                 maximumConnections: maximumConnections)
        if let logger { configuration.logger = logger }
        return configuration
    }
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
