import Foundation
import TLSFixturesFleet
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesWire

// The control API's bodies to the fleet's values and back: the fleet takes a `LeaseRequest` and gives a
// `LeasedFixture`; the front door reads the one from a `StartFixtureRequest` and writes the other as a
// `FixtureDescription`, and names the part of a request the fleet refused as its JSON field.

extension LeaseRequest {
    /// `body` in the fleet's terms: an inline scenario decoded by the scenario files' own strict decoder, refused with
    /// the field at fault (`scenario.tls.minVersion`) as its file would be.
    init(_ body: StartFixtureRequest) throws(ControlAPIFailure) {
        switch body.scenario {
        case .name(let name): self.init(scenario: .catalog(name), ttl: body.ttl, session: body.session)
        case .inline(let json): self.init(scenario: .inline(try Self.decodeInline(json)), ttl: body.ttl, session: body.session)
        }
    }

    /// An inline scenario, read by the scenario files' own decoder; a refusal's field is its key inside `scenario`.
    private static func decodeInline(_ json: JSONValue) throws(ControlAPIFailure) -> Scenario {
        do {
            return try ScenarioCatalog.decode(try JSONEncoder().encode(json), source: "scenario")
        } catch let error as ScenarioError where error.code == .malformed {
            let problem = error.problem ?? error.reason
            // "at tls.minVersion: …" names the key; the field is that key inside `scenario`.
            if problem.hasPrefix("at "), let colon = problem.range(of: ": ") {
                let path = String(problem[problem.index(problem.startIndex, offsetBy: 3)..<colon.lowerBound])
                throw ControlAPIFailure(400, "scenario.\(path): \(problem[colon.upperBound...])", field: "scenario.\(path)")
            }
            throw ControlAPIFailure(400, "scenario: \(problem)", field: "scenario")
        } catch {
            throw ControlAPIFailure(400, "scenario: \(error)", field: "scenario")
        }
    }
}

extension FleetError.Part {
    /// The JSON field of `StartFixtureRequest` this part is.
    var field: String {
        switch self {
        case .ttl: return "ttl"
        case .session: return "session"
        case .scenario: return "scenario"
        case .scenarioName: return "scenario.name"
        case .keyName: return "scenario.certificate.keyName"
        case .key: return "scenario.certificate.key"
        }
    }
}

extension FixtureDescription {
    /// What a client of the control API is told of `fixture`: where it listens, its pins and PEMs, the client identity
    /// it demands, its expectations, its lease, and the runner's `proxy`.
    init(_ fixture: LeasedFixture, proxy: ProxyEndpoint?) throws {
        let scenario = fixture.scenario
        var identity: ClientIdentity? = nil
        if let client = fixture.clientCredential {
            identity = ClientIdentity(
                certificatePEM: String(decoding: client.chainPEM, as: UTF8.self),
                privateKeyPEM: String(decoding: try client.privateKey.pem, as: UTF8.self),
                pkcs12: try PKCS12Export.archive(
                    certificate: client.certificate, key: client.privateKey,
                    chain: client.intermediates, friendlyName: "swift-tls-fixtures client"),
                pkcs12Password: PKCS12Export.defaultPassword)
        }
        let expect = scenario.expect
        self.init(
            id: fixture.id, scenario: scenario.name, group: scenario.group.rawValue, summary: scenario.summary,
            port: fixture.port, url: fixture.url, qualifiedURL: fixture.qualifiedURL, domainURLs: fixture.domainURLs,
            pins: fixture.pins, caPEM: String(decoding: fixture.caCertificate.pem, as: UTF8.self),
            chainPEM: String(decoding: Certificate.pem(fixture.chain), as: UTF8.self),
            interceptionRootPEM: fixture.interceptionRoot.map { String(decoding: $0.pem, as: UTF8.self) },
            clientIdentity: identity,
            expect: FixtureExpectations(
                verify: expect.verify, ats: expect.ats, atsFix: expect.atsFix, trustedRoots: expect.trustedRoots,
                pins: expect.pins, note: expect.note, refusal: expect.refusal, android: expect.android),
            proxy: proxy, session: fixture.session, ttl: fixture.ttl, expiresAt: fixture.expiresAt)
    }
}

extension RunnerHealth {
    /// Ready (see `RunnerHealth`) when every scenario asked about (nil: every catalog fixture) has left `preparing`;
    /// asked about by name, each must serve. Read from the catalog document, so it says what the dashboard says.
    init(_ fleet: some FleetQueries, asking asked: [String]?) {
        let stopping = fleet.isStopping
        let entries = fleet.document().scenarios
        let scenarios = entries.map {
            RunnerHealth.Scenario(name: $0.name, status: $0.status.rawValue, port: $0.port, reason: $0.reason)
        }
        let byName = Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var waiting: [String] = []
        var unavailable: [RunnerHealth.Unavailable] = []
        for name in asked ?? entries.map(\.name) {
            guard let entry = byName[name] else {
                let reason =
                    fleet.catalog.names.contains(name)
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
        self.init(
            status: status, summary: summary, waitingFor: waiting, unavailable: unavailable, scenarios: scenarios)
    }
}
