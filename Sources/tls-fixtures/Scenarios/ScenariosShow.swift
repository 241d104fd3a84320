import ArgumentParser
import Foundation
import TLSFixtures

struct ScenariosShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "One scenario: its settings, certificate plan and expected outcomes."
    )

    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "Scenario name.")
    var name: String

    func run() async throws {
        let catalog = try source.catalog()
        let scenario = try catalog.scenario(named: name)
        let entry = CatalogEntry(scenario: scenario, port: catalog.port(of: scenario), status: .listed)
        if output.json { try Output.json(entry); return }
        print("\(scenario.name) (\(scenario.group.rawValue)) — \(scenario.summary)")
        print("Port:           \(entry.port.map(String.init) ?? "-")   \(entry.url ?? "")   \(entry.qualifiedURL ?? "")")
        if let tls = scenario.tls {
            print("Protocols:      \(tls.minVersion)–\(tls.maxVersion)")
            print("Ciphers:        \(tls.ciphers)" + (tls.tls13Suites.map { "; TLS 1.3: \($0)" } ?? ""))
            if let level = tls.securityLevel { print("Security level: \(level)") }
            if tls.dh != .none { print("DH:             \(tls.dh)") }
            if tls.clientAuth != .none { print("Client auth:    \(tls.clientAuth.rawValue)") }
            if tls.sendChain != .full { print("Chain sent:     \(tls.sendChain.rawValue)") }
            if tls.stapleOCSP { print("Staples:        the issuer's OCSP answer about the leaf") }
            if !tls.serverPreference { print("Suite order:    the client's") }
        } else {
            print("Transport:      plain HTTP")
        }
        if let certificate = scenario.certificate {
            print("Certificate:    \(certificate.key), signed with \(certificate.digest.rawValue) by \(certificate.issuer)")
            let profile = try certificate.profile(scenarioName: scenario.name)
            let names = profile.subjectAltNames.map { $0.map(\.description) } ?? []
            print("SANs:           \(profile.subjectAltNames == nil ? "(none)" : names.count > 6 ? names.prefix(6).joined(separator: ", ") + ", … (\(names.count))" : names.joined(separator: ", "))")
            print("Validity:       \(profile.validity.notBefore) → \(profile.validity.notAfter) days from issue")
            if let plan = certificate.revocation, let sources = profile.statusSources {
                let named = [sources.ocspURL.map { "OCSP \($0)" }, sources.crlURL.map { "CRL \($0)" },
                             sources.mustStaple ? "TLS Feature status_request" : nil].compactMap { $0 }
                print("Revocation:     \(plan.status.rawValue) per its issuer; names \(named.joined(separator: ", ")) (as under serve)")
            }
        }
        print("Expected:       OpenSSL verify (host localhost): \(scenario.expect.verify ?? "n/a")")
        print("                ATS default: \(scenario.expect.ats.rawValue); smallest fix: \(DashboardPage.fixText(scenario.expect.atsFix))")
        if let pins = scenario.expect.pins {
            print("                pins: leaf SPKI \(pins.leafSPKI ? "match" : "fail"), CA SPKI \(pins.caSPKI ? "match" : "fail"), certificate \(pins.certificate ? "match" : "fail")")
        }
        if let revocation = scenario.expect.revocation {
            print("                openssl ocsp: \(revocation.ocsp); verify -crl_check: \(revocation.crl); stapled: \(revocation.staple)")
            print("                Apple by default: \(revocation.apple)")
            print("                Apple with a revocation policy: \(revocation.appleWithRevocationPolicy)")
        }
        for line in clientLines(scenario.expect) { print(line) }
        if let note = scenario.expect.note { print("Note:           \(note)") }
    }

    /// The per-client outcomes the scenario table (docs/scenarios.md), the dashboard and `--json` give: what every
    /// client of the matrix does, then each one that differs and why.
    private func clientLines(_ expect: Expectations) -> [String] {
        guard let standard = expect.defaultClientOutcome else { return [] }
        let differing = expect.clients ?? []
        let others = MatrixClient.allCases.filter { client in !differing.contains { $0.clients.contains(client) } }
        var lines = ["Clients:        \(standard.rawValue): \(others.map(\.rawValue).joined(separator: ", "))"
                     + (differing.isEmpty ? " (every client of the matrix, as OpenSSL verify says)" : " (as OpenSSL verify says)")]
        for difference in differing {
            lines.append("                \(difference.outcome.rawValue): \(difference.clients.map(\.rawValue).joined(separator: ", ")) — \(difference.because)")
        }
        return lines
    }
}
