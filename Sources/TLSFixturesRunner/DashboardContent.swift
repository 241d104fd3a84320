import Foundation
import NIOConcurrencyHelpers
import TLSFixturesFleet
import TLSFixturesOpenSSL
import TLSFixturesWire

/// What the dashboard serves: `/live.json` is made for each request (the page asks it every few seconds); `/`,
/// `/scenarios.json` and `/hosts` follow the fleet (a scenario prepared in the
/// background moves from "preparing…" to serving), rendered again only when the fleet's generation or the front door's
/// addresses move; the CA downloads are made once.
final class DashboardContent: Sendable {
    struct Route: Sendable {
        var contentType: String
        var body: Data
        var filename: String?
    }

    private let fleet: any FleetQueries
    private let addresses: FrontDoorAddresses.Box
    private let caSubject: String
    private let caPin: String
    private let downloads: [String: Route]
    private let rendered = NIOLockedValueBox<
        (generation: Int, addresses: FrontDoorAddresses, routes: [String: Route])?
    >(nil)

    init(fleet: any FleetQueries, ca: Certificate, addresses: FrontDoorAddresses.Box) throws {
        self.fleet = fleet
        self.addresses = addresses
        caSubject = ca.subject
        caPin = ca.spkiSHA256
        downloads = [
            "/ca.pem": Route(contentType: "application/x-pem-file", body: ca.pem, filename: "tls-fixtures-ca.pem"),
            // Safari on iOS offers to install a profile for exactly this type.
            "/ca.cer": Route(contentType: "application/x-x509-ca-cert", body: ca.der, filename: "tls-fixtures-ca.cer"),
            "/ca.p12": Route(
                contentType: "application/x-pkcs12", body: try ca.exported(as: .p12), filename: "tls-fixtures-ca.p12"),
        ]
    }

    func route(_ path: String) -> Route? {
        if let download = downloads[path] { return download }
        // Records change without the fleet's generation moving: made for each request, from a bounded snapshot.
        if path == DashboardLive.path {
            let live = DashboardLive(document: fleet.document(), connections: fleet.recentConnections(
                last: DashboardLive.recordsPerScenario))
            return Route(contentType: "application/json", body: (try? live.json()) ?? Data())
        }
        let generation = fleet.generation
        let current = addresses.value
        if let cached = rendered.withLockedValue({ $0 }), cached.generation == generation, cached.addresses == current {
            return cached.routes[path]
        }
        let routes = render(current)
        rendered.withLockedValue { $0 = (generation, current, routes) }
        return routes[path]
    }

    private func render(_ addresses: FrontDoorAddresses) -> [String: Route] {
        let document = addresses.decorate(fleet.document())
        let html = DashboardPage.html(document: document, caSubject: caSubject, caPin: caPin)
        let scenarios = document.scenarios.compactMap { try? fleet.catalog.scenario(named: $0.name) }
        return [
            "/": Route(contentType: "text/html; charset=utf-8", body: Data(html.utf8)),
            "/scenarios.json": Route(contentType: "application/json", body: (try? document.json()) ?? Data()),
            // Throws only for an address that is not an IP address, and this one is.
            "/hosts": Route(
                contentType: "text/plain; charset=utf-8",
                body: Data(((try? HostsFile.lines(for: scenarios)) ?? "").utf8)),
        ]
    }
}

/// `/live.json`: what the dashboard's script asks every few seconds. Each catalog scenario's state (a row still being
/// prepared is tried once it serves) and what its fixture saw of its last connections, each in the words of
/// `ConnectionRecord.summary`, so the page shows what the server saw beside what the browser did without a second
/// summariser in script.
///
/// ```json
/// {"scenarios": {"expired": {"status": "serving", "url": "https://localhost:9831/", "latestID": 2,
///   "recent": [{"id": 2, "acceptedAt": "2026-05-01T10:00:00Z", "peer": "127.0.0.1:52114",
///               "summary": "the client sent certificate_unknown(46) after the server's certificate: …"}]}}}
/// ```
package struct DashboardLive: Codable, Sendable, Equatable {
    package static let path = "/live.json"
    /// The page shows this many of each scenario's last connections; the answer stays small whatever the traffic.
    package static let recordsPerScenario = 3

    package struct Scenario: Codable, Sendable, Equatable {
        package var status: String
        package var reason: String?
        /// Where the browser tries it, once it serves.
        package var url: String?
        /// The id of the fixture's latest connection; absent before the first (and when it serves elsewhere).
        package var latestID: Int?
        package var recent: [Seen]?
    }

    /// One connection as the dashboard shows it.
    package struct Seen: Codable, Sendable, Equatable {
        package var id: Int
        package var acceptedAt: Date
        package var peer: String
        /// The CONNECT authority, when the runner's proxy carried it.
        package var proxy: String?
        /// `ConnectionRecord.summary`.
        package var summary: String
        /// Still open, or in its handshake: the line may change.
        package var settled: Bool

        package init(_ record: ConnectionRecord) {
            id = record.id; acceptedAt = record.acceptedAt; peer = record.peer; proxy = record.proxy?.authority
            summary = record.summary; settled = record.isSettled
        }
    }

    package var scenarios: [String: Scenario]

    package init(document: CatalogDocument, connections: [String: ConnectionList]) {
        var scenarios: [String: Scenario] = [:]
        for entry in document.scenarios {
            let list = connections[entry.name]
            // Newest first: the line a person looks for is the one their last load made.
            let recent = list.map { $0.connections.suffix(Self.recordsPerScenario).reversed().map(Seen.init) }
            scenarios[entry.name] = Scenario(
                status: entry.status.rawValue, reason: entry.reason, url: entry.status == .serving ? entry.url : nil,
                latestID: list?.latestID, recent: recent)
        }
        self.scenarios = scenarios
    }

    package func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
