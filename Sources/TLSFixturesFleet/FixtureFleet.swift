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
/// each on a free port with a lease — with one `FixtureState` each. It owns the ports held for slow scenarios, the
/// leases, the domains, the revocation services and the legacy helper, and knows nothing of HTTP: the front door reads
/// and asks through `FleetQueries`, `FleetCommands` and `FixtureLookup`, in domain values (`LeaseRequest`,
/// `LeasedFixture`), and maps the `FleetError`s it gets to statuses itself.
///
/// What changes is one value, `FleetState`, behind one lock: each change is a transition of that value that returns
/// what to do next (stop these fixtures, free these ports, wake these waiters), done here after the lock is released.
///
/// Starting is two steps, so the front door can answer before any scenario is made: `open` makes the CA and holds
/// every catalog port (bound, not listening: a client is refused, never reset) with each scenario `preparing`;
/// `serve` then prepares them a core each, cheapest first, and serves each the moment it is ready. On a store that is
/// still empty the slow keys (RSA-4096 and -8192, and large DH groups) would hold everything up for a minute, so those
/// scenarios are made in the background once the rest are serving.
package final class FixtureFleet: Sendable {
    package struct Options: Sendable {
        /// Dashboard port; scenario `P` of the catalog listens on `P - 9800 + portBase`.
        package var portBase: Int = ScenarioCatalog.defaultPortBase
        package var bindAddresses: [String]? = nil
        package var handshakeTimeout: TimeAmount = .seconds(10)
        /// For the fixtures and the front door alike.
        package var idleTimeout: TimeAmount = .seconds(60)
        /// For the fixtures and the front door alike (see `FixtureConfiguration.headerTimeout`).
        package var headerTimeout: TimeAmount = .seconds(20)
        /// Per fixture; nil: a quarter of the descriptor limit. The front door holds at most 256 whatever this says.
        package var maximumConnections: Int? = nil
        package var logger: Logger? = nil
        /// The `make legacy-openssl` helper that serves, in a process of its own, the built-in scenarios the linked
        /// OpenSSL cannot (SSLv3, RC4, 3DES); nil leaves them reported unsupported.
        package var legacyHelper: URL? = nil
        /// Domains every baseline leaf also names as `NAME.DOMAIN` (`--domain`); the CA must permit them.
        package var domains: [String] = []
        /// Make slow keys after the rest are serving (the default); false: `serve` returns only once they serve too.
        package var backgroundPreparation = true
        /// The proxy's open tunnels, which every fixture asks when a connection arrives, so its record names the
        /// CONNECT authority a client came through (the front door's proxy notes them: `FixtureLookup.proxyHops`).
        package var proxyHops = ProxyHops()
        /// Told every connection to any of the fleet's fixtures once it has closed, on the connection's event loop (so
        /// it must be quick); nil: none. `serve --log-connections` and `--connection-log`.
        package var connectionEnded: (@Sendable (FleetConnection) -> Void)? = nil
        /// What only this package's tests change.
        package var hooks = Hooks()
        package init() {}
    }

    /// The fleet's test hooks: how a test holds a state it needs (a scenario still preparing, a lease at its end, a
    /// slow lane that is full) without racing a clock or key generation. Package-only, apart from the options a user
    /// sets, and never on the public runner's configuration.
    package struct Hooks: Sendable {
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
        package init() {}
    }

    /// Progress for the slow first run.
    package enum Progress: Sendable {
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

    /// Which fixture; the catalog's are named, leased ones get a random id.
    package enum Key: Hashable, Sendable {
        case catalog(String)
        case leased(String)
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
    /// The one lock, around everything that changes.
    let state: NIOLockedValueBox<FleetState>
    /// Where the revocation scenarios' leaves say their OCSP responder and CRLs are.
    private let revocationEndpoints: RevocationEndpoints
    /// Where the control API's starts are prepared: slow keys apart from everything else.
    let lanes: PreparationLanes

    private init(
        catalog: ScenarioCatalog, store: CertificateStore, options: Options, state: FleetState,
        revocationServices: RevocationServices?, revocationEndpoints: RevocationEndpoints, descriptorWarning: String?
    ) {
        self.catalog = catalog; self.store = store; self.options = options
        self.revocationServices = revocationServices; self.revocationEndpoints = revocationEndpoints
        self.state = NIOLockedValueBox(state)
        self.descriptorWarning = descriptorWarning
        lanes = PreparationLanes(
            maximumSlowStarts: options.hooks.maximumSlowStarts, observer: options.hooks.slowLaneObserver)
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

        var state = FleetState()
        var held: [PortReservation] = []
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
                if let reservation { held.append(reservation) }
                state.hold(scenario, making: store.slowWork(preparing: scenario) ?? "", reservation: reservation)
            }
        } catch {
            await FleetState.Effects(release: held).run()
            await services?.stop()
            throw error
        }
        // Every address a fixture listens on (loopback: 127.0.0.1 and ::1) is a descriptor, and so is each connection.
        let warning = FileDescriptorLimit.warning(
            FileDescriptorLimit.raiseOnce(), scenarios: scenarios.count,
            addresses: max(1, options.bindAddresses?.count ?? 2))
        return FixtureFleet(
            catalog: catalog, store: store, options: options, state: state, revocationServices: services,
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
        // In the background, each outcome is reported, not the key generation under it.
        let silent: @Sendable (Progress) -> Void = { _ in }
        let outcomes = try await Self.prepare(
            scenarios, store: store, domains: options.domains, revocationEndpoints: revocationEndpoints,
            order: .cheapestFirst, progress: announce ? silent : progress,
            before: options.hooks.preparationGate ?? { _ in }
        ) { scenario, result in
            await self.serveWhenReady(scenario, result, progress: announce ? progress : { _ in })
        }
        // In the order they were asked for, so the first failure is the same on every run.
        return scenarios.compactMap { outcomes[$0.name] ?? nil }
    }

    /// The built-in scenarios this OpenSSL cannot serve wait for the legacy helper, if there is one; whatever it
    /// cannot serve either becomes unsupported, with its reason. They show `preparing` until it has answered.
    private func startLegacyHelper() async throws {
        let names = state.withLockedValue(\.awaitingHelper)
        guard !names.isEmpty else { return }
        var process: LegacyHelperProcess? = nil
        var failure: Error? = nil
        if let path = options.legacyHelper {
            let request = LegacyHelperRequest(
                scenarios: catalog.names.filter(names.contains), storeDirectory: store.directory.path,
                portBase: options.portBase, bindAddresses: options.bindAddresses,
                handshakeTimeout: options.handshakeTimeout.seconds, idleTimeout: options.idleTimeout.seconds)
            do {
                process = try await LegacyHelperProcess.start(helper: path, request: request)
            } catch {
                failure = error
            }
        }
        let served = process?.document.scenarios.filter { $0.status == .serving } ?? []
        let (effects, stopAgain) = state.withLockedValue { $0.helperAnswered(process, served: served) }
        await effects.run()
        if let stopAgain { await stopAgain.stop() }
        if let failure { throw failure }
    }

    /// Makes the slow scenarios on every core, then serves each on the port its reservation held.
    private func prepareInBackground(_ scenarios: [Scenario], progress: @escaping @Sendable (Progress) -> Void) {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        state.withLockedValue { $0.startedInBackground(promise.futureResult) }
        promise.completeWithTask { [self] in
            _ = try? await prepareAndServe(scenarios, progress: progress, announce: true)
        }
    }

    /// Serves a prepared catalog scenario on the port its reservation held (or records why not), unless the fleet is
    /// stopping. A built-in scenario this OpenSSL cannot serve waits for the legacy helper, when there is one. Returns
    /// the failure, when it is one (not a scenario this OpenSSL cannot serve).
    private func serveWhenReady(
        _ scenario: Scenario, _ result: Result<PreparedScenario, Error>, progress: @Sendable (Progress) -> Void
    ) async -> Error? {
        guard case .serve(let reservation) = state.withLockedValue({ $0.prepared(scenario.name) }) else { return nil }
        await reservation?.release()
        if case .failure(let error as ScenarioUnsupported) = result, options.legacyHelper != nil,
            ScenarioCatalog.builtIn.names.contains(scenario.name)
        {
            state.withLockedValue { $0.awaitHelper(scenario.name, reason: error.detail) }.runAtOnce()
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
        let settled: FixtureState
        switch outcome {
        case .success(let fixture): settled = .serving(fixture)
        case .failure(let error as ScenarioUnsupported): settled = .unsupported(reason: error.detail)
        case .failure(let error): settled = .failed(reason: "\(error)")
        }
        let effects = state.withLockedValue { $0.settle(scenario.name, to: settled) }
        await effects.run()
        // Stopped again: the fleet began stopping meanwhile.
        if !effects.stop.isEmpty { return nil }
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

    // MARK: Waiting for a catalog scenario

    /// The catalog fixture `name`'s state once it is no longer `preparing` (`.stopped` once the fleet stops), or nil
    /// when `limit` passes first or it is not a catalog fixture of this fleet. Woken by each settle, not polled.
    func settled(_ name: String, within limit: TimeAmount) async -> FixtureState? {
        let deadline = NIODeadline.now() + limit
        while true {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Registered under the lock, so no change can slip between the look and the registration.
                guard let id = state.withLockedValue({ $0.wait(for: name, continuation) }) else {
                    return continuation.resume()
                }
                // Whoever takes the continuation out first (a settle, or the deadline) resumes it, once.
                MultiThreadedEventLoopGroup.singleton.next().scheduleTask(deadline: deadline) { [self] in
                    state.withLockedValue { $0.takeWaiter(id) }?.resume()
                }
            }
            let current = state.withLockedValue { $0.stopping ? .stopped : $0.members[.catalog(name)]?.state }
            guard let current else { return nil }
            guard current.isPreparing else { return current }
            if NIODeadline.now() >= deadline { return nil }
        }
    }

    /// Returns once nothing is left preparing (at once when nothing was).
    package func waitUntilPrepared() async {
        try? await state.withLockedValue(\.background)?.get()
    }

    /// Stops every fixture (the catalog's and the leased ones) and frees the ports held for scenarios still preparing;
    /// each fixture closes its connections within a second, and they stop concurrently. Keys still being generated
    /// are abandoned, not waited for. Nothing starts afterwards: every catalog fixture ends `stopped`, and no leased one
    /// is left.
    package func stop() async {
        let plan = state.withLockedValue { $0.beginStop() }
        await plan.effects.run()
        for pending in plan.closing { try? await pending.get() }
        await revocationServices?.stop()
        await plan.helper?.stop()
    }

    /// What `/scenarios.json` and the dashboard say of a scenario still `preparing`, making `making`.
    static func preparingReason(making: String) -> String {
        making.isEmpty
            ? "preparing… (its certificate is being made; served when ready)"
            : "preparing… (making \(making) in the background; served when ready)"
    }

    /// What they say of one waiting for the legacy helper.
    static let awaitingHelperReason = "preparing… (asking the legacy helper to serve it)"
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

extension TimeAmount {
    /// In seconds, as the legacy helper's request says it.
    var seconds: Double { Double(nanoseconds) / 1e9 }
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
