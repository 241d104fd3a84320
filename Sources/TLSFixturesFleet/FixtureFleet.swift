import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// Every fixture a runner serves — the catalog's, each on its fixed port, and those started through the control API,
/// each on a free port with a lease — with one `FixtureState` each, changed in one place. It owns the ports held for
/// slow scenarios, the leases, the domains, the revocation services and the legacy helper, and knows nothing of HTTP:
/// the front door reads and asks through `FleetQueries`, `FleetCommands` and `FixtureLookup`, and maps the
/// `FleetError`s it gets to statuses itself.
///
/// On a store that is still empty the slow keys (RSA-4096 and -8192, and large DH groups) would hold everything up for
/// a minute, so those scenarios are made in the background once the rest are serving: their ports are held meanwhile,
/// they show `preparing`, and each is served the moment it is ready.
package final class FixtureFleet: Sendable {
    package struct Options: Sendable {
        /// Dashboard port; scenario `P` of the catalog listens on `P - 9800 + portBase`.
        public var portBase: Int = ScenarioCatalog.defaultPortBase
        package var bindAddresses: [String]? = nil
        package var handshakeTimeout: TimeAmount = .seconds(10)
        /// For the fixtures and the front door alike.
        public var idleTimeout: TimeAmount = .seconds(60)
        /// For the fixtures and the front door alike (see `FixtureConfiguration.headerTimeout`).
        public var headerTimeout: TimeAmount = .seconds(20)
        /// Per fixture; nil: a quarter of the descriptor limit. The front door holds at most 256 whatever this says.
        public var maximumConnections: Int? = nil
        package var logger: Logger? = nil
        /// The `make legacy-openssl` helper that serves, in a process of its own, the built-in scenarios the linked
        /// OpenSSL cannot (SSLv3, RC4, 3DES); nil leaves them reported unsupported.
        public var legacyHelper: URL? = nil
        /// Domains every baseline leaf also names as `NAME.DOMAIN` (`--domain`); the CA must permit them.
        public var domains: [String] = []
        /// Make slow keys after the rest are serving (the default); false prepares everything before serving anything.
        public var backgroundPreparation = true
        /// Where lease timers run and what time a lease ends: the real clock, or a test's manual one.
        package var leaseClock = LeaseClock.system
        /// Control API starts that make slow keys, running or queued, at most (`PreparationLanes`); one more is
        /// `FleetError.busy`.
        package var maximumSlowStarts = 4
        /// Told what the slow lane does with each start, in order (a test's window on it).
        package var slowLaneObserver: (@Sendable (PreparationLanes.Event) -> Void)? = nil
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

    package let catalog: ScenarioCatalog
    package let store: CertificateStore
    package let options: Options
    /// The OCSP responder, CRL endpoint and refusing port of the revocation scenarios, on their fixed ports
    /// (`portBase` + 99 and + 98); nil when none is served.
    package let revocationServices: RevocationServices?
    /// Set when this process may hold fewer descriptors than these fixtures want (macOS's default soft limit is 256,
    /// and it cannot be raised past kern.maxfilesperproc): one line saying so and how to raise it.
    package let descriptorWarning: String?
    let table: NIOLockedValueBox<Table>
    private let legacyHelper: LegacyHelperProcess?
    private let background = NIOLockedValueBox<EventLoopFuture<Void>?>(nil)
    /// Fixtures whose lease ended, still closing: `stop()` waits for them.
    let closing = NIOLockedValueBox<[String: EventLoopFuture<Void>]>([:])
    /// Inline scenarios prepared lately, so the same scenario started again gets the same leaf (and pins) quickly.
    let inlineCache = NIOLockedValueBox<[(Scenario, PreparedScenario)]>([])
    /// Where the control API's starts are prepared: slow keys apart from everything else.
    let lanes: PreparationLanes

    /// Which fixture; the catalog's are named, leased ones get a random id.
    enum Key: Hashable, Sendable {
        case catalog(String)
        case leased(String)
    }

    struct Member: Sendable {
        var scenario: Scenario
        var state: FixtureState
        /// A leased fixture's, once it serves.
        var lease: Lease?
    }

    struct Lease: Sendable {
        /// Everything but the lease fields, made once at start.
        var description: FixtureDescription
        var expiry: Scheduled<Void>
        /// Moves on every renew, so an expiry timer that fired late cannot stop a renewed fixture.
        var generation: Int
    }

    /// The one place fixtures and their states live.
    struct Table: Sendable {
        var members: [Key: Member] = [:]
        var stopping = false
        /// Moves on every change, so the dashboard knows when to render again.
        var generation = 0

        mutating func set(_ key: Key, _ state: FixtureState) {
            members[key]?.state = state
            generation += 1
        }
    }

    private init(
        catalog: ScenarioCatalog, store: CertificateStore, options: Options, table: Table,
        revocationServices: RevocationServices?, legacyHelper: LegacyHelperProcess?, descriptorWarning: String?
    ) {
        self.catalog = catalog; self.store = store; self.options = options
        self.revocationServices = revocationServices; self.legacyHelper = legacyHelper
        self.table = NIOLockedValueBox(table)
        self.descriptorWarning = descriptorWarning
        lanes = PreparationLanes(maximumSlowStarts: options.maximumSlowStarts, observer: options.slowLaneObserver)
    }

    /// Prepares the scenarios that are quick to make (in parallel), starts each on its port, and returns; the slow ones
    /// follow in the background (see the type's summary). Scenarios the linked OpenSSL cannot serve are reported, not
    /// fatal; any other failure (a port in use, domains the CA does not permit) stops everything started so far and
    /// throws, so nothing is left listening.
    package static func start(
        _ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options(),
        progress: @escaping @Sendable (Progress) -> Void = { _ in }
    ) async throws -> FixtureFleet {
        // Bad timeouts are refused before minutes of key generation, not after.
        try options.fixtureConfiguration(port: 0).validate()
        var options = options
        options.domains = try FixtureDomains.normalize(options.domains)
        // May generate a key: not on the cooperative pool.
        let ca = try await NIOThreadPool.singleton.runIfActive { try store.ca() }
        try FixtureDomains.requirePermitted(options.domains, by: ca.certificate)

        let slow = options.backgroundPreparation ? scenarios.filter { slowWork(of: $0, store: store) != nil } : []
        let quick = scenarios.filter { scenario in !slow.contains { $0.name == scenario.name } }
        var table = Table()
        let plans = scenarios.filter(\.needsRevocationServices).compactMap { $0.certificate?.revocation }
        var services: RevocationServices? = nil
        if !plans.isEmpty {
            services = try await RevocationServices.start(
                bindAddresses: options.bindAddresses,
                responderPort: options.portBase + ScenarioCatalog.revocationResponderOffset,
                refusingPort: options.portBase + ScenarioCatalog.refusingPortOffset,
                responder: plans.contains(where: \.needsResponder), refusing: plans.contains(where: \.needsRefusingPort)
            )
        }
        let endpoints = services?.endpoints ?? .serve(portBase: options.portBase)
        var helper: LegacyHelperProcess? = nil
        do {
            for scenario in slow {
                let making = slowWork(of: scenario, store: store) ?? "its keys"
                let reservation = try await PortReservation.hold(
                    options.fixtureConfiguration(port: catalog.port(of: scenario, portBase: options.portBase) ?? 0))
                table.members[.catalog(scenario.name)] = Member(
                    scenario: scenario, state: .preparing(making: making, reservation: reservation))
                progress(.preparingInBackground(scenario: scenario.name, making: making))
            }
            let prepared = try await prepare(
                quick, store: store, domains: options.domains, revocationEndpoints: endpoints,
                progress: progress)
            for case .success(let ready) in prepared.values {
                if let record = ready.revocation { services?.registry.register(record) }
            }
            for scenario in quick {
                switch prepared[scenario.name] {
                case .failure(let error as ScenarioUnsupported)?:
                    table.members[.catalog(scenario.name)] = Member(
                        scenario: scenario, state: .unsupported(reason: error.detail))
                case .failure(let error)?:
                    throw error
                case .success(let ready)?:
                    let configuration = options.fixtureConfiguration(
                        port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
                    let fixture = try await FixtureServer.start(ready, configuration: configuration)
                    table.members[.catalog(scenario.name)] = Member(scenario: scenario, state: .serving(fixture))
                case nil:
                    continue
                }
            }
            helper = try await startLegacyHelper(for: &table, options: options, store: store)
        } catch {
            await stopAll(in: table)
            await services?.stop()
            throw error
        }
        // Every address a fixture listens on (loopback: 127.0.0.1 and ::1) is a descriptor, and so is each connection.
        let addresses = max(
            1,
            table.members.values.compactMap(\.state.fixture?.boundAddresses.count).max()
                ?? options.bindAddresses?.count ?? 2)
        let warning = FileDescriptorLimit.warning(
            FileDescriptorLimit.raiseOnce(), scenarios: scenarios.count, addresses: addresses)
        let fleet = FixtureFleet(
            catalog: catalog, store: store, options: options, table: table, revocationServices: services,
            legacyHelper: helper, descriptorWarning: warning)
        if !slow.isEmpty { fleet.prepareInBackground(slow, revocationEndpoints: endpoints, progress: progress) }
        return fleet
    }

    /// The built-in scenarios this OpenSSL cannot serve go to the legacy helper, if there is one; whatever it cannot
    /// serve either stays unsupported, with its reason.
    private static func startLegacyHelper(
        for table: inout Table, options: Options, store: CertificateStore
    ) async throws
        -> LegacyHelperProcess?
    {
        let forHelper = table.members.values.filter { member in
            if case .unsupported = member.state { return ScenarioCatalog.builtIn.names.contains(member.scenario.name) }
            return false
        }.map(\.scenario)
        guard let path = options.legacyHelper, !forHelper.isEmpty else { return nil }
        let listening = LegacyHelperProcess.Listening(
            portBase: options.portBase, bindAddresses: options.bindAddresses,
            handshakeTimeout: options.handshakeTimeout, idleTimeout: options.idleTimeout)
        let process = try await NIOThreadPool.singleton.runIfActive {
            try LegacyHelperProcess(
                helper: path, names: forHelper.map(\.name), storeDirectory: store.directory, listening: listening)
        }
        for entry in process.document.scenarios where entry.status == .serving {
            guard forHelper.contains(where: { $0.name == entry.name }) else { continue }
            var served = entry
            served.servedBy = "the legacy helper, linked with \(process.document.openSSL)"
            table.set(.catalog(entry.name), .servedByHelper(served))
        }
        return process
    }

    /// Stops what a start that failed had started.
    private static func stopAll(in table: Table) async {
        for member in table.members.values {
            switch member.state {
            case .serving(let fixture): await fixture.stop()
            case .preparing(_, let reservation?): await reservation.release()
            default: continue
            }
        }
    }

    /// What makes `scenario` slow to prepare on this store, if anything: an RSA key of 4096 bits or more, or a DH group
    /// of 2048 bits or more that has to be generated (not a named group, not made yet): seconds to a minute each.
    /// Prepared in memory (an inline scenario), a key of its own is made every time: only a `keyName` is looked up.
    static func slowWork(
        of scenario: Scenario, store: CertificateStore, storage: PreparationStorage = .store
    ) -> String? {
        if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
            (storage == .memory && plan.keyName == nil)
                || !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
        {
            return "the \(plan.key) key"
        }
        if case .bits(let bits)? = scenario.tls?.dh, bits >= 2048, !store.hasDHParameters(bits: bits) {
            return "a \(bits)-bit DH group"
        }
        return nil
    }

    /// Makes the slow scenarios on every core, then serves each on the port its reservation held.
    private func prepareInBackground(
        _ scenarios: [Scenario], revocationEndpoints: RevocationEndpoints,
        progress: @escaping @Sendable (Progress) -> Void
    ) {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        background.withLockedValue { $0 = promise.futureResult }
        promise.completeWithTask { [self] in
            let results =
                (try? await Self.prepare(
                    scenarios, store: store, domains: options.domains,
                    revocationEndpoints: revocationEndpoints, progress: { _ in })) ?? [:]
            for scenario in scenarios {
                let result =
                    results[scenario.name]
                    ?? .failure(ScenarioUnsupported(code: .linkedOpenSSL, scenario: scenario.name, why: "not prepared"))
                await serveWhenReady(scenario, result, progress: progress)
            }
        }
    }

    private func serveWhenReady(
        _ scenario: Scenario, _ result: Result<PreparedScenario, Error>,
        progress: @Sendable (Progress) -> Void
    ) async {
        let key = Key.catalog(scenario.name)
        guard
            case .preparing(_, let reservation)? = table.withLockedValue({ $0.stopping ? nil : $0.members[key]?.state })
        else { return }
        await reservation?.release()
        let outcome: Result<FixtureServer, Error>
        switch result {
        case .success(let ready):
            if let record = ready.revocation { revocationServices?.registry.register(record) }
            let configuration = options.fixtureConfiguration(
                port: catalog.port(of: scenario, portBase: options.portBase) ?? 0)
            outcome = await Result { try await FixtureServer.start(ready, configuration: configuration) }
        case .failure(let error):
            outcome = .failure(error)
        }
        let stopAgain: FixtureServer? = table.withLockedValue { table in
            if table.stopping { return try? outcome.get() }
            switch outcome {
            case .success(let fixture): table.set(key, .serving(fixture))
            case .failure(let error as ScenarioUnsupported): table.set(key, .unsupported(reason: error.detail))
            case .failure(let error): table.set(key, .failed(reason: "\(error)"))
            }
            return nil
        }
        if let stopAgain {
            await stopAgain.stop()
            return
        }
        switch outcome {
        case .success(let fixture): progress(.serving(scenario: scenario.name, port: fixture.port))
        case .failure(let error as ScenarioUnsupported):
            progress(.failed(scenario: scenario.name, reason: error.detail))
        case .failure(let error): progress(.failed(scenario: scenario.name, reason: "\(error)"))
        }
    }

    /// Returns once nothing is left preparing (at once when nothing was).
    package func waitUntilPrepared() async {
        let pending = background.withLockedValue { $0 }
        try? await pending?.get()
    }

    /// Prepares scenarios in parallel (one per core, slowest keys first): key generation is CPU-bound, and the
    /// store's per-item locks keep parallel preparations from making anything twice. Results by scenario name.
    package static func prepare(
        _ scenarios: [Scenario], store: CertificateStore, domains: [String] = [],
        revocationEndpoints: RevocationEndpoints = .serveDefault,
        progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> [String: Result<PreparedScenario, Error>] {
        // The CA first, once, so parallel preparations do not all wait on its lock.
        // May generate a key: not on the cooperative pool.
        _ = try await NIOThreadPool.singleton.runIfActive { try store.ca() }
        let ordered = scenarios.sorted { cost($0) > cost($1) }
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (String, Result<PreparedScenario, Error>).self) { group in
            var results: [String: Result<PreparedScenario, Error>] = [:]
            var iterator = ordered.makeIterator()
            func launch(_ scenario: Scenario) {
                group.addTask {
                    if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
                        !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
                    {
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

    /// Stops every fixture (the catalog's and the leased ones) and frees the ports held for scenarios still preparing;
    /// each fixture closes its connections within a second, and they stop concurrently. Keys still being generated
    /// are abandoned, not waited for. Nothing starts afterwards: every catalog fixture ends `stopped`, and no leased one
    /// is left.
    package func stop() async {
        let (running, held) = table.withLockedValue { table -> ([FixtureServer], [PortReservation]) in
            table.stopping = true
            var running: [FixtureServer] = []
            var held: [PortReservation] = []
            for (key, member) in table.members {
                member.lease?.expiry.cancel()
                switch member.state {
                case .serving(let fixture): running.append(fixture)
                case .preparing(_, let reservation?): held.append(reservation)
                default: break
                }
                // A leased fixture leaves the table, as its lease's end would take it; the catalog's stay, stopped.
                if case .leased = key { table.members[key] = nil } else { table.set(key, .stopped) }
            }
            return (running, held)
        }
        await withTaskGroup(of: Void.self) { group in
            for fixture in running { group.addTask { await fixture.stop() } }
            for reservation in held { group.addTask { await reservation.release() } }
        }
        for pending in closing.withLockedValue({ Array($0.values) }) { try? await pending.get() }
        await revocationServices?.stop()
        if let legacyHelper { try? await NIOThreadPool.singleton.runIfActive { legacyHelper.stop() } }
    }

    // MARK: What the runner reads

    /// The catalog's fixtures in catalog order, each with its state.
    package var catalogStates: [(scenario: Scenario, state: FixtureState)] {
        let members = table.withLockedValue { $0.members }
        return catalog.scenarios.compactMap { scenario in members[.catalog(scenario.name)].map { (scenario, $0.state) }
        }
    }

    static func preparingReason(_ scenario: Scenario) -> String {
        if let key = scenario.certificate?.key, case .rsa(let bits) = key, bits >= 4096 {
            return "preparing… (making its \(key) key in the background; served when ready)"
        }
        return "preparing… (made in the background; served when ready)"
    }
}

extension FixtureFleet: FleetQueries, FixtureLookup {
    package var generation: Int { table.withLockedValue { $0.generation } }

    package var fixtureDomains: [String] { [Scenario.fixturesDomain] + options.domains }

    package func servedFixture(onPort port: Int) -> ServedFixture? {
        let fixture = table.withLockedValue { table in
            table.members.values.lazy.compactMap(\.state.fixture).first { $0.port == port }
        }
        return fixture.map(ServedFixture.init)
    }

    /// The catalog document for what is running (`/scenarios.json`, `serve --json`): one entry per catalog fixture,
    /// made from its state alone.
    package func document() -> CatalogDocument {
        let entries = catalogStates.map { scenario, state -> CatalogEntry in
            let port = catalog.port(of: scenario, portBase: options.portBase)
            switch state {
            case .serving(let fixture):
                var entry = CatalogEntry(
                    scenario: scenario, port: fixture.port,
                    host: FixtureServer.urlHost(listeningOn: fixture.boundAddresses),
                    status: .serving, pins: fixture.pins)
                entry.domainURLs = fixture.domainURLs.map(\.absoluteString)
                entry.revocationSources = fixture.prepared.credential.flatMap {
                    RevocationSources(leaf: $0.certificate)
                }
                entry.unavailableCiphers =
                    fixture.prepared.unavailableCiphers.isEmpty ? nil : fixture.prepared.unavailableCiphers
                entry.unavailableGroups =
                    fixture.prepared.unavailableGroups.isEmpty ? nil : fixture.prepared.unavailableGroups
                return entry
            case .servedByHelper(let entry):
                return entry
            case .preparing:
                return CatalogEntry(
                    scenario: scenario, port: port, host: FixtureServer.urlHost(listeningOn: options.bindAddresses),
                    status: .preparing, reason: Self.preparingReason(scenario))
            case .unsupported(let reason):
                return CatalogEntry(scenario: scenario, port: port, status: .unsupported, reason: reason)
            case .failed(let reason):
                return CatalogEntry(scenario: scenario, port: port, status: .failed, reason: reason)
            case .stopped:
                return CatalogEntry(scenario: scenario, port: port, status: .stopped)
            }
        }
        var document = CatalogDocument(dashboard: nil, scenarios: entries)
        document.domains = options.domains.isEmpty ? nil : options.domains
        if let services = revocationServices, services.responderPort != nil {
            document.revocationResponder = services.endpoints.responder
        }
        return document
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

extension FixtureFleet.Options {
    /// How each fixture listens: these options, on `port`.
    package func fixtureConfiguration(port: Int) -> FixtureConfiguration {
        var configuration = FixtureConfiguration(
            bindAddresses: bindAddresses, port: port, handshakeTimeout: handshakeTimeout,
            idleTimeout: idleTimeout, headerTimeout: headerTimeout,
            maximumConnections: maximumConnections)
        if let logger { configuration.logger = logger }
        return configuration
    }
}

/// Where lease timers run and what time it is: the system's, or a test's manual clock (an `NIOAsyncTestingEventLoop`
/// and the time it has advanced to), so a lease can end without a test waiting for it.
package struct LeaseClock: Sendable {
    package var eventLoop: any EventLoop
    package var now: @Sendable () -> Date

    package init(eventLoop: any EventLoop, now: @escaping @Sendable () -> Date) {
        self.eventLoop = eventLoop
        self.now = now
    }

    package static var system: LeaseClock {
        LeaseClock(eventLoop: MultiThreadedEventLoopGroup.singleton.next(), now: { Date() })
    }
}
