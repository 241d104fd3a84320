import Foundation
import TLSFixturesWire
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesFleet
import TLSFixturesScenario

/// The dashboard's HTML: every scenario by group with its links, what is wrong, the expected outcomes and pins; CA
/// downloads; and a live column in which the visiting browser tries each fixture itself (as badssl.com's dashboard does).
/// Rendered on the server so it reads without JavaScript; the script only fills the live column.
package enum DashboardPage {
    package static func html(document: CatalogDocument, caSubject: String, caPin: String) -> String {
        let groups = ScenarioGroup.allCases.compactMap { group -> (ScenarioGroup, [CatalogEntry])? in
            let entries = document.scenarios.filter { $0.group == group }
            return entries.isEmpty ? nil : (group, entries)
        }
        var body = """
        <header>
          <h1>swift-tls-fixtures</h1>
          <p>Deliberately weak or broken TLS servers on this machine. \(escape(document.openSSL)).</p>
          <p class="trap"><strong>ATS tests:</strong> \(escape(ATSTrap.note)) Host lines: <a href="/hosts">/hosts</a>.</p>
          <p class="ca"><strong>Built-in CA</strong> (\(escape(caSubject))) — install it to make the fixtures trusted:
            <a href="/ca.cer" download="tls-fixtures-ca.cer">ca.cer</a> (DER: iOS device, macOS),
            <a href="/ca.pem" download="tls-fixtures-ca.pem">ca.pem</a> (simulator: <code>xcrun simctl keychain booted add-root-cert ca.pem</code>),
            <a href="/ca.p12" download="tls-fixtures-ca.p12">ca.p12</a> (password <code>\(PKCS12Export.defaultPassword)</code>).
            CA pin <code>sha256/\(escape(caPin))</code>. Machine-readable catalog: <a href="/scenarios.json">/scenarios.json</a>.</p>
          \(document.revocationResponder.map { "<p class=\"revocation\"><strong>Revocation:</strong> the OCSP responder and CRLs the revocation scenarios' leaves name: <a href=\"\(escape($0))/\">\(escape($0))</a> (POST /ocsp, GET /crl/NAME.crl). \(escape(RevocationNote.apple))</p>" } ?? "")
          <p class="legend">Other clients: where BoringSSL, GnuTLS, NSS, Java, Go, Node, URLSession or a strict RFC 5280 verifier part from OpenSSL's verdict (every client not named agrees with it), as measured by the client matrix (docs/CLIENTS.md, <code>make matrix</code>).</p>
          <p class="legend">Live: this browser tries every fixture now — <span class="loaded">loaded</span> means it accepted the connection, <span class="blocked">blocked</span> that it refused it.</p>
          <p id="live-untrusted" class="trap" hidden><strong>This browser does not trust the built-in CA</strong>, so it blocks every HTTPS fixture — the ones OpenSSL verifies too — and "blocked" below says nothing about the scenarios. Install <a href="/ca.cer" download="tls-fixtures-ca.cer">ca.cer</a> as a trusted root for this browser (Keychain Access on macOS; Settings ▸ Certificate Trust Settings on iOS; on Linux Chromium's NSS database: <code>certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n tls-fixtures -i ca.pem</code>), restart the browser and reload.</p>
        </header>
        <main>
        """
        for (group, entries) in groups {
            body += """

            <section id="group-\(escape(group.rawValue.replacingOccurrences(of: " ", with: "-")))">
            <h2>\(escape(group.rawValue.capitalized))</h2>
            <table>
            <thead><tr><th>Scenario</th><th>What is deliberately wrong</th><th>OpenSSL verify</th><th>Other clients that differ</th><th>ATS default</th><th>Smallest ATS fix</th><th>Leaf pin</th><th>Live</th></tr></thead>
            <tbody>
            """
            for entry in entries { body += row(entry) }
            body += "\n</tbody>\n</table>\n</section>"
        }
        body += "\n</main>"
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>swift-tls-fixtures dashboard</title>
        <style>\(style)</style>
        </head>
        <body data-live-done="false">
        \(body)
        <script>\(script)</script>
        </body>
        </html>
        """
    }

    private static func row(_ entry: CatalogEntry) -> String {
        let link: String
        if let url = entry.url, entry.status == .serving {
            link = "<a href=\"\(escape(url))\">\(escape(entry.name))</a><br><small>\(escape(entry.qualifiedURL ?? ""))</small>"
        } else {
            link = "\(escape(entry.name))<br><small>\(escape(entry.reason ?? "not running"))</small>"
        }
        let live: String
        if entry.status == .serving, let url = entry.url {
            // A control: HTTPS that OpenSSL verifies with the built-in CA. If every control is blocked, the browser does
            // not trust the CA (the script then says so), rather than every scenario being broken.
            let control = entry.expect.verify == "ok" && url.hasPrefix("https:") ? " data-control=\"true\"" : ""
            live = "<td class=\"live\" data-scenario=\"\(escape(entry.name))\" data-url=\"\(escape(url))\"\(control) data-live=\"pending\">…</td>"
        } else {
            live = "<td class=\"live\" data-scenario=\"\(escape(entry.name))\" data-live=\"unsupported\">unsupported</td>"
        }
        return """

        <tr id="scenario-\(escape(entry.name))" class="\(entry.status.rawValue)">
        <td>\(link)</td>
        <td>\(escape(entry.summary))\(entry.expect.note.map { "<br><small>\(escape($0))</small>" } ?? "")\(revocationCell(entry))</td>
        <td>\(escape(entry.expect.verify ?? "—"))</td>
        <td class="clients">\(clientsCell(entry.expect, notJudged: entry.clientMatrix))</td>
        <td class="ats-\(entry.expect.ats.rawValue.replacingOccurrences(of: "/", with: ""))">\(escape(entry.expect.ats.rawValue))</td>
        <td>\(escape(fixText(entry.expect.atsFix)))</td>
        <td>\(entry.pins?.leaf.map { "<code title=\"sha256/\(escape($0))\">\(escape(String($0.prefix(12))))…</code>" } ?? "—")</td>
        \(live)
        </tr>
        """
    }

    /// What a revocation scenario means (the URLs its leaf names, what clients find there, what Apple does), and suites
    /// of a scenario the linked OpenSSL cannot serve.
    static func revocationCell(_ entry: CatalogEntry) -> String {
        var parts: [String] = []
        if let sources = entry.revocationSources {
            let named = sources.ocsp.map { "OCSP \($0)" } + sources.crl.map { "CRL \($0)" } + (sources.mustStaple ? ["must-staple"] : [])
            parts.append("Leaf names: " + named.joined(separator: ", "))
        }
        if let servedBy = entry.servedBy { parts.append("Served by \(servedBy)") }
        if let missing = entry.unavailableCiphers {
            parts.append("Not served: \(missing.joined(separator: ", ")) (not in the linked OpenSSL)")
        }
        if let missing = entry.unavailableGroups {
            parts.append("Groups not offered: \(missing.joined(separator: ", ")) (not in the linked OpenSSL)")
        }
        if let revocation = entry.expect.revocation {
            parts.append("OCSP says \(revocation.ocsp); CRL check: \(revocation.crl); stapled: \(revocation.staple)")
            parts.append("Apple by default: \(revocation.apple)")
            parts.append("With a revocation policy: \(revocation.appleWithRevocationPolicy)")
        }
        return parts.map { "<br><small class=\"revocation\">\(escape($0))</small>" }.joined()
    }

    /// Where other TLS stacks part from OpenSSL's verdict (`expect.clients`), each group with its reason.
    static func clientsCell(_ expect: Expectations, notJudged: String?) -> String {
        if let notJudged { return "<span class=\"client-unjudged\">\(escape(notJudged))</span>" }
        guard let differences = expect.clients, !differences.isEmpty else { return "—" }
        return differences.map { difference in
            "<span class=\"client-\(difference.outcome.rawValue)\" data-outcome=\"\(difference.outcome.rawValue)\" title=\"\(escape(difference.because))\">"
                + "\(escape(difference.outcome.rawValue)): \(escape(difference.clients.map(\.rawValue).joined(separator: ", ")))</span>"
                + "<br><small>\(escape(difference.because))</small>"
        }.joined(separator: "<br>")
    }

    /// The catalog's last column in words.
    public static func fixText(_ fix: ATSFix?) -> String {
        // A user scenario need not state its fix; "—" would read as "none needed".
        guard let fix else { return "not stated (`tls-fixtures ats exception NAME` works it out)" }
        var text: String
        switch fix.kind {
        case .notNeeded: text = "—"
        case .exception:
            text = (fix.domainKeys ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
        case .arbitraryLoads: text = "NSAllowsArbitraryLoads = YES"
        case .impossible: text = "none: " + (fix.reason ?? "no ATS key admits it")
        }
        if fix.alsoRequires == "trust-override" { text += " + a trust override in your URLSessionDelegate" }
        else if let also = fix.alsoRequires { text += " + \(also)" }
        return text
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    private static let style = """
    body{font:14px/1.4 -apple-system,system-ui,sans-serif;margin:0 1.5em 3em;color:#222}
    h1{margin:.6em 0 .2em}h2{margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
    table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.35em .5em;border-bottom:1px solid #eee}
    th{background:#f6f6f6;font-weight:600}small{color:#666}code{font-size:12px}
    .trap{background:#fff4d6;padding:.5em .7em;border-left:4px solid #e0a800}
    p.revocation{background:#eef4ff;padding:.5em .7em;border-left:4px solid #3b6fd8}
    .ats-allow{color:#1a7f37}.ats-block{color:#b42318}
    td.live[data-live=loaded],.loaded{color:#1a7f37;font-weight:600}
    td.live[data-live=blocked],.blocked{color:#b42318;font-weight:600}
    tr.unsupported td{color:#999}
    td.clients{max-width:24em}td.clients span{font-weight:600}
    """

    /// One fetch per fixture, five at a time; a fixture that does not answer in 8 s counts as blocked. When every control
    /// (HTTPS that OpenSSL verifies) is blocked, the banner `#live-untrusted` says the browser does not trust the CA.
    private static let script = """
    (function(){
      var cells=Array.prototype.slice.call(document.querySelectorAll('td.live[data-url]'));
      var next=0,running=0,finished=0;
      function untrusted(){
        var controls=cells.filter(function(c){return c.getAttribute('data-control')==='true';});
        return controls.length>0&&controls.every(function(c){return c.getAttribute('data-live')==='blocked';});
      }
      function finish(){
        if(untrusted()){document.getElementById('live-untrusted').hidden=false;document.body.setAttribute('data-live-trust','untrusted');}
        document.body.setAttribute('data-live-done','true');
      }
      function done(){finished++;if(finished===cells.length){finish();}else{pump();}}
      function attempt(cell){
        var controller=('AbortController' in window)?new AbortController():null;
        var timer=setTimeout(function(){if(controller)controller.abort();},8000);
        fetch(cell.getAttribute('data-url'),{cache:'no-store',signal:controller?controller.signal:undefined})
          .then(function(r){return r.json();})
          .then(function(j){cell.setAttribute('data-live','loaded');cell.textContent='loaded'+(j&&j.tls?' · '+j.tls.protocol:'');})
          .catch(function(){cell.setAttribute('data-live','blocked');cell.textContent='blocked';})
          .then(function(){clearTimeout(timer);running--;done();});
      }
      function pump(){while(running<5&&next<cells.length){running++;attempt(cells[next++]);}}
      if(cells.length===0){document.body.setAttribute('data-live-done','true');}else{pump();}
    })();
    """
}
