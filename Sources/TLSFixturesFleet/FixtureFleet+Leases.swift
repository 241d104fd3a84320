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
// Inline scenarios (a scenario file's JSON in the request) are decoded by the scenario files' own strict decoder and
// prepared in memory only (`PreparationStorage.memory`): nothing they name is written to the user's store, so an
// inline scenario called `pinned` (refused anyway: catalog names are taken) or one whose `keyName` is `pinned` can
// neither replace the published pinned certificate nor the key apps pin. A `keyName` may name a key the catalog uses
// (with the catalog's key type), which is how an inline scenario re-issues on the pinned key, as `pin-reissued` does;
// it is read, never replaced. `backup` (the published backup pin, which no server may use) and `client` (the client
// identity) are not catalog keys, so they are refused.
extension FixtureFleet: FleetCommands {
    private static let inlineCacheSize = 32

    package func startLeased(_ request: StartFixtureRequest) async throws(FleetError) -> FixtureDescription {
        let ttl = try Self.checkTTL(request.ttl)
        if let session = request.session, !FixtureAPI.isValidSession(session) { throw .invalidSession(session) }
        let (scenario, storage) = try resolve(request.scenario)
        if case .name = request.scenario { try await awaitCatalogPreparation(of: scenario.name) }
        // The fixture counts against the cap from here, while it is prepared.
        let key = Key.leased(Self.newID())
        let refusal = table.withLockedValue { table -> FleetError? in
            if table.stopping { return .stopping }
            let leased = table.members.keys.filter { if case .leased = $0 { return true } else { return false } }
            if leased.count >= FixtureAPI.maximumLiveFixtures { return .full }
            table.members[key] = Member(scenario: scenario, state: .preparing(making: "its keys", reservation: nil))
            table.generation += 1
            return nil
        }
        if let refusal { throw refusal }
        let fixture: FixtureServer
        let description: FixtureDescription
        do throws(FleetError) {
            fixture = try await serve(scenario, storage: storage, key: key)
            do throws(FleetError) {
                description = try describe(fixture, key: key, session: request.session, ttl: ttl)
            } catch {
                await fixture.stop()
                throw error
            }
        } catch {
            table.withLockedValue { table in
                table.members[key] = nil
                table.generation += 1
            }
            throw error
        }
        let admitted = table.withLockedValue { table -> Bool in
            guard !table.stopping, table.members[key] != nil, case .leased(let id) = key else { return false }
            let lease = Lease(description: description, expiry: schedule(id, generation: 0, after: ttl), generation: 0)
            table.members[key] = Member(scenario: scenario, state: .serving(fixture), lease: lease)
            table.generation += 1
            return true
        }
        guard admitted else {
            await fixture.stop()
            throw .stopping
        }
        return description
    }

    /// When this fleet is still preparing `name` on its catalog port (a first run making its key), waits for that, up
    /// to `preparingStartWait`, rather than make the same key again or hold a thread on the store's lock for it.
    private func awaitCatalogPreparation(of name: String) async throws(FleetError) {
        guard case .preparing(let making, _)? = table.withLockedValue({ $0.members[.catalog(name)]?.state }) else {
            return
        }
        if await settled(name, within: options.preparingStartWait) == nil {
            if table.withLockedValue(\.stopping) { throw .stopping }
            let waited = Int((options.preparingStartWait.nanoseconds + 500_000_000) / 1_000_000_000)
            throw .preparing(name, making: making, waited: waited)
        }
    }

    /// Prepares `scenario` and listens for it on a free port.
    private func serve(_ scenario: Scenario, storage: PreparationStorage, key: Key) async throws(FleetError)
        -> FixtureServer
    {
        let prepared: PreparedScenario
        do {
            prepared = try await prepare(scenario, storage: storage)
        } catch let refusal as FleetError {
            throw refusal
        } catch let unsupported as ScenarioUnsupported {
            throw FleetError(.cannotPrepare, unsupported.reason, fix: unsupported.fix, field: "scenario")
        } catch let error as PKIError where error.code == .digestNotSignable {
            // The library's fix names its Swift API; a control API client writes the scenario file's keys.
            throw FleetError(.cannotPrepare, "cannot prepare \(scenario.name): \(error.reason)",
                             fix: CertificatePlan.digestNotSignableFix, field: "scenario")
        } catch {
            throw FleetError(.cannotPrepare, "cannot prepare \(scenario.name): \(error)", field: "scenario")
        }
        do {
            var leaseID: String? = nil
            if case .leased(let id) = key { leaseID = id }
            return try await FixtureServer.start(
                prepared, configuration: options.fixtureConfiguration(port: 0, scenario: scenario.name, leaseID: leaseID))
        } catch {
            throw FleetError(.cannotListen, "cannot listen for \(scenario.name): \(error)")
        }
    }

