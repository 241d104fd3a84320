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
          <p class="legend">Android: what an Android app does where it differs from iOS (OkHttp on the platform's
            Conscrypt, target SDK 35, a release build, the kit's CA bundled as <code>@raw/tls_fixtures_ca</code> for
            <code>fixtures.test</code>: docs/android.md); — where it does what ATS does. <code>tls-fixtures nsc
            check</code> judges your own Network Security Config.</p>
          <p class="legend">Live: this browser tries every fixture now — <span class="loaded">loaded</span> means it accepted the connection, <span class="blocked">blocked</span> that it refused it — and each result is marked <span class="mark-expected">expected</span> or <span class="mark-unexpected">unexpected</span> against what a browser that verifies certificates does (Chromium trusting the built-in CA, presenting no client certificate; the client matrix measured it). A row still being prepared says <em>preparing</em> and is tried once it serves.</p>
          <p id="live-not-verifying" class="alarm" hidden><strong>This browser is not verifying certificates.</strong> It loaded <span id="live-not-verifying-names"></span>, which no verifying client may accept (OpenSSL, BoringSSL, NSS, GnuTLS, Java, Go and URLSession all refuse them). It was started with <code>--ignore-certificate-errors</code>, someone clicked through a warning, or a TLS-intercepting proxy or antivirus answers for the fixtures: its results here say nothing about what your app will see.</p>
          <p id="live-untrusted" class="trap" hidden><strong>This browser does not trust the built-in CA</strong>, so it blocks every HTTPS fixture — the ones OpenSSL verifies too — and "blocked" below says nothing about the scenarios. Install <a href="/ca.cer" download="tls-fixtures-ca.cer">ca.cer</a> as a trusted root for this browser (Keychain Access on macOS; Settings ▸ Certificate Trust Settings on iOS; on Linux Chromium's NSS database: <code>certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n tls-fixtures -i ca.pem</code>), restart the browser and reload.</p>
        </header>
        <main>
        """
        for (group, entries) in groups {
            body += """

            <section id="group-\(escape(group.rawValue.replacingOccurrences(of: " ", with: "-")))">
            <h2>\(escape(group.rawValue.capitalized))</h2>
            <table>
            <thead><tr><th>Scenario</th><th>What is deliberately wrong</th><th>OpenSSL verify</th>
            <th>Other clients that differ</th><th>ATS default</th><th>Smallest ATS fix</th><th>Android</th>
            <th>Leaf pin</th><th>Live</th></tr></thead>
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
        let live = liveCell(entry)
        return """

        <tr id="scenario-\(escape(entry.name))" class="\(entry.status.rawValue)">
        <td>\(link)</td>
        <td>\(escape(entry.summary))\(entry.expect.note.map { "<br><small>\(escape($0))</small>" } ?? "")\(revocationCell(entry))</td>
        <td>\(escape(entry.expect.verify ?? "—"))</td>
        <td class="clients">\(clientsCell(entry.expect, notJudged: entry.clientMatrix))</td>
        <td class="ats-\(entry.expect.ats.rawValue.replacingOccurrences(of: "/", with: ""))">\(escape(entry.expect.ats.rawValue))</td>
        <td>\(escape(fixText(entry.expect.atsFix)))</td>
        <td class="android">\(androidCell(entry.expect.android))</td>
        <td class="pin">\(entry.pins?.leaf.map { "<code>sha256/\(escape($0))</code>" } ?? "—")</td>
        \(live)
        </tr>
        """
    }

    /// The live column's cell: what the script needs to try the fixture (its URL once it serves) and to judge the
    /// browser's result (`CatalogEntry.browser`, as data attributes), or why it cannot be tried.
    static func liveCell(_ entry: CatalogEntry) -> String {
        var attributes = "class=\"live\" data-scenario=\"\(escape(entry.name))\""
        if let browser = entry.browser {
            attributes += " data-expect=\"\(browser.outcome.rawValue)\" data-expect-why=\"\(escape(browser.because))\""
            if browser.noVerifyingClientAccepts { attributes += " data-no-verifier-accepts=\"true\"" }
        }
        switch entry.status {
        case .serving:
            guard let url = entry.url else { break }
            // A control: HTTPS that OpenSSL verifies with the built-in CA. If every control is blocked, the browser does
            // not trust the CA (the script then says so), rather than every scenario being broken.
            if entry.expect.verify == "ok" && url.hasPrefix("https:") && entry.browser?.outcome == .accept {
                attributes += " data-control=\"true\""
            }
            return "<td \(attributes) data-url=\"\(escape(url))\" data-live=\"pending\">…</td>"
        case .preparing:
            // The script asks /live.json until it serves, then tries it.
            let why = entry.reason.map { " title=\"\(escape($0))\"" } ?? ""
            return "<td \(attributes) data-live=\"preparing\"\(why)>preparing…</td>"
        case .unsupported, .failed, .stopped, .listed:
            break
        }
        let status = entry.status == .listed ? "not running" : entry.status.rawValue
        return "<td \(attributes) data-live=\"\(escape(entry.status.rawValue))\">\(escape(status))</td>"
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

    /// What an Android app does where it differs from iOS (`expect.android`): the outcome, where it stops, why, and
    /// the fix; `—` where Android does what ATS does.
    static func androidCell(_ android: AndroidExpectation?) -> String {
        guard let android else { return "—" }
        var text = "<span class=\"android-\(android.outcome.rawValue)\" data-outcome=\"\(android.outcome.rawValue)\">"
            + "\(android.outcome.rawValue)</span>"
        if let step = android.step { text += " <small>\(escape(step.description))</small>" }
        text += "<br><small>\(escape(android.because))</small>"
        if let fix = android.fix { text += "<br><small class=\"android-fix\">fix: \(escape(fix))</small>" }
        return text
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
    .android-accept{color:#1a7f37;font-weight:600}.android-reject{color:#b42318;font-weight:600}
    td.android{min-width:12em;max-width:20em}
    td.live[data-live=loaded] .outcome,.loaded{color:#1a7f37;font-weight:600}
    td.live[data-live=blocked] .outcome,.blocked{color:#b42318;font-weight:600}
    tr.unsupported td{color:#999}
    td.clients{min-width:14em;max-width:20em}td.clients span{font-weight:600}
    td small{overflow-wrap:anywhere}td.pin code{word-break:break-all;user-select:all}td.pin{min-width:8em;max-width:12em}
    td.live{min-width:16em;max-width:26em}td.live .seen{margin-top:.3em;font-size:12px;color:#555}
    .seen-head{color:#888}.seen-id{color:#888;font-family:ui-monospace,monospace}
    .mark{font-size:12px;padding:0 .35em;border-radius:3px}
    .mark-expected{background:#dff3e3;color:#1a7f37}.mark-unexpected{background:#fde2e0;color:#b42318;font-weight:700}
    .mark-not-judged{background:#eee;color:#666}
    td.live[data-live=preparing]{color:#8a6d00}
    .warning{color:#b42318;font-weight:700}small.why{display:block}
    .alarm{background:#fde2e0;padding:.5em .7em;border-left:4px solid #b42318}
    """

    /// One fetch per fixture, five at a time; a fixture that does not answer in 8 s counts as blocked. Each result is
    /// marked expected or unexpected against the cell's `data-expect` (`CatalogEntry.browser`, worked out in Swift);
    /// when every control (HTTPS that OpenSSL and Chromium verify) is blocked, `#live-untrusted` says the browser does
    /// not trust the CA and blocked controls are not judged; a loaded `data-no-verifier-accepts` row raises
    /// `#live-not-verifying`. Every 3 s while the page is visible it reads `/live.json`: rows still preparing are tried
    /// once they serve, and each row shows what its fixture saw of its last connections since the page opened (the
    /// first read, before any fixture is tried, sets where that starts), in the server's own words.
    private static let script = """
    (function(){
      var all=Array.prototype.slice.call(document.querySelectorAll('td.live'));
      var byName={};all.forEach(function(c){byName[c.getAttribute('data-scenario')]=c;});
      var queue=all.filter(function(c){return c.hasAttribute('data-url');});
      var running=0,tried=0;
      function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=text;return e;}
      function part(cell,cls){var p=cell.querySelector('.'+cls);if(!p){p=el('div',cls);if(cls==='result'){cell.insertBefore(p,cell.firstChild);}else{cell.appendChild(p);}}return p;}
      function controls(){return all.filter(function(c){return c.getAttribute('data-control')==='true';});}
      function untrusted(){var cs=controls();return cs.length>0&&cs.every(function(c){return c.getAttribute('data-live')==='blocked';});}
      function judge(cell){
        var live=cell.getAttribute('data-live'),expect=cell.getAttribute('data-expect');
        if((live!=='loaded'&&live!=='blocked')||!expect)return;
        var loaded=live==='loaded',mark,why=cell.getAttribute('data-expect-why')||'';
        var noVerifier=loaded&&cell.getAttribute('data-no-verifier-accepts')==='true';
        if(!loaded&&expect==='accept'&&document.body.getAttribute('data-live-trust')==='untrusted'){mark='not judged';why='this browser does not trust the built-in CA';}
        else if(loaded===(expect==='accept')){mark='expected';}
        else{mark='unexpected';why=(loaded?'a verifying browser refuses it: ':'a verifying browser loads it: ')+why;}
        cell.setAttribute('data-mark',mark.replace(' ','-'));
        var r=part(cell,'result');r.textContent='';
        r.appendChild(el('span','outcome',cell.getAttribute('data-result-text')||live));
        r.appendChild(document.createTextNode(' '));
        r.appendChild(el('span','mark mark-'+mark.replace(' ','-'),mark));
        if(noVerifier){r.appendChild(el('div','warning','⚠ no verifying client may accept this: the browser is not verifying certificates'));}
        if(mark!=='expected'&&why){r.appendChild(el('small','why',why));}
      }
      function finish(){
        if(untrusted()){document.getElementById('live-untrusted').hidden=false;document.body.setAttribute('data-live-trust','untrusted');}
        var names=all.filter(function(c){return c.getAttribute('data-live')==='loaded'&&c.getAttribute('data-no-verifier-accepts')==='true';})
          .map(function(c){return c.getAttribute('data-scenario');});
        if(names.length>0){document.getElementById('live-not-verifying-names').textContent=names.join(', ');
          document.getElementById('live-not-verifying').hidden=false;document.body.setAttribute('data-live-verifying','false');}
        all.forEach(judge);
        var preparing=all.some(function(c){return c.getAttribute('data-live')==='preparing';});
        document.body.setAttribute('data-live-done',preparing?'false':'true');
      }
      function settled(){if(running===0&&tried===queue.length){finish();}}
      function attempt(cell){
        var controller=('AbortController' in window)?new AbortController():null;
        var timer=setTimeout(function(){if(controller)controller.abort();},8000);
        fetch(cell.getAttribute('data-url'),{cache:'no-store',signal:controller?controller.signal:undefined})
          .then(function(r){return r.json();})
          .then(function(j){cell.setAttribute('data-live','loaded');cell.setAttribute('data-result-text','loaded'+(j&&j.tls?' · '+j.tls.protocol:''));})
          .catch(function(){cell.setAttribute('data-live','blocked');cell.setAttribute('data-result-text','blocked');})
          .then(function(){clearTimeout(timer);judge(cell);running--;pump();settled();});
      }
      function pump(){while(running<5&&tried<queue.length){running++;var c=queue[tried++];c.textContent='';part(c,'result').textContent='trying…';attempt(c);}}
      function show(cell,info){
        if(cell.getAttribute('data-live')==='preparing'&&info.status!=='preparing'){
          if(info.status==='serving'&&info.url){cell.setAttribute('data-url',info.url);cell.setAttribute('data-live','pending');cell.removeAttribute('title');queue.push(cell);pump();}
          else{cell.setAttribute('data-live',info.status);cell.textContent='';part(cell,'result').textContent=info.status+(info.reason?': '+info.reason:'');settled();}
        }
        var since=baseline[cell.getAttribute('data-scenario')]||0;
        var recent=(info.recent||[]).filter(function(r){return r.id>since;});
        if(recent.length===0)return;
        var seen=part(cell,'seen');seen.textContent='';
        seen.appendChild(el('div','seen-head','the server saw (since this page opened):'));
        recent.forEach(function(r){
          var line=el('div','seen-line');
          line.appendChild(el('span','seen-id','#'+r.id+' '+(r.acceptedAt||'').replace(/^.*T|Z$/g,'')+(r.proxy?' via proxy':'')+' '));
          line.appendChild(document.createTextNode(r.summary));
          seen.appendChild(line);
        });
      }
      var polling=false,baseline=null;
      function start(){pump();settled();}
      function poll(){
        if(polling||(baseline!==null&&document.hidden))return;polling=true;
        fetch('/live.json',{cache:'no-store'}).then(function(r){return r.json();}).then(function(j){
          var scenarios=j.scenarios||{};
          if(baseline===null){baseline={};Object.keys(scenarios).forEach(function(n){baseline[n]=scenarios[n].latestID||0;});start();}
          Object.keys(scenarios).forEach(function(n){if(byName[n])show(byName[n],scenarios[n]);});
        }).catch(function(){if(baseline===null){baseline={};start();}}).then(function(){polling=false;});
      }
      poll();setInterval(poll,3000);
    })();
    """
}
