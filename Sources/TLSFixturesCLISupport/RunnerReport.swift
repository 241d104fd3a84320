import Foundation
import TLSFixturesFleet
import TLSFixturesScenario

/// What `serve` prints: the dashboard's line first, the moment it answers, then the table once the quick scenarios
/// serve.
package enum RunnerReport {
    /// `serve`'s first line.
    package static func dashboardLine(_ dashboard: URL) -> String {
        "Dashboard: \(dashboard.absoluteString)  (catalog as JSON: \(dashboard.absoluteString)scenarios.json)"
    }

    /// The table of what serves, and where the CA, the control API and the proxy are. `caFile`: the store's CA
    /// certificate; `storeArgument`: ` --dir PATH` when the store is not the default one, for the commands printed.
    package static func text(_ document: CatalogDocument, caFile: String, storeArgument: String = "") -> String {
        var lines: [String] = []
        let serving = document.scenarios.filter { $0.status == .serving }
        let nameWidth = max(8, serving.map(\.name.count).max() ?? 8)
        lines.append("")
        lines.append("PORT   " + "SCENARIO".padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  ATS    WHAT IS DELIBERATELY WRONG")
        for entry in serving {
            let port = entry.port.map(String.init) ?? "-"
            lines.append(port.padding(toLength: 7, withPad: " ", startingAt: 0)
                         + entry.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  "
                         + entry.expect.ats.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0) + "  " + entry.summary)
            lines.append(String(repeating: " ", count: 7) + ([entry.url ?? "", entry.qualifiedURL ?? ""] + (entry.domainURLs ?? [])).joined(separator: "   "))
            if let servedBy = entry.servedBy { lines.append(String(repeating: " ", count: 7) + "served by \(servedBy)") }
        }
        let preparing = document.scenarios.filter { $0.status == .preparing }
        if !preparing.isEmpty {
            lines.append("")
            lines.append("Preparing in the background, served when ready (first run only): "
                         + preparing.map { "\($0.name) (\($0.port.map(String.init) ?? "-"))" }.joined(separator: ", "))
        }
        let unsupported = document.scenarios.filter { $0.status == .unsupported || $0.status == .failed }
        if !unsupported.isEmpty {
            lines.append("")
            lines.append("Not served (\(unsupported.count)):")
            for entry in unsupported { lines.append("  \(entry.name): \(entry.reason ?? "unsupported")") }
        }
        if let responder = document.revocationResponder {
            lines.append("")
            lines.append("Revocation: the OCSP responder and CRLs the revocation scenarios' leaves name are at \(responder) "
                         + "(POST /ocsp, GET /crl/NAME.crl).")
            lines.append("Apple: \(RevocationNote.apple)")
        }
        let ca = ShellWord.quoted(caFile)
        lines.append("")
        lines.append("CA: \(caFile) (every chain here leads to it: curl --cacert \(ca); "
                     + "`tls-fixtures ca show\(storeArgument)` for the ways to trust it)")
        if let api = document.controlAPI {
            // A command that works as printed: the API refuses a POST without the JSON content type (415), as a web
            // page could send it.
            lines.append("Control API: \(api) (start NAME on a free port: curl -H 'Content-Type: application/json' "
                         + "-d '{\"scenario\": \"NAME\"}' \(api); TLSFixturesClient in iOS tests)")
            if let dashboard = document.dashboard {
                lines.append("Ready: \(dashboard)api/health answers 200 once no scenario is preparing "
                             + "(`tls-fixtures wait \(dashboard)` waits for it)")
            }
        }
        if let proxy = document.proxy {
            let names = ([Scenario.fixturesDomain] + (document.domains ?? [])).map { "NAME.\($0)" }.joined(separator: ", ")
            var line = "Proxy: http://localhost:\(proxy.port) reaches \(names) on that fixture's port, "
                + "with no /etc/hosts entry"
            // A command that works as printed: a scenario that serves now, on its own port, which curl accepts when
            // it verifies against the CA, by the name the proxy reaches (the baseline names; `wrong-host` names its
            // own). When only scenarios curl refuses serve (`serve expired`), the line says so rather than fail.
            let ownPort = serving.filter { $0.url?.hasPrefix("https://") == true && $0.servedBy == nil }
            let accepted = ownPort.first { $0.name == "ats-compliant" } ?? ownPort.first(where: curlAccepts)
            if let example = accepted ?? ownPort.first, let url = example.qualifiedURL {
                line += ":\n       curl --proxy http://localhost:\(proxy.port) --cacert \(ca) \(url)"
                if accepted == nil {
                    line += "   # refused, as \(example.name) should be: \(example.expect.verify ?? "see its summary")"
                }
            }
            lines.append(line)
        }
        lines.append("")
        lines.append("Note: \(ATSTrap.note)")
        return lines.joined(separator: "\n")
    }

    /// Whether curl, verifying against the CA, accepts `entry` by `NAME.fixtures.test`: its expected verdict is to
    /// accept and its leaf carries the baseline names.
    static func curlAccepts(_ entry: CatalogEntry) -> Bool {
        entry.expect.outcome(for: .curl)?.outcome == .accept && entry.certificate?.hosts == nil
    }
}
