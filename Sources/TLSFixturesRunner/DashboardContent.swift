import Foundation
import NIOConcurrencyHelpers
import TLSFixturesFleet
import TLSFixturesOpenSSL

/// What the dashboard serves: `/`, `/scenarios.json` and `/hosts` follow the fleet (a scenario prepared in the
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