    static func checkTTL(_ ttl: Int?) throws(FleetError) -> Int {
        let ttl = ttl ?? FixtureAPI.defaultTTL
        guard (1...FixtureAPI.maximumTTL).contains(ttl) else { throw .invalidTTL(ttl) }
        return ttl
    }

    /// The scenario a request names, and where its material may live.
    private func resolve(_ reference: ScenarioReference) throws(FleetError) -> (Scenario, PreparationStorage) {
        switch reference {
        case .name(let name):
            // Before any look-up: a name of a megabyte is not compared with the catalog's, nor sent back.
            guard name.utf8.count <= FixtureAPI.maximumScenarioNameBytes else {
                throw FleetError(
                    .unknownScenario,
                    "the scenario name is \(name.utf8.count) bytes; no scenario's is over "
                        + "\(FixtureAPI.maximumScenarioNameBytes)", fix: ScenarioError.listHint, field: "scenario")
            }
            do { return (try catalog.scenario(named: name), .store) } catch {
                throw FleetError(.unknownScenario, "\(error)", field: "scenario")
            }
        case .inline(let json):
            let scenario = try Self.decodeInline(json)
            if catalog.names.contains(scenario.name) {
                throw FleetError(
                    .catalogName, "\"\(scenario.name)\" is the name of a catalog scenario",
                    fix: "give yours a name of its own (or start the catalog's with "
                        + "{\"scenario\": \"\(scenario.name)\"})",
                    field: "scenario.name")
            }
            do { try catalog.requireFreeCertificateName(scenario.name) } catch {
                throw FleetError(.invalidScenario, "scenario.name: \((error as? any CodedError)?.reason ?? "\(error)")",
                                 field: "scenario.name")
            }
            if let plan = scenario.certificate, let keyName = plan.keyName {
                guard let spec = catalogKeys()[keyName] else {
                    throw FleetError(
                        .invalidKeyName,
                        "keyName \"\(keyName)\" is not a key of the catalog's (such as pinned, or a "
                            + "scenario's own name)", fix: "leave it out for a key of this fixture's own",
                        field: "scenario.certificate.keyName")
                }
                guard spec == plan.key else {
                    throw FleetError(
                        .invalidKeyName, "keyName \"\(keyName)\" is a \(spec) key",
                        fix: "a scenario that shares it must say \"key\": \"\(spec)\"",
                        field: "scenario.certificate.key")
                }
            }
            return (scenario, .memory)
        }
    }

