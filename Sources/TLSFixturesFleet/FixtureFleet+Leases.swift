import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

// Fixtures started on request (the control API), each on a free port with a lease: a fixture whose lease passes without
// a renew is stopped, so a test run that crashed leaves nothing listening.
//
// Inline scenarios (the front door decodes them with the scenario files' own strict decoder) are prepared in memory
// only (`PreparationStorage.memory`): nothing they name is written to the user's store, so an inline scenario called
// `pinned` (refused anyway: catalog names are taken) or one whose `keyName` is `pinned` can neither replace the published pinned certificate nor the key apps pin. A `keyName` may name a key the catalog uses
// (with the catalog's key type), which is how an inline scenario re-issues on the pinned key, as `pin-reissued` does;
// it is read, never replaced. `backup` (the published backup pin, which no server may use) and `client` (the client
// identity) are not catalog keys, so they are refused.
extension FixtureFleet: FleetCommands {
    package func startLeased(_ request: LeaseRequest) async throws(FleetError) -> LeasedFixture {
        let ttl = try Self.checkTTL(request.ttl)
        if let session = request.session, !FixtureAPI.isValidSession(session) { throw .invalidSession(session) }
        let (scenario, storage) = try resolve(request.scenario)
        if case .catalog = request.scenario { try await awaitCatalogPreparation(of: scenario.name) }
        // The fixture counts against the cap from here, while it is prepared.
        let id = Self.newID()
        if let refusal = state.withLockedValue({ $0.admit(id, scenario, limit: FixtureAPI.maximumLiveFixtures) }) {
            throw refusal
        }
        let fixture: FixtureServer
        let interceptionRoot: Certificate?
        do throws(FleetError) {
            fixture = try await serve(scenario, storage: storage, leaseID: id)
            do throws(FleetError) {
                interceptionRoot = try self.interceptionRoot(for: scenario)
            } catch {
                await fixture.stop()
                throw error
            }
        } catch {
            state.withLockedValue { $0.abandon(id) }
            throw error
        }
        let clock = options.hooks.leaseClock
        let lease = FleetState.Lease(
            session: request.session, ttl: ttl, expiresAt: clock.now().addingTimeInterval(TimeInterval(ttl)),
            expiry: schedule(id, generation: 0, after: ttl), generation: 0, interceptionRoot: interceptionRoot)
        let (leased, effects) = state.withLockedValue { $0.serve(id, fixture, lease: lease) }
        await effects.run()
        guard let leased else { throw .stopping }
        return leased
    }

    /// When this fleet is still preparing `name` on its catalog port (a first run making its key), waits for that, up
    /// to `preparingStartWait`, rather than make the same key again or hold a thread on the store's lock for it.
    private func awaitCatalogPreparation(of name: String) async throws(FleetError) {
        guard case .preparing(let making, _)? = state.withLockedValue({ $0.members[.catalog(name)]?.state }) else {
            return
        }
        let limit = options.hooks.preparingStartWait
        if await settled(name, within: limit) == nil {
            if isStopping { throw .stopping }
            let waited = Int((limit.nanoseconds + 500_000_000) / 1_000_000_000)
            throw .preparing(name, making: making, waited: waited)
        }
    }

    /// Prepares `scenario` and listens for it on a free port.
    private func serve(_ scenario: Scenario, storage: PreparationStorage, leaseID: String) async throws(FleetError)
        -> FixtureServer
    {
        let prepared: PreparedScenario
        do {
            prepared = try await prepare(scenario, storage: storage)
        } catch let refusal as FleetError {
            throw refusal
        } catch let unsupported as ScenarioUnsupported {
            throw FleetError(.cannotPrepare, unsupported.reason, fix: unsupported.fix, part: .scenario)
        } catch let error as PKIError where error.code == .digestNotSignable {
            // The library's fix names its Swift API; a control API client writes the scenario file's keys.
            throw FleetError(.cannotPrepare, "cannot prepare \(scenario.name): \(error.reason)",
                             fix: CertificatePlan.digestNotSignableFix, part: .scenario)
        } catch {
            throw FleetError(.cannotPrepare, "cannot prepare \(scenario.name): \(error)", part: .scenario)
        }
        do {
            return try await FixtureServer.start(
                prepared, configuration: options.fixtureConfiguration(port: 0, scenario: scenario.name, leaseID: leaseID))
        } catch {
            throw FleetError(.cannotListen, "cannot listen for \(scenario.name): \(error)")
        }
    }

    /// The interception CA, for a scenario whose clients must trust it.
    private func interceptionRoot(for scenario: Scenario) throws(FleetError) -> Certificate? {
        guard scenario.expect.trustedRoots?.contains(BuiltinAuthority.interceptionRoot.rawValue) == true else {
            return nil
        }
        do {
            return try store.authority(.interceptionRoot).certificate
        } catch {
            throw FleetError(.cannotDescribe, "cannot read the interception CA for \(scenario.name): \(error)")
        }
    }

    static func checkTTL(_ ttl: Int?) throws(FleetError) -> Int {
        let ttl = ttl ?? FixtureAPI.defaultTTL
        guard (1...FixtureAPI.maximumTTL).contains(ttl) else { throw .invalidTTL(ttl) }
        return ttl
    }

