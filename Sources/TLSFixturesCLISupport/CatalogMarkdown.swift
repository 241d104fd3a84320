import TLSFixturesRunner
import TLSFixturesScenario

/// The catalog as a Markdown table (docs/scenarios.md's, generated so it cannot drift from `Scenarios/`); its link is
/// relative to docs/.
package enum CatalogMarkdown {
    package static func table(_ catalog: ScenarioCatalog) -> String {
        var lines = ["| port | scenario | what is deliberately different | OpenSSL verify (host localhost) "
                         + "| other clients that differ ([matrix](CLIENTS.md)) | ATS default | smallest ATS fix |",
                     "| --- | --- | --- | --- | --- | --- | --- |"]
        for scenario in catalog.scenarios {
            let cells = [scenario.port.map(String.init) ?? "—", "`\(scenario.name)`", scenario.summary,
                         scenario.expect.verify ?? "—", scenario.clientDifferencesSummary, scenario.expect.ats.rawValue,
                         DashboardPage.fixText(scenario.expect.atsFix)]
            lines.append("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
