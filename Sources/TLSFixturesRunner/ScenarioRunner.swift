import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer

/// Serves many scenarios at once on their fixed ports: what `tls-fixtures serve` runs.
///
/// On a store that is still empty the slow keys (RSA-4096 and -8192, and large DH groups) would hold everything up for
/// a minute, so those scenarios are made in the background once the rest are serving: their ports are held meanwhile,
/// the catalog document says `preparing`, and each is served the moment it is ready.
package final class ScenarioRunner: Sendable {
    package struct Options: Sendable {
        /// Dashboard port; scenario `P` of the catalog listens on `P - 9800 + portBase`.
        public var portBase: Int = ScenarioCatalog.defaultPortBase
        package var bindAddresses: [String]? = nil
        package var handshakeTimeout: TimeAmount = .seconds(10)
        /// For the fixtures and the dashboard alike.
        public var idleTimeout: TimeAmount = .seconds(60)
        /// For the fixtures and the dashboard alike (see `FixtureConfiguration.headerTimeout`).
        public var headerTimeout: TimeAmount = .seconds(20)
        /// Per fixture; nil: a quarter of the descriptor limit. The dashboard holds at most 256 whatever this says.
        public var maximumConnections: Int? = nil
        package var logger: Logger? = nil
        /// The `make legacy-openssl` helper that serves, in a process of its own, the built-in scenarios the linked
        /// OpenSSL cannot (SSLv3, RC4, 3DES); nil leaves them reported unsupported.
        public var legacyHelper: URL? = nil
        /// Domains every baseline leaf also names as `NAME.DOMAIN` (`--domain`); the CA must permit them.
        public var domains: [String] = []
        /// Make slow keys after the rest are serving (the default); false prepares everything before serving anything.
        public var backgroundPreparation = true
        package init() {}
    }

    /// Progress for the slow first run.
    public enum Progress: Sendable {
        /// A key is being generated before the scenario can be served (`backgroundPreparation` off).
        case generating(scenario: String, key: KeySpec)
        case prepared(scenario: String)
        /// Served later, once what it needs (`making`: "the rsa:8192 key", "a 3072-bit DH group") is made in the
        /// background.
        case preparingInBackground(scenario: String, making: String)
        /// A scenario prepared in the background now listens on `port`.
        case serving(scenario: String, port: Int)
        /// A scenario prepared in the background could not be served.
        case failed(scenario: String, reason: String)
    }

    package struct Started: Sendable {
        package let scenario: Scenario
        package let fixture: FixtureServer
    }

    package let catalog: ScenarioCatalog
    package let store: CertificateStore
    package let options: Options
    /// Every port served right now (fixed and API-started): what the CONNECT proxy may reach.
    public let directory: FixtureDirectory
    /// Fixtures started through the control API, with their leases.
    public let leases: FixtureLeases
    /// The OCSP responder, CRL endpoint and refusing port of the revocation scenarios, on their fixed ports
    /// (`portBase` + 99 and + 98); nil when none is served.
    public let revocationServices: RevocationServices?
    /// Scenarios the legacy helper serves, as its report lists them.
    public let legacyServed: [(scenario: Scenario, entry: CatalogEntry)]
    private let legacyHelper: LegacyHelperProcess?
    /// Set when this process may hold fewer descriptors than these fixtures want (macOS's default soft limit is 256,
    /// and it cannot be raised past kern.maxfilesperproc): one line saying so and how to raise it.
    public let descriptorWarning: String?
    private let state: NIOLockedValueBox<State>
    private let backgroundDone: NIOLockedValueBox<EventLoopFuture<Void>?>

    private struct State {
        var started: [Started] = []
        var unsupported: [(scenario: Scenario, reason: String)] = []
        var failed: [(scenario: Scenario, reason: String)] = []
        /// Name → the reservation holding its port.
        var preparing: [String: (scenario: Scenario, reservation: PortReservation)] = [:]
        var stopped = false
        /// Moves on every change, so the dashboard knows when to render again.
        var generation = 0
    }

    /// Serving now, in catalog order.
    public var started: [Started] { state.withLockedValue { $0.started } }
    package var unsupported: [(scenario: Scenario, reason: String)] { state.withLockedValue { $0.unsupported } }
    /// Still being made in the background.
    public var preparing: [Scenario] { state.withLockedValue { state in state.preparing.values.map(\.scenario) } }
    /// Made in the background but not served (the reason says why).
    public var failed: [(scenario: Scenario, reason: String)] { state.withLockedValue { $0.failed } }
    /// Changes whenever a scenario moves from preparing to served (or failed).
    public var generation: Int { state.withLockedValue { $0.generation } }

    private init(catalog: ScenarioCatalog, store: CertificateStore, options: Options, state: State, directory: FixtureDirectory,
                 revocationServices: RevocationServices?, legacyServed: [(scenario: Scenario, entry: CatalogEntry)],
                 legacyHelper: LegacyHelperProcess?, descriptorWarning: String?) {
        self.catalog = catalog; self.store = store; self.options = options
        self.revocationServices = revocationServices; self.legacyServed = legacyServed; self.legacyHelper = legacyHelper
        self.state = NIOLockedValueBox(state); self.directory = directory
        self.descriptorWarning = descriptorWarning
        self.leases = FixtureLeases(store: store, catalog: catalog, options: options, directory: directory)
        self.backgroundDone = NIOLockedValueBox(nil)
    }

    /// Prepares the scenarios that are quick to make (in parallel), starts each on its port, and returns; the slow ones
    /// follow in the background (see the type's summary). Scenarios the linked OpenSSL cannot serve are reported, not
    /// fatal; any other failure (a port in use, domains the CA does not permit) stops everything started so far and
    /// throws, so nothing is left listening.
    public static func start(_ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options(),
                             progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> ScenarioRunner {
        // Bad timeouts are refused before minutes of key generation, not after.
        try options.fixtureConfiguration(port: 0).validate()
        var options = options
        options.domains = try FixtureDomains.normalize(options.domains)
        let ca = try await NIOThreadPool.singleton.runIfActive { try store.ca() }   // may generate a key: not on the cooperative pool
        try FixtureDomains.requirePermitted(options.domains, by: ca.certificate)

        let slow = options.backgroundPreparation ? scenarios.filter { slowWork(of: $0, store: store) != nil } : []
        let quick = scenarios.filter { scenario in !slow.contains { $0.name == scenario.name } }
        let directory = FixtureDirectory()
        var state = State()
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
        do {
            for scenario in slow {
                let configuration = options.fixtureConfiguration(port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
                state.preparing[scenario.name] = (scenario, try await PortReservation.hold(configuration))
                progress(.preparingInBackground(scenario: scenario.name, making: slowWork(of: scenario, store: store) ?? "its keys"))
            }
            let prepared = try await prepare(quick, store: store, domains: options.domains, revocationEndpoints: endpoints,
                                             progress: progress)
            for case .success(let ready) in prepared.values {
                if let record = ready.revocation { services?.registry.register(record) }
            }
            for scenario in quick {
                switch prepared[scenario.name] {
                case .failure(let error as ScenarioUnsupported)?:
                    state.unsupported.append((scenario, error.reason))
                case .failure(let error)?:
                    throw error
                case .success(let ready)?:
                    let configuration = options.fixtureConfiguration(port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
                    let fixture = try await FixtureServer.start(ready, configuration: configuration)
                    state.started.append(Started(scenario: scenario, fixture: fixture))
                    directory.add(fixture)
                case nil:
                    continue
                }
            }
        } catch {
            for running in state.started { await running.fixture.stop() }
            for (_, held) in state.preparing { await held.reservation.release() }
            await services?.stop()
            throw error
        }
        // The built-in scenarios this OpenSSL cannot serve go to the legacy helper, if there is one; whatever it cannot serve
        // either stays reported, with its reason.
        var legacyServed: [(scenario: Scenario, entry: CatalogEntry)] = []
        var helper: LegacyHelperProcess? = nil
        let forHelper = state.unsupported.map(\.scenario).filter { ScenarioCatalog.builtIn.names.contains($0.name) }
        if let path = options.legacyHelper, !forHelper.isEmpty {
            do {
                let process = try await NIOThreadPool.singleton.runIfActive { [options] in
                    try LegacyHelperProcess(helper: path, names: forHelper.map(\.name), storeDirectory: store.directory, options: options)
                }
                helper = process
                for entry in process.document.scenarios where entry.status == .serving {
                    guard let scenario = forHelper.first(where: { $0.name == entry.name }) else { continue }
                    var served = entry
                    served.servedBy = "the legacy helper, linked with \(process.document.openSSL)"
                    legacyServed.append((scenario, served))
                }
                state.unsupported.removeAll { pair in legacyServed.contains { $0.scenario.name == pair.scenario.name } }
            } catch {
                for running in state.started { await running.fixture.stop() }
                for (_, held) in state.preparing { await held.reservation.release() }
                await services?.stop()
                throw error
            }
        }
        // Every address a fixture listens on (loopback: 127.0.0.1 and ::1) is a descriptor, and so is each connection.
        let addresses = max(1, state.started.map(\.fixture.boundAddresses.count).max() ?? options.bindAddresses?.count ?? 2)
        let warning = FileDescriptorLimit.warning(FileDescriptorLimit.raiseOnce(), scenarios: scenarios.count, addresses: addresses)
        let runner = ScenarioRunner(catalog: catalog, store: store, options: options, state: state, directory: directory,
                                    revocationServices: services, legacyServed: legacyServed, legacyHelper: helper,
                                    descriptorWarning: warning)
        if !slow.isEmpty { runner.prepareInBackground(slow, revocationEndpoints: endpoints, progress: progress) }
        return runner
    }

    /// What makes `scenario` slow to prepare on this store, if anything: an RSA key of 4096 bits or more, or a DH group
    /// of 2048 bits or more that has to be generated (not a named group, not made yet): seconds to a minute each.
    static func slowWork(of scenario: Scenario, store: CertificateStore) -> String? {
        if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
           !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key) {
            return "the \(plan.key) key"
        }
        if case .bits(let bits)? = scenario.tls?.dh, bits >= 2048, !store.hasDHParameters(bits: bits) { return "a \(bits)-bit DH group" }
        return nil
    }

    /// Makes the slow scenarios on every core, then serves each on the port its reservation held.
    private func prepareInBackground(_ scenarios: [Scenario], revocationEndpoints: RevocationEndpoints,
                                     progress: @escaping @Sendable (Progress) -> Void) {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        backgroundDone.withLockedValue { $0 = promise.futureResult }
        promise.completeWithTask { [self] in
            let results = (try? await Self.prepare(scenarios, store: store, domains: options.domains,
                                                      revocationEndpoints: revocationEndpoints, progress: { _ in })) ?? [:]
            for scenario in scenarios {
                let result = results[scenario.name] ?? .failure(ScenarioUnsupported(scenario: scenario.name, reason: "not prepared"))
                await serveWhenReady(scenario, result, progress: progress)
            }
        }
    }

    private func serveWhenReady(_ scenario: Scenario, _ result: Result<PreparedScenario, Error>,
                                progress: @Sendable (Progress) -> Void) async {
        guard let held = state.withLockedValue({ $0.stopped ? nil : $0.preparing[scenario.name] }) else { return }
        await held.reservation.release()
        let outcome: Result<FixtureServer, Error>
        switch result {
        case .success(let ready):
            if let record = ready.revocation { revocationServices?.registry.register(record) }
            let configuration = options.fixtureConfiguration(port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
            outcome = await Result { try await FixtureServer.start(ready, configuration: configuration) }
        case .failure(let error):
            outcome = .failure(error)
        }
        let stopAgain: FixtureServer? = state.withLockedValue { state in
            state.preparing[scenario.name] = nil
            state.generation += 1
            switch outcome {
            case .success(let fixture):
                if state.stopped { return fixture }
                state.started.append(Started(scenario: scenario, fixture: fixture))
                state.started.sort { catalogIndex($0.scenario) < catalogIndex($1.scenario) }
                directory.add(fixture)
            case .failure(let error as ScenarioUnsupported):
                state.unsupported.append((scenario, error.reason))
            case .failure(let error):
                state.failed.append((scenario, "\(error)"))
            }
            return nil
        }
        if let stopAgain {
            await stopAgain.stop()
            return
        }
        switch outcome {
        case .success(let fixture): progress(.serving(scenario: scenario.name, port: fixture.port))
        case .failure(let error as ScenarioUnsupported): progress(.failed(scenario: scenario.name, reason: error.reason))
        case .failure(let error): progress(.failed(scenario: scenario.name, reason: "\(error)"))
        }
    }

    private func catalogIndex(_ scenario: Scenario) -> Int {
        catalog.scenarios.firstIndex { $0.name == scenario.name } ?? Int.max
    }

    /// Returns once nothing is left preparing (at once when nothing was).
    public func waitUntilPrepared() async {
        let pending = backgroundDone.withLockedValue { $0 }
        try? await pending?.get()
    }

    /// Prepares scenarios in parallel (one per core, slowest keys first): key generation is CPU-bound, and the
    /// store's per-item locks keep parallel preparations from making anything twice. Results by scenario name.
    public static func prepare(_ scenarios: [Scenario], store: CertificateStore, domains: [String] = [],
                               revocationEndpoints: RevocationEndpoints = .serveDefault,
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
                    let result = await Result {
                        try await NIOThreadPool.singleton.runIfActive { 
                            try store.prepare(scenario, domains: domains, revocationEndpoints: revocationEndpoints)
                        }
                    }
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

    /// Stops every fixture (the catalog's and the API's) and frees the ports held for scenarios still preparing; each
    /// fixture closes its connections within a second, and they stop concurrently. Keys still being generated are
    /// abandoned, not waited for.
    public func stop() async {
        let (running, held) = state.withLockedValue { state -> ([Started], [PortReservation]) in
            state.stopped = true
            let held = state.preparing.values.map(\.reservation)
            return (state.started, held)
        }
        await withTaskGroup(of: Void.self) { group in
            for started in running { group.addTask { await started.fixture.stop() } }
            for reservation in held { group.addTask { await reservation.release() } }
            group.addTask { await self.leases.stopAll() }
        }
        await revocationServices?.stop()
        if let legacyHelper { try? await NIOThreadPool.singleton.runIfActive { legacyHelper.stop() } }
    }

    /// The catalog document for what is running (dashboard `/scenarios.json`, `serve --json`).
    public func document(dashboard: String?) -> CatalogDocument {
        let snapshot = state.withLockedValue { $0 }
        let servingByName = Dictionary(snapshot.started.map { ($0.scenario.name, $0.fixture) }, uniquingKeysWith: { a, _ in a })
        let unsupportedByName = Dictionary(snapshot.unsupported.map { ($0.scenario.name, $0.reason) }, uniquingKeysWith: { a, _ in a })
        let failedByName = Dictionary(snapshot.failed.map { ($0.scenario.name, $0.reason) }, uniquingKeysWith: { a, _ in a })
        let legacyByName = Dictionary(legacyServed.map { ($0.scenario.name, $0.entry) }, uniquingKeysWith: { a, _ in a })
        let requested = Set(snapshot.started.map(\.scenario.name) + snapshot.unsupported.map(\.scenario.name)
                            + snapshot.failed.map(\.scenario.name) + snapshot.preparing.keys + legacyByName.keys)
        let entries = catalog.scenarios.filter { requested.contains($0.name) }.map { scenario -> CatalogEntry in
            let port = catalog.port(of: scenario, portBase: options.portBase)
            if let fixture = servingByName[scenario.name] {
                var entry = CatalogEntry(scenario: scenario, port: fixture.port, host: FixtureServer.urlHost(listeningOn: fixture.boundAddresses),
                                         status: .serving, pins: fixture.pins)
                entry.domainURLs = fixture.domainURLs.map(\.absoluteString)
                entry.revocationSources = fixture.prepared.credential.flatMap { RevocationSources(leaf: $0.certificate) }
                entry.unavailableCiphers = fixture.prepared.unavailableCiphers.isEmpty ? nil : fixture.prepared.unavailableCiphers
                entry.unavailableGroups = fixture.prepared.unavailableGroups.isEmpty ? nil : fixture.prepared.unavailableGroups
                return entry
            }
            if let served = legacyByName[scenario.name] { return served }
            if snapshot.preparing[scenario.name] != nil {
                return CatalogEntry(scenario: scenario, port: port, host: FixtureServer.urlHost(listeningOn: options.bindAddresses),
                                    status: .preparing, reason: Self.preparingReason(scenario))
            }
            if let reason = failedByName[scenario.name] {
                return CatalogEntry(scenario: scenario, port: port, status: .failed, reason: reason)
            }
            return CatalogEntry(scenario: scenario, port: port, status: .unsupported, reason: unsupportedByName[scenario.name])
        }
        var document = CatalogDocument(dashboard: dashboard, scenarios: entries)
        document.domains = options.domains.isEmpty ? nil : options.domains
        if let dashboard, let url = URL(string: dashboard) {
            document.controlAPI = url.appendingPathComponent("api/fixtures").absoluteString
        }
        document.proxy = leases.proxy
        if let services = revocationServices, services.responderPort != nil { document.revocationResponder = services.endpoints.responder }
        return document
    }

    static func preparingReason(_ scenario: Scenario) -> String {
        if let key = scenario.certificate?.key, case .rsa(let bits) = key, bits >= 4096 {
            return "preparing… (making its \(key) key in the background; served when ready)"
        }
        return "preparing… (made in the background; served when ready)"
    }
}

extension FixtureServer {
    /// `https://NAME.DOMAIN:PORT/` for every domain of `serve --domain` (none in process).
    public var domainURLs: [URL] {
        prepared.domains.map { URL(string: "\(scheme)://\(scenario.name).\($0):\(port)/")! }
    }
}


extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
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