    /// The scenario a request names, and where its material may live.
    private func resolve(_ source: LeaseRequest.Source) throws(FleetError) -> (Scenario, PreparationStorage) {
        switch source {
        case .catalog(let name):
            // Before any look-up: a name of a megabyte is not compared with the catalog's, nor sent back.
            guard name.utf8.count <= FixtureAPI.maximumScenarioNameBytes else {
                throw FleetError(
                    .unknownScenario,
                    "the scenario name is \(name.utf8.count) bytes; no scenario's is over "
                        + "\(FixtureAPI.maximumScenarioNameBytes)", fix: ScenarioError.listHint, part: .scenario)
            }
            do { return (try catalog.scenario(named: name), .store) } catch {
                throw FleetError(.unknownScenario, "\(error)", part: .scenario)
            }
        case .inline(let scenario):
            if catalog.names.contains(scenario.name) {
                throw FleetError(
                    .catalogName, "\"\(scenario.name)\" is the name of a catalog scenario",
                    fix: "give yours a name of its own, or start the catalog's by its name", part: .scenarioName)
            }
            do { try catalog.requireFreeCertificateName(scenario.name) } catch {
                throw FleetError(
                    .invalidScenario, "its name: \((error as? any CodedError)?.reason ?? "\(error)")",
                    part: .scenarioName)
            }
            if let plan = scenario.certificate, let keyName = plan.keyName {
                guard let spec = catalogKeys()[keyName] else {
                    throw FleetError(
                        .invalidKeyName,
                        "keyName \"\(keyName)\" is not a key of the catalog's (such as pinned, or a "
                            + "scenario's own name)", fix: "leave it out for a key of this fixture's own",
                        part: .keyName)
                }
                guard spec == plan.key else {
                    throw FleetError(
                        .invalidKeyName, "keyName \"\(keyName)\" is a \(spec) key",
                        fix: "a scenario that shares it must say \"key\": \"\(spec)\"", part: .key)
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
        if storage == .memory, let cached = state.withLockedValue({ $0.cached(scenario) }) { return cached }
        let domains = options.domains
        let store = store
        let state = state
        let made = try await lanes.run(
            slow: store.slowWork(preparing: scenario, storage: storage) != nil,
            makesNothing: store.makesNothing(preparing: scenario, storage: storage), scenario: scenario.name,
            admit: { limit in state.withLockedValue { $0.admitSlow(limit: limit) } },
            finish: { state.withLockedValue { $0.finishSlow() } },
            stopping: { state.withLockedValue(\.stopping) }
        ) {
            try store.prepare(scenario, domains: domains, storage: storage)
        }
        if storage == .memory { state.withLockedValue { $0.remember(scenario, made) } }
        return made
    }

    private static func newID() -> String {
        (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.map {
            String(repeating: "0", count: 16 - $0.count) + $0
        }
        .joined().prefix(20).description
    }

    // MARK: Leases

    private func schedule(_ id: String, generation: Int, after ttl: Int) -> Scheduled<Void> {
        options.hooks.leaseClock.eventLoop.scheduleTask(in: .seconds(Int64(ttl))) { [weak self] in
            self?.expire(id, generation: generation)
        }
    }

    /// The lease of `id` ended (unless renewed since): it leaves the table now and its fixture closes; `stop()` waits
    /// for that.
    private func expire(_ id: String, generation: Int) {
        let loop = options.hooks.leaseClock.eventLoop
        let closed = loop.makePromise(of: Void.self)
        guard let ended = state.withLockedValue({ $0.expire(id, generation: generation, closed: closed) }) else {
            return
        }
        closed.completeWithTask { await ended.stop() }
        closed.futureResult.whenComplete { [weak self] _ in self?.state.withLockedValue { $0.closed(id) } }
    }

    package func renewLease(id: String, ttl: Int?) throws(FleetError) -> LeasedFixture {
        let requested = try ttl.map { ttl throws(FleetError) in try Self.checkTTL(ttl) }
        let now = options.hooks.leaseClock.now()
        guard let (renewed, generation, effects) = state.withLockedValue({ $0.renew(id, ttl: requested, now: now) })
        else { throw absence(of: id) }
        effects.runAtOnce()
        let timer = schedule(id, generation: generation, after: renewed.ttl)
        state.withLockedValue { $0.attach(timer, to: id, generation: generation) }?.cancel()
        return renewed
    }

    package func leasedFixture(id: String) throws(FleetError) -> LeasedFixture {
        guard let leased = state.withLockedValue({ $0.leased(id) }) else { throw absence(of: id) }
        return leased
    }

    package func leasedFixtures(session: String?) -> [LeasedFixture] {
        state.withLockedValue { state in
            state.members.keys.compactMap { key -> LeasedFixture? in
                guard case .leased(let id) = key else { return nil }
                return state.leased(id)
            }
        }
        .filter { session == nil || $0.session == session }
        .sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
    }

    // MARK: Stopping

    @discardableResult
    package func stopLeased(id: String) async -> Bool {
        let (stopped, effects) = state.withLockedValue { $0.stopLeased(id, reason: "it was deleted") }
        await effects.run()
        return stopped
    }

    package func stopSession(_ session: String) async -> Int {
        let (count, effects) = state.withLockedValue { $0.stopSession(session) }
        await effects.run()
        return count
    }
}
