import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesCLISupport

/// `serve`'s table promises a proxy `curl` line "that works as printed" (README). A new user's walk served
/// `expired pinned`: the line fell back to the first HTTPS scenario, `expired`, and curl refused it (exit 60). The
/// example is now a scenario curl accepts by its `fixtures.test` name, and when none serves, the line says it is
/// refused and why. The expected verdicts come from the scenario files (`expect.verify`, `expect.clients`).
@Suite("serve's proxy example: a scenario curl accepts, or a line that says it is refused")
struct RunnerReportTests {
    let catalog = ScenarioCatalog.builtIn

    func document(_ names: [String]) throws -> CatalogDocument {
        var document = CatalogDocument(dashboard: "http://localhost:12000/", scenarios: try names.enumerated().map {
            CatalogEntry(scenario: try catalog.scenario(named: $1), port: 12001 + $0, status: .serving)
        })
        document.proxy = ProxyEndpoint(port: 12000, domains: [Scenario.fixturesDomain])
        return document
    }

    func proxyLine(_ names: [String]) throws -> String {
        let text = RunnerReport.text(try document(names), caFile: "/store/ca/root.pem")
        return try #require(text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("curl --proxy ") }, "\(text)")
    }

    @Test("with ats-compliant served, the example is ats-compliant")
    func atsCompliantFirst() throws {
        let line = try proxyLine(["expired", "ats-compliant", "pinned"])
        #expect(line.hasSuffix("https://ats-compliant.fixtures.test:12002/"), "\(line)")
    }

    @Test("without it, the first scenario curl accepts, not the first served (expired, wrong-host)")
    func firstAccepted() throws {
        let line = try proxyLine(["expired", "wrong-host", "pinned"])
        #expect(line.hasSuffix("https://pinned.fixtures.test:12003/"), "\(line)")
        #expect(!line.contains("#"), "\(line)")
    }

    @Test("when curl refuses everything served, the line says so, with the scenario's own reason")
    func onlyRefused() throws {
        let expired = try catalog.scenario(named: "expired")
        let verify = try #require(expired.expect.verify)
        let line = try proxyLine(["expired"])
        #expect(line.contains("https://expired.fixtures.test:12001/   # refused, as expired should be: \(verify)"),
                "\(line)")
    }
}
