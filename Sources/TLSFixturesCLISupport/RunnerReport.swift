import Foundation
import TLSFixturesFleet
import TLSFixturesScenario

/// The startup table `serve` prints.
package enum RunnerReport {
    package static func text(_ document: CatalogDocument) -> String {
        var lines: [String] = []
        if let dashboard = document.dashboard { lines.append("Dashboard: \(dashboard)  (catalog as JSON: \(dashboard)scenarios.json)") }
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
        if let api = document.controlAPI {
            lines.append("")
            lines.append("Control API: \(api) (POST {\"scenario\": \"NAME\"} starts one on a free port; TLSFixturesClient in iOS tests)")
        }
        if let proxy = document.proxy {
            let names = ([Scenario.fixturesDomain] + (document.domains ?? [])).map { "NAME.\($0)" }.joined(separator: ", ")
            lines.append("Proxy: http://localhost:\(proxy.port) reaches \(names) on that fixture's port, "
                         + "with no /etc/hosts entry "
                         + "(curl --proxy http://localhost:\(proxy.port) https://ats-compliant.fixtures.test:PORT/)")
        }
        lines.append("")
        lines.append("Note: \(ATSTrap.note)")
        return lines.joined(separator: "\n")
    }
}
