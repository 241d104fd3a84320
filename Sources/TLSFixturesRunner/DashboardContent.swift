import Foundation
import NIOConcurrencyHelpers

/// What the dashboard serves: `/`, `/scenarios.json` and `/hosts` follow the runner (a scenario prepared in the
/// background moves from "preparing…" to serving), rendered again only when the runner's generation moves; the CA
/// downloads are made once.
final class DashboardContent: Sendable {
    struct Route: Sendable {
        var contentType: String
        var body: Data
        var filename: String?
    }

    private let runner: ScenarioRunner
    private let dashboardURL: String
    private let caSubject: String
    private let caPin: String
    private let downloads: [String: Route]
    private let rendered = NIOLockedValueBox<(generation: Int, routes: [String: Route])?>(nil)

    init(runner: ScenarioRunner, dashboardURL: String) throws {
        let ca = try runner.store.ca().certificate
        self.runner = runner
        self.dashboardURL = dashboardURL
        caSubject = ca.subject
        caPin = ca.spkiSHA256
        downloads = [
            "/ca.pem": Route(contentType: "application/x-pem-file", body: ca.pem, filename: "tls-fixtures-ca.pem"),
            // Safari on iOS offers to install a profile for exactly this type.
            "/ca.cer": Route(contentType: "application/x-x509-ca-cert", body: ca.der, filename: "tls-fixtures-ca.cer"),
            "/ca.p12": Route(contentType: "application/x-pkcs12", body: try ca.exported(as: .p12), filename: "tls-fixtures-ca.p12"),
        ]
    }

    func route(_ path: String) -> Route? {
        if let download = downloads[path] { return download }
        let generation = runner.generation
        if let current = rendered.withLockedValue({ $0 }), current.generation == generation { return current.routes[path] }
        let routes = render()
        rendered.withLockedValue { $0 = (generation, routes) }
        return routes[path]
    }

    private func render() -> [String: Route] {
        let document = runner.document(dashboard: dashboardURL)
        let html = DashboardPage.html(document: document, caSubject: caSubject, caPin: caPin)
        let scenarios = document.scenarios.compactMap { try? runner.catalog.scenario(named: $0.name) }
        return [
            "/": Route(contentType: "text/html; charset=utf-8", body: Data(html.utf8)),
            "/scenarios.json": Route(contentType: "application/json", body: (try? document.json()) ?? Data()),
            "/hosts": Route(contentType: "text/plain; charset=utf-8", body: Data(((try? HostsFile.lines(for: scenarios)) ?? "").utf8)),   // throws only for a bad --address
        ]
    }
}
