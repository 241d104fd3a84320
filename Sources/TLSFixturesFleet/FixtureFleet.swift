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
/// Starting is two steps, so the front door can answer before any scenario is made: `open` makes the CA and holds
/// every catalog port (bound, not listening: a client is refused, never reset) with each scenario `preparing`;
/// `serve` then prepares them a core each, cheapest first, and serves each the moment it is ready. On a store that is
/// still empty the slow keys (RSA-4096 and -8192, and large DH groups) would hold everything up for a minute, so those
/// scenarios are made in the background once the rest are serving.
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
        /// Make slow keys after the rest are serving (the default); false: `serve` returns only once they serve too.
        public var backgroundPreparation = true
        /// How long a control API start of a scenario this fleet is still preparing on its catalog port waits for it
        /// before it is refused with `FleetError.preparing` (an RSA-8192 key takes about a minute).
        package var preparingStartWait: TimeAmount = .seconds(60)
        /// Runs before each catalog scenario is prepared: a test's way to hold one back, as a slow key would (nil:
        /// none).
        package var preparationGate: (@Sendable (Scenario) async -> Void)? = nil
        /// Where lease timers run and what time a lease ends: the real clock, or a test's manual one.
        package var leaseClock = LeaseClock.system
        /// Control API starts that make slow keys, running or queued, at most (`PreparationLanes`); one more is
        /// `FleetError.busy`.
        package var maximumSlowStarts = 4
        /// Told what the slow lane does with each start, in order (a test's window on it).
        package var slowLaneObserver: (@Sendable (PreparationLanes.Event) -> Void)? = nil
        /// The proxy's open tunnels, which every fixture asks when a connection arrives, so its record names the
        /// CONNECT authority a client came through (the front door's proxy notes them: `FixtureLookup.proxyHops`).
        package var proxyHops = ProxyHops()
        /// Told every connection to any of the fleet's fixtures once it has closed, on the connection's event loop (so
        /// it must be quick); nil: none. `serve --log-connections` and `--connection-log`.
        package var connectionEnded: (@Sendable (FleetConnection) -> Void)? = nil
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
    /// Where the revocation scenarios' leaves say their OCSP responder and CRLs are.
    private let revocationEndpoints: RevocationEndpoints
    /// Started by `serve` once the quick scenarios are prepared, when some need it.
    private let legacyHelper = NIOLockedValueBox<LegacyHelperProcess?>(nil)
    private let background = NIOLockedValueBox<EventLoopFuture<Void>?>(nil)
    /// Whoever waits for a scenario to leave `preparing` (`settled(_:within:)`), woken by `settle`.
    let settleWaiters = NIOLockedValueBox<[UInt64: CheckedContinuation<Void, Never>]>([:])
    /// Fixtures whose lease ended, still closing: `stop()` waits for them.
    let closing = NIOLockedValueBox<[String: EventLoopFuture<Void>]>([:])
    /// Inline scenarios prepared lately, so the same scenario started again gets the same leaf (and pins) quickly.
    let inlineCache = NIOLockedValueBox<[(Scenario, PreparedScenario)]>([])
    /// Where the control API's starts are prepared: slow keys apart from everything else.
    let lanes: PreparationLanes

    /// Which fixture; the catalog's are named, leased ones get a random id.
    package enum Key: Hashable, Sendable {
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
        /// Leased fixtures that stopped lately, whose records are still read.
        var stopped = StoppedFixtures()

        mutating func set(_ key: Key, _ state: FixtureState) {
            members[key]?.state = state
            generation += 1
        }

        /// The leased fixture `id` (`member`) is leaving the table for `reason`: its records stay readable a while.
        mutating func retire(_ id: String, _ member: Member, reason: String) {
            guard let fixture = member.state.fixture else { return }
            stopped.add(id, log: fixture.log, reason: reason, at: Date())
        }
    }

    private init(
        catalog: ScenarioCatalog, store: CertificateStore, options: Options, table: Table,
        revocationServices: RevocationServices?, revocationEndpoints: RevocationEndpoints, descriptorWarning: String?
    ) {
        self.catalog = catalog; self.store = store; self.options = options
        self.revocationServices = revocationServices; self.revocationEndpoints = revocationEndpoints
        self.table = NIOLockedValueBox(table)
        self.descriptorWarning = descriptorWarning
        lanes = PreparationLanes(maximumSlowStarts: options.maximumSlowStarts, observer: options.slowLaneObserver)
    }

    /// `open`, then `serve`: the quick scenarios serve (each the moment it is ready) when this returns, and the slow
    /// ones follow in the background (see the type's summary). Scenarios the linked OpenSSL cannot serve are reported,
    /// not fatal, and so is one that fails while others serve (`failed`, with its reason); a failure of the whole (a
    /// port in use, domains the CA does not permit, nothing serving) stops everything started so far and throws, so
    /// nothing is left listening.
    package static func start(
        _ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options(),
        progress: @escaping @Sendable (Progress) -> Void = { _ in }
    ) async throws -> FixtureFleet {
        let fleet = try await open(scenarios, catalog: catalog, store: store, options: options)
        do {
            try await fleet.serve(progress: progress)
        } catch {
            await fleet.stop()
            throw error
        }
        return fleet
    }

    /// Everything before the first scenario is prepared: the options checked, the CA made, the revocation services
    /// started and every catalog port held, each scenario `preparing`. A port in use or domains the CA does not permit
    /// throw here, with nothing left listening. Nothing serves until `serve`.
    package static func open(
        _ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options()
    ) async throws -> FixtureFleet {
        // Bad timeouts are refused before minutes of key generation, not after.
        try options.fixtureConfiguration(port: 0).validate()
        var options = options
        options.domains = try FixtureDomains.normalize(options.domains)
        // Reads the CA (or makes it: an EC key, a moment): not on the cooperative pool, nor behind key generation.
        let ca = try await BlockingWork.blockingIO { try store.ca() }
        try FixtureDomains.requirePermitted(options.domains, by: ca.certificate)

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
        do {
            for scenario in scenarios {
                let port = catalog.port(of: scenario, portBase: options.portBase) ?? 0
                let reservation =
                    port == 0 ? nil : try await PortReservation.hold(options.fixtureConfiguration(port: port))
                table.members[.catalog(scenario.name)] = Member(
                    scenario: scenario,
                    state: .preparing(making: store.slowWork(preparing: scenario) ?? "", reservation: reservation))
            }
        } catch {
            await stopAll(in: table)
            await services?.stop()
            throw error
        }
        // Every address a fixture listens on (loopback: 127.0.0.1 and ::1) is a descriptor, and so is each connection.
        let warning = FileDescriptorLimit.warning(
            FileDescriptorLimit.raiseOnce(), scenarios: scenarios.count,
            addresses: max(1, options.bindAddresses?.count ?? 2))
        return FixtureFleet(
            catalog: catalog, store: store, options: options, table: table, revocationServices: services,
            revocationEndpoints: services?.endpoints ?? .serve(portBase: options.portBase), descriptorWarning: warning)
    }

    /// Prepares the scenarios `open` holds, cheapest first, a core each, and serves each the moment it is ready;
    /// returns once the quick ones serve (and the legacy helper serves what it can), the slow ones going on in the
    /// background. A scenario that fails to prepare or listen is `failed`, with its reason, while the others serve;
    /// when none of the quick ones serves, the first failure throws once they are done, and the caller stops the fleet.
    package func serve(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws {
        let held = catalogStates.map(\.scenario)
        let slow = options.backgroundPreparation ? held.filter { store.slowWork(preparing: $0) != nil } : []
        let quick = held.filter { scenario in !slow.contains { $0.name == scenario.name } }
        for scenario in slow {
            let making = store.slowWork(preparing: scenario) ?? "its keys"
            progress(.preparingInBackground(scenario: scenario.name, making: making))
        }
        let failures = try await prepareAndServe(quick, progress: progress, announce: false)
        try await startLegacyHelper()
        // One scenario that fails (a key file this user may not read, say) is reported and shown `failed` with its
        // reason, and the rest serve; only when none of the quick ones serves is its failure everyone's.
        let anyServes = catalogStates.contains { _, state in
            switch state {
            case .serving, .servedByHelper: return true
            default: return false
            }
        }
        if let first = failures.first, !anyServes { throw first }
        if !slow.isEmpty { prepareInBackground(slow, progress: progress) }
    }

    /// Prepares `scenarios` (`prepare`'s order, a core each) and serves each the moment it is ready. Returns the
    /// failures that are not `ScenarioUnsupported` (already recorded as `failed`); `announce` reports each outcome.
    private func prepareAndServe(
        _ scenarios: [Scenario], progress: @escaping @Sendable (Progress) -> Void, announce: Bool
    ) async throws -> [Error] {
        let failures = NIOLockedValueBox<[Error]>([])
        // In the background, each outcome is reported, not the key generation under it.
        let silent: @Sendable (Progress) -> Void = { _ in }
        try await Self.prepare(
            scenarios, store: store, domains: options.domains, revocationEndpoints: revocationEndpoints,
            order: .cheapestFirst, progress: announce ? silent : progress, before: options.preparationGate ?? { _ in }
        ) { scenario, result in
            if let failure = await self.serveWhenReady(scenario, result, progress: announce ? progress : { _ in }) {
                failures.withLockedValue { $0.append(failure) }
            }
        }
        return failures.withLockedValue { $0 }
    }

    /// The built-in scenarios this OpenSSL cannot serve go to the legacy helper, if there is one; whatever it cannot
    /// serve either stays unsupported, with its reason. They show `preparing` until it has answered.
    private func startLegacyHelper() async throws {
        let forHelper = table.withLockedValue { table in
            table.members.values.filter { member in
                if case .preparing(Self.awaitingHelper, _) = member.state { return true }
                return false
            }
        }
        guard !forHelper.isEmpty else { return }
        var process: LegacyHelperProcess? = nil
        if let path = options.legacyHelper {
            let listening = LegacyHelperProcess.Listening(
                portBase: options.portBase, bindAddresses: options.bindAddresses,
                handshakeTimeout: options.handshakeTimeout, idleTimeout: options.idleTimeout)
            let store = store
            do {
                process = try await BlockingWork.blockingIO {
                    try LegacyHelperProcess(
                        helper: path, names: forHelper.map(\.scenario.name), storeDirectory: store.directory,
                        listening: listening)
                }
            } catch {
                settleUnsupported(forHelper)
                throw error
            }
        }
        let served = process?.document.scenarios.filter { $0.status == .serving } ?? []
        let stopAgain = table.withLockedValue { table -> Bool in
            if table.stopping { return true }
            for member in forHelper {
                if var entry = served.first(where: { $0.name == member.scenario.name }), let process {
                    entry.servedBy = "the legacy helper, linked with \(process.document.openSSL)"
                    table.set(.catalog(member.scenario.name), .servedByHelper(entry))
                }
            }
            return false
        }
        let started = process
        if stopAgain {
            try? await BlockingWork.blockingIO { started?.stop() }
            return
        }
        legacyHelper.withLockedValue { $0 = started }
        settleUnsupported(forHelper)
    }

    /// Members still waiting for the helper that it did not take: unsupported, with the reason the linked OpenSSL gave.
    private func settleUnsupported(_ members: [Member]) {
        for member in members {
            let key = Key.catalog(member.scenario.name)
            settle(key) { state in
                guard case .preparing(Self.awaitingHelper, _) = state else { return nil }
                return .unsupported(reason: self.helperReasons.withLockedValue { $0[member.scenario.name] } ?? "")
            }
        }
    }

    /// What a built-in scenario this OpenSSL cannot serve shows while the legacy helper is asked about it.
    static let awaitingHelper = "an answer from the legacy helper"
    /// Why the linked OpenSSL cannot serve each scenario waiting for the helper.
    let helperReasons = NIOLockedValueBox<[String: String]>([:])

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

    /// Makes the slow scenarios on every core, then serves each on the port its reservation held.
    private func prepareInBackground(_ scenarios: [Scenario], progress: @escaping @Sendable (Progress) -> Void) {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        background.withLockedValue { $0 = promise.futureResult }
        promise.completeWithTask { [self] in
            _ = try? await prepareAndServe(scenarios, progress: progress, announce: true)
        }
    }

    /// Serves a prepared catalog scenario on the port its reservation held (or records why not), unless the fleet is
    /// stopping. A built-in scenario this OpenSSL cannot serve waits for the legacy helper, when there is one. Returns
    /// the failure, when it is one (not a scenario this OpenSSL cannot serve).
    @discardableResult
    private func serveWhenReady(
        _ scenario: Scenario, _ result: Result<PreparedScenario, Error>,
        progress: @Sendable (Progress) -> Void
    ) async -> Error? {
        let key = Key.catalog(scenario.name)
        guard
            case .preparing(_, let reservation)? = table.withLockedValue({ $0.stopping ? nil : $0.members[key]?.state })
        else { return nil }
        await reservation?.release()
        if case .failure(let error as ScenarioUnsupported) = result, options.legacyHelper != nil,
            ScenarioCatalog.builtIn.names.contains(scenario.name)
        {
            helperReasons.withLockedValue { $0[scenario.name] = error.detail }
            settle(key) { _ in .preparing(making: Self.awaitingHelper, reservation: nil) }
            return nil
        }
        let outcome: Result<FixtureServer, Error>
        switch result {
        case .success(let ready):
            if let record = ready.revocation { revocationServices?.registry.register(record) }
            let configuration = options.fixtureConfiguration(
                port: catalog.port(of: scenario, portBase: options.portBase) ?? 0, scenario: scenario.name)
            outcome = await Result { try await FixtureServer.start(ready, configuration: configuration) }
        case .failure(let error):
            outcome = .failure(error)
        }
        var stopAgain: FixtureServer? = nil
        settle(key) { _ in
            switch outcome {
            case .success(let fixture): return .serving(fixture)
            case .failure(let error as ScenarioUnsupported): return .unsupported(reason: error.detail)
            case .failure(let error): return .failed(reason: "\(error)")
            }
        } stopping: {
            stopAgain = try? outcome.get()
        }
        if let stopAgain {
            await stopAgain.stop()
            return nil
        }
        switch outcome {
        case .success(let fixture):
            progress(.serving(scenario: scenario.name, port: fixture.port))
            return nil
        case .failure(let error as ScenarioUnsupported):
            progress(.failed(scenario: scenario.name, reason: error.detail))
            return nil
        case .failure(let error):
            progress(.failed(scenario: scenario.name, reason: "\(error)"))
            return error
        }
    }

    // MARK: Leaving `preparing`

    /// The one place a catalog fixture leaves (or re-enters) `preparing`: `change` gives its new state from the current
    /// one (nil: unchanged), unless the fleet is stopping (then `stopping` runs instead); whoever waits in `settled` is
    /// woken.
    func settle(
        _ key: Key, _ change: (FixtureState) -> FixtureState?, stopping: () -> Void = {}
    ) {
        table.withLockedValue { table in
            guard !table.stopping else {
                stopping()
                return
            }
            guard let state = table.members[key]?.state, let new = change(state) else { return }
            table.set(key, new)
        }
        wakeSettleWaiters()
    }

    private func wakeSettleWaiters() {
        let waiting = settleWaiters.withLockedValue { waiters in
            defer { waiters = [:] }
            return Array(waiters.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    private static let waiterIDs = NIOLockedValueBox<UInt64>(0)

    /// The catalog fixture `name`'s state once it is no longer `preparing` (`.stopped` once the fleet stops), or nil
    /// when `limit` passes first or it is not a catalog fixture of this fleet. Woken by `settle`, not polled.
    func settled(_ name: String, within limit: TimeAmount) async -> FixtureState? {
        let deadline = NIODeadline.now() + limit
        while true {
            let id = Self.waiterIDs.withLockedValue { id -> UInt64 in
                id += 1
                return id
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Registered under the table's lock, so no change can slip between the look and the registration.
                let waiting = table.withLockedValue { table -> Bool in
                    guard !table.stopping, case .preparing? = table.members[.catalog(name)]?.state else { return false }
                    settleWaiters.withLockedValue { $0[id] = continuation }
                    return true
                }
                guard waiting else { return continuation.resume() }
                // Whoever takes the continuation out first (`settle`, or the deadline) resumes it, once.
                MultiThreadedEventLoopGroup.singleton.next().scheduleTask(deadline: deadline) { [self] in
                    settleWaiters.withLockedValue { $0.removeValue(forKey: id) }?.resume()
                }
            }
            let state = table.withLockedValue { $0.stopping ? .stopped : $0.members[.catalog(name)]?.state }
            guard let state else { return nil }
            guard case .preparing = state else { return state }
            if NIODeadline.now() >= deadline { return nil }
        }
    }

    /// Returns once nothing is left preparing (at once when nothing was).
    package func waitUntilPrepared() async {
        let pending = background.withLockedValue { $0 }
        try? await pending?.get()
    }

    /// The order `prepare` takes scenarios in.
    package enum PreparationOrder: Sendable {
        /// Slowest keys first: everything done soonest (`tls-fixtures prepare`).
        case slowestFirst
        /// Cheapest first: the most scenarios ready soonest (`serve`, which serves each the moment it is ready).
        case cheapestFirst
    }

    /// Prepares scenarios in parallel (one per core, in `order`): key generation is CPU-bound, and the store's per-item
    /// locks keep parallel preparations from making anything twice. `each` runs with every result as it comes (on the
    /// task that made it, so a slow `each` holds back nothing else); the results come back by scenario name.
    @discardableResult
    package static func prepare(
        _ scenarios: [Scenario], store: CertificateStore, domains: [String] = [],
        revocationEndpoints: RevocationEndpoints = .serveDefault, order: PreparationOrder = .slowestFirst,
        progress: @escaping @Sendable (Progress) -> Void,
        before: @escaping @Sendable (Scenario) async -> Void = { _ in },
        each: @escaping @Sendable (Scenario, Result<PreparedScenario, Error>) async -> Void = { _, _ in }
    ) async throws -> [String: Result<PreparedScenario, Error>] {
        // The CA first, once, so parallel preparations do not all wait on its lock.
        // May generate a key: not on the cooperative pool.
        _ = try await BlockingWork.blockingIO { try store.ca() }
        let ordered = Self.ordered(scenarios, store: store, order)
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (String, Result<PreparedScenario, Error>).self) { group in
            var results: [String: Result<PreparedScenario, Error>] = [:]
            var iterator = ordered.makeIterator()
            func launch(_ scenario: Scenario) {
                group.addTask {
                    await before(scenario)
                    if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
                        !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
                    {
                        progress(.generating(scenario: scenario.name, key: plan.key))
                    }
                    // Slow keys on every core (finishing soonest is what matters here), quick ones beside them.
                    let lane: BlockingWork.Lane = store.slowWork(preparing: scenario) == nil ? .quick : .everyCore
                    let result = await Result {
                        try await BlockingWork.prepare(lane) {
                            try store.prepare(scenario, domains: domains, revocationEndpoints: revocationEndpoints)
                        }
                    }
                    progress(.prepared(scenario: scenario.name))
                    await each(scenario, result)
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

    /// `scenarios` in the order `prepare` takes them on this store; ties keep their order.
    static func ordered(_ scenarios: [Scenario], store: CertificateStore, _ order: PreparationOrder) -> [Scenario] {
        // Costs are read once (each looks at the store).
        let costed = scenarios.enumerated().map {
            (offset: $0.offset, scenario: $0.element, cost: cost($0.element, store))
        }
        return costed.sorted {
            $0.cost != $1.cost ? (order == .cheapestFirst) == ($0.cost < $1.cost) : $0.offset < $1.offset
        }.map(\.scenario)
    }

    /// What preparing `scenario` costs on this store, roughly in bits of RSA key to generate: nothing for a key the
    /// store has, little for an EC key; a DH group made to measure, or an intermediate CA not made yet, adds its bits
    /// (named groups cost nothing).
    private static func cost(_ scenario: Scenario, _ store: CertificateStore) -> Int {
        var cost = 0
        if let plan = scenario.certificate, !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key) {
            if case .rsa(let bits) = plan.key { cost += bits } else { cost += 1 }
        }
        if case .bits(let bits)? = scenario.tls?.dh, !store.hasDHParameters(bits: bits) { cost += bits }
        // An intermediate not made yet is an RSA-2048 key more (roots are EC keys: next to nothing).
        if let issuer = scenario.certificate.flatMap({ BuiltinAuthority(rawValue: $0.issuer) }), !issuer.isRoot,
            !FileManager.default.fileExists(atPath: store.certificatePath(issuer).path)
        {
            cost += 2048
        }
        return cost
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
                if case .leased(let id) = key {
                    table.retire(id, member, reason: "the runner stopped")
                    table.members[key] = nil
                } else {
                    table.set(key, .stopped)
                }
            }
            return (running, held)
        }
        await withTaskGroup(of: Void.self) { group in
            for fixture in running { group.addTask { await fixture.stop() } }
            for reservation in held { group.addTask { await reservation.release() } }
        }
        for pending in closing.withLockedValue({ Array($0.values) }) { try? await pending.get() }
        wakeSettleWaiters()
        await revocationServices?.stop()
        if let helper = legacyHelper.withLockedValue({ $0 }) {
            try? await BlockingWork.blockingIO { helper.stop() }
        }
    }

    // MARK: What the runner reads

    /// The catalog's fixtures in catalog order, each with its state.
    package var catalogStates: [(scenario: Scenario, state: FixtureState)] {
        let members = table.withLockedValue { $0.members }
        return catalog.scenarios.compactMap { scenario in members[.catalog(scenario.name)].map { (scenario, $0.state) }
        }
    }

    /// What `/scenarios.json` and the dashboard say of a scenario still `preparing`, making `making`.
    static func preparingReason(making: String) -> String {
        switch making {
        case "": return "preparing… (its certificate is being made; served when ready)"
        case awaitingHelper: return "preparing… (asking the legacy helper to serve it)"
        default: return "preparing… (making \(making) in the background; served when ready)"
        }
    }
}

extension FixtureFleet: FleetQueries, FixtureLookup {
    package var generation: Int { table.withLockedValue { $0.generation } }

    /// Ready (see `RunnerHealth`) when every scenario asked about (nil: every catalog fixture) has left `preparing`;
    /// asked about by name, each must serve. Read from the catalog document, so it says what the dashboard says.
    package func health(asking asked: [String]?) -> RunnerHealth {
        let stopping = table.withLockedValue(\.stopping)
        let entries = document().scenarios
        let scenarios = entries.map {
            RunnerHealth.Scenario(name: $0.name, status: $0.status.rawValue, port: $0.port, reason: $0.reason)
        }
        let byName = Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var waiting: [String] = []
        var unavailable: [RunnerHealth.Unavailable] = []
        for name in asked ?? entries.map(\.name) {
            guard let entry = byName[name] else {
                let reason =
                    catalog.names.contains(name)
                    ? "this runner does not serve it on its catalog port (serve was given other names); start it with "
                        + "POST \(FixtureAPI.fixturesPath), or name it to serve"
                    : "no scenario of that name in this runner's catalog (/scenarios.json lists them)"
                unavailable.append(RunnerHealth.Unavailable(name: name, reason: reason))
                continue
            }
            switch entry.status {
            case .preparing: waiting.append(name)
            case .serving: continue
            case .unsupported, .failed, .stopped, .listed:
                // Among all, a scenario that will never serve is settled; asked about by name, it must serve.
                if asked != nil {
                    let reason = entry.reason ?? entry.status.rawValue
                    unavailable.append(RunnerHealth.Unavailable(name: name, reason: reason))
                }
            }
        }
        let serving = entries.filter { $0.status == .serving }.count
        let status: RunnerHealth.Status
        let summary: String
        if stopping {
            (status, summary) = (.stopping, "the runner is stopping")
        } else if let first = unavailable.first {
            let others = unavailable.dropFirst().map(\.name)
            status = .unavailable
            summary = "\(first.name) will not be served: \(first.reason)"
                + (others.isEmpty ? "" : " (nor \(others.joined(separator: ", ")))")
        } else if !waiting.isEmpty {
            let named = waiting.count <= 5 ? waiting.joined(separator: ", ") : waiting.prefix(5).joined(separator: ", ")
                + " and \(waiting.count - 5) more"
            (status, summary) = (.preparing, "still preparing \(named); \(serving) serving")
        } else if let asked {
            (status, summary) = (.ready, "ready: \(asked.joined(separator: ", ")) serving")
        } else {
            let others = Dictionary(grouping: entries.filter { $0.status != .serving }, by: \.status.rawValue)
                .sorted { $0.key < $1.key }.map { "\($0.value.count) \($0.key)" }
            (status, summary) = (.ready, "ready: " + (["\(serving) serving"] + others).joined(separator: ", "))
        }
        return RunnerHealth(
            status: status, summary: summary, waitingFor: waiting, unavailable: unavailable, scenarios: scenarios)
    }

    package var fixtureDomains: [String] { [Scenario.fixturesDomain] + options.domains }

    package var proxyHops: ProxyHops { options.proxyHops }

    /// The records of `key`'s connections after `cursor`, as `FixtureServer.connections(after:wait:)` gives them:
    /// once one has settled, or when `wait` has passed. A leased fixture by its id, a catalog one by its name.
    package func connections(of key: Key, after cursor: ConnectionCursor, wait: Duration) async throws(FleetError)
        -> ConnectionList
    {
        let (member, stopped) = table.withLockedValue { table -> (Member?, StoppedFixtures.Entry?) in
            guard case .leased(let id) = key, table.members[key] == nil else { return (table.members[key], nil) }
            return (nil, table.stopped[id])
        }
        let fixture: FixtureServer
        switch (key, member) {
        case (.leased(let id), let member):
            if member == nil, let stopped {
                // Nothing more will come: answer at once, whatever the wait.
                return ConnectionList(connections: stopped.log.records(after: cursor), latestID: stopped.log.latestID,
                                      latestRequestNumber: stopped.log.latestRequestNumber, stopped: stopped.stopped)
            }
            guard let member, member.lease != nil, let serving = member.state.fixture else {
                throw absence(of: id)
            }
            fixture = serving
        case (.catalog(let name), nil):
            let inCatalog = catalog.names.contains(name)
            throw .noSuchScenario(name, inCatalog: inCatalog, suggestion: inCatalog ? nil : catalog.closest(to: name))
        case (.catalog(let name), let member?):
            guard let serving = member.state.fixture else { throw .notServing(name, Self.why(member.state)) }
            fixture = serving
        }
        let records = await fixture.connections(after: cursor, wait: wait)
        let now = fixture.cursor
        return ConnectionList(connections: records, latestID: now.connection, latestRequestNumber: now.request)
    }

    package func recentConnections(last limit: Int) -> [String: ConnectionList] {
        var lists: [String: ConnectionList] = [:]
        for (scenario, state) in catalogStates {
            guard let fixture = state.fixture else { continue }
            let latest = fixture.latestConnectionID
            guard latest > 0 else { continue }
            let records = fixture.log.records(after: max(0, latest - limit))
            lists[scenario.name] = ConnectionList(connections: Array(records.suffix(limit)), latestID: latest,
                                                  latestRequestNumber: fixture.log.latestRequestNumber)
        }
        return lists
    }

    /// The error for a leased fixture `id` that is not running: it stopped lately, long ago, or never ran here.
    func absence(of id: String) -> FleetError {
        .noSuchFixture(id, table.withLockedValue { $0.stopped.whereabouts(of: id) })
    }

    /// Whether `id` is shaped as the ids this fleet gives leased fixtures (20 lowercase hexadecimal digits).
    static func isFixtureID(_ id: String) -> Bool {
        id.utf8.count == 20 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Why a catalog fixture in `state` has no records here.
    static func why(_ state: FixtureState) -> String {
        switch state {
        case .preparing(let making, _): return preparingReason(making: making)
        case .serving: return "it serves"
        case .servedByHelper: return "the legacy helper serves it, in a process of its own, which keeps no records"
        // The reason says "unsupported by the linked OpenSSL …" itself: not "unsupported: unsupported by …".
        case .unsupported(let reason): return reason.hasPrefix("unsupported") ? reason : "unsupported: \(reason)"
        case .failed(let reason): return "failed: \(reason)"
        case .stopped: return "stopped"
        }
    }

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
            case .preparing(let making, _):
                return CatalogEntry(
                    scenario: scenario, port: port, host: FixtureServer.urlHost(listeningOn: options.bindAddresses),
                    status: .preparing, reason: Self.preparingReason(making: making))
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
    /// How each fixture listens: these options, on `port`. `scenario` (and a control API fixture's `leaseID`) name the
    /// fixture in what `connectionEnded` is told; without a scenario it is told nothing.
    package func fixtureConfiguration(port: Int, scenario: String? = nil, leaseID: String? = nil)
        -> FixtureConfiguration
    {
        var configuration = FixtureConfiguration(
            bindAddresses: bindAddresses, port: port, handshakeTimeout: handshakeTimeout,
            idleTimeout: idleTimeout, headerTimeout: headerTimeout,
            maximumConnections: maximumConnections)
        if let logger { configuration.logger = logger }
        configuration.connectionAnnotator = proxyHops.annotator
        if let connectionEnded, let scenario {
            let catalogPort = leaseID == nil && port != 0 ? port : nil
            configuration.connectionEnded = { record in
                connectionEnded(FleetConnection(scenario: scenario, port: catalogPort, fixture: leaseID, record: record))
            }
        }
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
