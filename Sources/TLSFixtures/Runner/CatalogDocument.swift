import Foundation

/// One scenario as the outside world sees it: `/scenarios.json`, `scenarios list --json`, `serve --json`.
public struct CatalogEntry: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        case serving, unsupported, listed
        /// Its keys are being made in the background (a first run); served when ready.
        case preparing
        /// Made in the background, then could not be served: `reason` says why.
        case failed
    }

    public var name: String
    public var group: ScenarioGroup
    public var summary: String
    public var port: Int?
    /// `https://localhost:PORT/`: fine for pinning tests.
    public var url: String?
    /// `https://NAME.fixtures.test:PORT/`: what ATS tests must use (localhost and loopback IPs are exempt from ATS).
    public var qualifiedURL: String?
    /// `https://NAME.DOMAIN:PORT/` for each `serve --domain`, when serving.
    public var domainURLs: [String]?
    public var status: Status
    public var reason: String?
    public var expect: Expectations
    /// Present once the scenario's certificates exist (serving).
    public var pins: FixturePins?
    public var tls: TLSPlan?
    public var certificate: CertificatePlan?
    /// What each client of the client matrix is expected to make of it for host `localhost`: `expect.clients` where
    /// it names the client, else `expect.verify`'s verdict. Nil without TLS.
    public var clientOutcomes: [String: ClientOutcome]?

    public init(scenario: Scenario, port: Int?, host: String = "localhost", status: Status, reason: String? = nil, pins: FixturePins? = nil) {
        name = scenario.name
        group = scenario.group
        summary = scenario.summary
        self.port = port
        let scheme = scenario.isCleartext ? "http" : "https"
        url = port.map { "\(scheme)://\(host):\($0)/" }
        qualifiedURL = port.map { "\(scheme)://\(scenario.qualifiedHost):\($0)/" }
        self.status = status
        self.reason = reason
        expect = scenario.expect
        self.pins = pins
        tls = scenario.tls
        certificate = scenario.certificate
        if scenario.expect.defaultClientOutcome != nil {
            clientOutcomes = Dictionary(uniqueKeysWithValues: MatrixClient.allCases.compactMap { client in
                scenario.expect.outcome(for: client).map { (client.rawValue, $0.outcome) }
            })
        }
    }
}

/// A client of the client matrix, as `/scenarios.json` lists them (docs/CLIENTS.md has what each one did).
public struct MatrixClientEntry: Codable, Sendable, Equatable {
    public var id: String
    public var stack: String
    public var summary: String

    public init(_ client: MatrixClient) { id = client.rawValue; stack = client.stack; summary = client.summary }
}

/// The whole catalog with where each scenario lives.
public struct CatalogDocument: Codable, Sendable, Equatable {
    public var generator = "swift-tls-fixtures"
    public var openSSL = LinkedOpenSSL.versionText
    public var dashboard: String?
    /// Said once, where every reader of this document sees it.
    public var atsNote = ATSTrap.note
    /// `serve --domain`: leaves also name `NAME.DOMAIN`, and the proxy resolves those names.
    public var domains: [String]?
    /// The control API (`POST` here starts a fixture on a free port; see the README's "Testing an iOS app").
    public var controlAPI: String?
    /// The runner's HTTP proxy: `CONNECT NAME.fixtures.test:PORT` reaches the fixture on PORT, no /etc/hosts needed.
    public var proxy: ProxyEndpoint?
    /// The clients `expect.clients` and `clientOutcomes` name, in the client matrix's order.
    public var clients = MatrixClient.allCases.map(MatrixClientEntry.init)
    public var scenarios: [CatalogEntry]

    public init(dashboard: String?, scenarios: [CatalogEntry]) {
        self.dashboard = dashboard
        self.scenarios = scenarios
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

/// The localhost trap, in one sentence used everywhere a user could fall into it.
public enum ATSTrap {
    public static let note = "ATS does not apply to localhost, other unqualified names, .local names or loopback and local IP addresses (before iOS 17 every IP literal): an ATS test against https://localhost:PORT or https://127.0.0.1:PORT passes whatever the server does. Test ATS against https://NAME.fixtures.test:PORT/ with the names mapped to 127.0.0.1 (`tls-fixtures hosts`)."
}

/// `/etc/hosts` lines that make every `NAME.fixtures.test` resolve to loopback.
public enum HostsFile {
    public static func lines(for scenarios: [Scenario], address: String = "127.0.0.1") -> String {
        var text = "# swift-tls-fixtures: ATS tests must use these names (localhost is exempt from ATS)\n"
        for scenario in scenarios { text += "\(address)\t\(scenario.qualifiedHost)\n" }
        return text
    }
}