    /// An inline scenario, read by the scenario files' own decoder; a refusal's field is its key inside `scenario`.
    private static func decodeInline(_ json: JSONValue) throws(FleetError) -> Scenario {
        do {
            return try ScenarioCatalog.decode(try JSONEncoder().encode(json), source: "scenario")
        } catch let error as ScenarioError where error.code == .malformed {
            let problem = error.problem ?? error.reason
            // "at tls.minVersion: …" names the key; the field is that key inside `scenario`.
            if problem.hasPrefix("at "), let colon = problem.range(of: ": ") {
                let path = String(problem[problem.index(problem.startIndex, offsetBy: 3)..<colon.lowerBound])
                throw FleetError(
                    .invalidScenario, "scenario.\(path): \(problem[colon.upperBound...])", field: "scenario.\(path)")
            }
            throw FleetError(.invalidScenario, "scenario: \(problem)", field: "scenario")
        } catch {
            throw FleetError(.invalidScenario, "scenario: \(error)", field: "scenario")
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
        if storage == .memory, let cached = inlineCache.withLockedValue({ $0.first { $0.0 == scenario }?.1 }) {
            return cached
        }
        let domains = options.domains
        let store = store
        let table = table
        let made = try await lanes.run(
            slow: store.slowWork(preparing: scenario, storage: storage) != nil, scenario: scenario.name,
            stopping: { table.withLockedValue(\.stopping) }
        ) {
            try store.prepare(scenario, domains: domains, storage: storage)
        }
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
        (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.map {
            String(repeating: "0", count: 16 - $0.count) + $0
        }
        .joined().prefix(20).description
    }

    private func describe(
        _ fixture: FixtureServer, key: Key, session: String?, ttl: Int
    ) throws(FleetError) -> FixtureDescription {
        guard case .leased(let id) = key else { preconditionFailure("only leased fixtures are described") }
        let prepared = fixture.prepared
        let scenario = prepared.scenario
        do {
            var interception: String? = nil
            if scenario.expect.trustedRoots?.contains(BuiltinAuthority.interceptionRoot.rawValue) == true {
                interception = String(decoding: try store.authority(.interceptionRoot).certificate.pem, as: UTF8.self)
            }
            var identity: ClientIdentity? = nil
            if let client = prepared.clientCredential {
                identity = ClientIdentity(
                    certificatePEM: String(decoding: client.chainPEM, as: UTF8.self),
                    privateKeyPEM: String(decoding: try client.privateKey.pem, as: UTF8.self),
                    pkcs12: try PKCS12Export.archive(
                        certificate: client.certificate, key: client.privateKey,
                        chain: client.intermediates, friendlyName: "swift-tls-fixtures client"),
                    pkcs12Password: PKCS12Export.defaultPassword)
            }
            let expect = scenario.expect
            return FixtureDescription(
                id: id, scenario: scenario.name, group: scenario.group.rawValue, summary: scenario.summary,
                port: fixture.port,
                url: fixture.url, qualifiedURL: fixture.qualifiedURL, domainURLs: fixture.domainURLs,
                pins: fixture.pins,
                caPEM: String(decoding: prepared.caCertificate.pem, as: UTF8.self),
                chainPEM: String(decoding: fixture.chainPEM, as: UTF8.self), interceptionRootPEM: interception,
                clientIdentity: identity,
                expect: FixtureExpectations(
                    verify: expect.verify, ats: expect.ats, atsFix: expect.atsFix,
                    trustedRoots: expect.trustedRoots, pins: expect.pins, note: expect.note, refusal: expect.refusal,
                    android: expect.android),
                proxy: nil, session: session, ttl: ttl,
                expiresAt: options.leaseClock.now().addingTimeInterval(TimeInterval(ttl)))
        } catch {
            throw FleetError(.cannotDescribe, "cannot describe \(scenario.name): \(error)")
        }
    }

    // MARK: Leases

    private func schedule(_ id: String, generation: Int, after ttl: Int) -> Scheduled<Void> {
        options.leaseClock.eventLoop.scheduleTask(in: .seconds(Int64(ttl))) { [weak self] in
            self?.expire(id, generation: generation)
        }
    }

    /// The lease of `id` ended (unless renewed since): it leaves the table now and its fixture closes; `stop()` waits
    /// for that.
    private func expire(_ id: String, generation: Int) {
        let ended = table.withLockedValue { table -> FixtureServer? in
            guard let member = table.members[.leased(id)], member.lease?.generation == generation else { return nil }
            table.retire(id, member, reason: "its lease ended")
            table.members[.leased(id)] = nil
            table.generation += 1
            return member.state.fixture
        }
        guard let ended else { return }
        let loop = options.leaseClock.eventLoop
        let closed = loop.makeFutureWithTask { await ended.stop() }
        closing.withLockedValue { $0[id] = closed }
        closed.whenComplete { [weak self] _ in self?.closing.withLockedValue { $0[id] = nil } }
    }

    package func renewLease(id: String, ttl: Int?) throws(FleetError) -> FixtureDescription {
        let requested = try ttl.map { ttl throws(FleetError) in try Self.checkTTL(ttl) }
        let now = options.leaseClock.now()
        let renewed = table.withLockedValue { table -> FixtureDescription? in
            guard var member = table.members[.leased(id)], var lease = member.lease else { return nil }
            lease.expiry.cancel()
            lease.generation += 1
            lease.description.ttl = requested ?? lease.description.ttl
            lease.description.expiresAt = now.addingTimeInterval(TimeInterval(lease.description.ttl))
            lease.expiry = schedule(id, generation: lease.generation, after: lease.description.ttl)
            member.lease = lease
            table.members[.leased(id)] = member
            return lease.description
        }
        guard let renewed else { throw absence(of: id) }
        return renewed
    }

    package func leasedFixture(id: String) throws(FleetError) -> FixtureDescription {
        guard let lease = table.withLockedValue({ $0.members[.leased(id)]?.lease }) else { throw absence(of: id) }
        return lease.description
    }

    package func leasedFixtures(session: String?) -> [FixtureDescription] {
        table.withLockedValue { $0.members.values.compactMap(\.lease?.description) }
            .filter { session == nil || $0.session == session }
            .sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
    }

    // MARK: Stopping

    @discardableResult
    package func stopLeased(id: String) async -> Bool {
        let ended = table.withLockedValue { table -> Member? in
            guard let member = table.members[.leased(id)], member.lease != nil else { return nil }
            table.retire(id, member, reason: "it was deleted")
            table.members[.leased(id)] = nil
            table.generation += 1
            return member
        }
        guard let ended else { return false }
        await stop(ended)
        return true
    }

    package func stopSession(_ session: String) async -> Int {
        let ended = table.withLockedValue { table -> [Member] in
            let keys = table.members.filter { $0.value.lease?.description.session == session }.map(\.key)
            for key in keys {
                if case .leased(let id) = key, let member = table.members[key] {
                    table.retire(id, member, reason: "its session (\(session)) was stopped")
                }
            }
            table.generation += 1
            return keys.compactMap { table.members.removeValue(forKey: $0) }
        }
        await withTaskGroup(of: Void.self) { group in
            for member in ended { group.addTask { await self.stop(member) } }
        }
        return ended.count
    }

    private func stop(_ member: Member) async {
        member.lease?.expiry.cancel()
        await member.state.fixture?.stop()
    }
}
