import Foundation
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

// What the front door reads: each a look at the fleet's state under its lock, nothing changed.
extension FixtureFleet: FleetQueries, FixtureLookup {
    /// The catalog's fixtures in catalog order, each with its state.
    package var catalogStates: [(scenario: Scenario, state: FixtureState)] {
        let members = state.withLockedValue { $0.members }
        return catalog.scenarios.compactMap { scenario in members[.catalog(scenario.name)].map { (scenario, $0.state) }
        }
    }

    package var generation: Int { state.withLockedValue { $0.generation } }

    package var isStopping: Bool { state.withLockedValue { $0.stopping } }

    package var fixtureDomains: [String] { [Scenario.fixturesDomain] + options.domains }

    package var proxyHops: ProxyHops { options.proxyHops }

    /// The records of `key`'s connections after `cursor`, as `FixtureServer.connections(after:wait:)` gives them:
    /// once one has settled, or when `wait` has passed. A leased fixture by its id, a catalog one by its name.
    package func connections(of key: Key, after cursor: ConnectionCursor, wait: Duration) async throws(FleetError)
        -> ConnectionList
    {
        let (member, stopped) = state.withLockedValue { state -> (FleetState.Member?, StoppedFixtures.Entry?) in
            guard case .leased(let id) = key, state.members[key] == nil else { return (state.members[key], nil) }
            return (nil, state.stopped[id])
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
        .noSuchFixture(id, state.withLockedValue { $0.stopped.whereabouts(of: id) })
    }

    /// Whether `id` is shaped as the ids this fleet gives leased fixtures (20 lowercase hexadecimal digits).
    static func isFixtureID(_ id: String) -> Bool {
        id.utf8.count == 20 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Why a catalog fixture in `state` has no records here.
    static func why(_ state: FixtureState) -> String {
        switch state {
        case .preparing(let making, _): return preparingReason(making: making)
        case .awaitingHelper: return awaitingHelperReason
        case .serving: return "it serves"
        case .servedByHelper: return "the legacy helper serves it, in a process of its own, which keeps no records"
        // The reason says "unsupported by the linked OpenSSL …" itself: not "unsupported: unsupported by …".
        case .unsupported(let reason): return reason.hasPrefix("unsupported") ? reason : "unsupported: \(reason)"
        case .failed(let reason): return "failed: \(reason)"
        case .stopped: return "stopped"
        }
    }

    package func servedFixture(onPort port: Int) -> ServedFixture? {
        let fixture = state.withLockedValue { state in
            state.members.values.lazy.compactMap(\.state.fixture).first { $0.port == port }
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
            case .awaitingHelper:
                return CatalogEntry(
                    scenario: scenario, port: port, host: FixtureServer.urlHost(listeningOn: options.bindAddresses),
                    status: .preparing, reason: Self.awaitingHelperReason)
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
