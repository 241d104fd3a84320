import Foundation
import Testing
@testable import TLSFixtures
@testable import TLSFixturesRunner
import TLSFixturesCLISupport

/// `tls-fixtures serve` as a user runs it: a subprocess on fixed ports, judged from outside.
@Suite("serve, dashboard and probe, end to end", .serialized)
struct ServeEndToEndTests {
    /// A running `tls-fixtures serve`, its output in files so a chatty child can never block. Every wait is awaited
    /// (no pool thread held) and bounded; stopping it never waits for ever (`StoppableChild`).
    final class ServeProcess: @unchecked Sendable {
        let child: StoppableChild
        let stdout: URL
        let stderr: URL
        var process: Process { child.process }

        init(_ arguments: [String], environment: [String: String] = [:]) throws {
            let scratch = TestEnvironment.temporaryDirectory("serve")
            stdout = scratch.appendingPathComponent("out")
            stderr = scratch.appendingPathComponent("err")
            _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
            _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
            let handles = [try FileHandle(forWritingTo: stdout), try FileHandle(forWritingTo: stderr)]
            // The child has its own copies once it runs.
            defer { for handle in handles { try? handle.close() } }
            child = try StoppableChild(TestEnvironment.cli, ["serve"] + arguments, environment: environment,
                                       standardOutput: handles[0], standardError: handles[1])
        }

        var output: String { (try? String(contentsOf: stdout, encoding: .utf8)) ?? "" }
        var errors: String { (try? String(contentsOf: stderr, encoding: .utf8)) ?? "" }
        /// The exit status; nil while it runs.
        var terminationStatus: Int32? { child.terminationStatus }

        /// Waits for the `--json` startup report (printed once everything listens); nil when it exits or `timeout`
        /// passes first.
        func document(timeout: TimeInterval) async throws -> CatalogDocument? {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if let data = try? Data(contentsOf: stdout), !data.isEmpty,
                   let document = try? JSONDecoder().decode(CatalogDocument.self, from: data) {
                    return document
                }
                if !child.isRunning || Date() >= deadline { return nil }
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// Whether it exits within `seconds`.
        func exited(within seconds: TimeInterval) async -> Bool { await child.exited(within: seconds) }

        /// SIGTERM and its exit awaited (SIGKILL and a failed test past `StoppableChild.stopBound`).
        @discardableResult
        func stop(sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
            await child.stop("serve", sourceLocation: sourceLocation)
        }

        /// `stop()` for a `defer` (see `StoppableChild.stopBlocking`).
        func kill(sourceLocation: SourceLocation = #_sourceLocation) {
            child.stopBlocking("serve", sourceLocation: sourceLocation)
        }
    }

    /// A base port whose whole range (dashboard + every scenario offset) is free right now.
    static func freePortBase() throws -> Int {
        // Up to the OCSP responder (base + 99), which serve also opens.
        let span = max((ScenarioCatalog.builtIn.scenarios.compactMap(\.port).max() ?? 9900) - ScenarioCatalog.defaultPortBase,
                       ScenarioCatalog.revocationResponderOffset)
        do { return try Ports.freeRange(count: span + 1) } catch { throw CLIFailure("\(error)") }
    }

    struct CLIFailure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

    var store: CertificateStore { TestEnvironment.sharedStore }

    @Test("every scenario on its port, the dashboard, probe, and a clean SIGTERM", .requires(Tools.curl, Tools.openssl))
    func serveEverything() async throws {
        let base = try Self.freePortBase()
        let serve = try ServeProcess(["--port-base", "\(base)", "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        // Cold CI stores generate an RSA-8192 key on first use: allow for it.
        let document = try #require(try await serve.document(timeout: 300), "serve did not report: \(serve.errors)")
        let catalog = ScenarioCatalog.builtIn

        // The report lists exactly the catalog; unsupported ones carry a reason.
        #expect(document.scenarios.map(\.name) == catalog.names)
        for entry in document.scenarios where entry.status == .unsupported {
            #expect(entry.reason?.contains("unsupported by the linked OpenSSL") == true, "\(entry.name): \(entry.reason ?? "")")
        }
        // On a cold store the slow keys are made in the background, and only those: wait until they are served too.
        let preparing = document.scenarios.filter { $0.status == .preparing }.map(\.name)
        #expect(Set(preparing).isSubset(of: ["rsa4096", "rsa8192"]), "made in the background: \(preparing)")
        var current = document
        // A hang detector: the suite's shared store makes these two keys once per run, and that may queue behind
        // every other test's key generation on two cores.
        await Poll.until(timeout: 600, every: .milliseconds(500)) {
            if let answer = try? await Subprocess.runAwaiting(["curl", "-sSf", "http://localhost:\(base)/scenarios.json"]), answer.status == 0,
               let latest = try? JSONDecoder().decode(CatalogDocument.self, from: answer.stdoutData) {
                current = latest
            }
            return !current.scenarios.contains { $0.status == .preparing }
        }
        let serving = current.scenarios.filter { $0.status == .serving }
        // Every scenario serves but those whose file declares what the linked OpenSSL may lack (ssl-v3, rc4, 3des:
        // `expect.handshake.requires`), and those only when the OpenSSL really lacks it (reported unsupported).
        let mayLack = Set(catalog.scenarios.filter { $0.expect.handshake?.requires != nil }.map(\.name))
        let notServing = current.scenarios.filter { $0.status != .serving }
        #expect(notServing.allSatisfy { mayLack.contains($0.name) && $0.status == .unsupported },
                "not serving: \(notServing.map { "\($0.name) (\($0.status): \($0.reason ?? ""))" })")

        // Every listed port answers as its scenario, on its catalog offset from the base.
        let ca = try store.ca().certificate
        for entry in serving {
            let scenario = try catalog.scenario(named: entry.name)
            #expect(entry.port == scenario.port.map { $0 - ScenarioCatalog.defaultPortBase + base })
            let port = try #require(entry.port)
            var options = ProbeOptions()
            options.trustRoots = [ca]
            options.clientCredential = scenario.tls?.clientAuth == .required ? try store.clientCredential() : nil
            let result = try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: port, scheme: scenario.isCleartext ? "http" : "https"))
            let body = try #require(result.http?.body, "\(entry.name): no HTTP answer (\(result.failure ?? ""))")
            let response = try JSONDecoder().decode(FixtureResponse.self, from: Data(body.utf8))
            #expect(response.scenario == entry.name)
        }

        // The dashboard and its machine-readable catalog.
        let dashboard = "http://localhost:\(base)"
        let page = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/"])
        #expect(page.status == 0)
        for name in catalog.names { #expect(page.stdout.contains("id=\"scenario-\(name)\""), "dashboard lacks \(name)") }
        #expect(page.stdout.contains("fixtures.test") && page.stdout.contains("ATS does not apply to localhost"))
        let json = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/scenarios.json"])
        let served = try JSONDecoder().decode(CatalogDocument.self, from: json.stdoutData)
        #expect(served.scenarios.map(\.name) == catalog.names)
        #expect(served.scenarios.first { $0.name == "pinned" }?.pins?.leaf == served.scenarios.first { $0.name == "pinned" }?.pins?.pinnedLeaf)
        let der = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/ca.cer"])
        #expect(try Certificate(der: der.stdoutData) == ca)
        let p12File = TestEnvironment.temporaryDirectory("p12").appendingPathComponent("ca.p12").path
        #expect(try await Subprocess.runAwaiting(
            ["curl", "-sS", "-f", "-o", p12File, "\(dashboard)/ca.p12"]).status == 0)
        #expect(try await TestEnvironment.opensslAwaiting(["pkcs12", "-in", p12File, "-passin", "pass:\(PKCS12Export.defaultPassword)", "-nokeys"]).stdout.contains("BEGIN CERTIFICATE"))
        #expect(try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/hosts"]).stdout.contains("127.0.0.1\tats-compliant.fixtures.test"))
        #expect(try await Subprocess.runAwaiting(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(dashboard)/nope"]).stdout == "404")

        // probe, in text and JSON, against served scenarios.
        try await probeCLIChecks(document: document, ca: ca)

        // SIGTERM: exit 0, every port free again. The bound is a hang detector, not a speed claim (each fixture closes
        // its connections within a second, concurrently).
        try #require(await serve.stop(), "serve did not exit on SIGTERM")
        #expect(serve.terminationStatus == 0, "exit status \(serve.terminationStatus ?? -1): \(serve.errors)")
        for port in [base] + serving.compactMap(\.port) { #expect(!Ports.accepts(port), "port \(port) still listening") }
    }

    /// Chromium on Linux, trusting the CA through an NSS database; on macOS Chrome would consult the Keychain instead,
    /// so there the test is skipped with that reason (`Tools.chromium`).
    @Test("a browser that trusts the built-in CA: a screenshot, and the dashboard's own live verdicts",
          .requires(Tools.chromium, Tools.certutil))
    func browser() async throws {
        let base = try Self.freePortBase()
        let serve = try ServeProcess(["ats-compliant", "wrong-host", "expired", "http", "--port-base", "\(base)",
                                      "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        _ = try #require(try await serve.document(timeout: 120), "serve did not report: \(serve.errors)")
        try await browserCheck(dashboard: "http://localhost:\(base)", ca: try store.ca().certificate)
        try await untrustingBrowserCheck(dashboard: "http://localhost:\(base)")
        try await ignoringBrowserCheck(dashboard: "http://localhost:\(base)")
    }

    /// Issue 29 item 9 and issue 25 item 2 without a browser: at a base other than 9800 the page names that base's
    /// revocation ports (from the served leaves) and never the default ones, and `/live.json` shows what a fixture saw
    /// of a client, in the record's own words.
    @Test("the dashboard at another --port-base, and /live.json after a client", .requires(Tools.curl))
    func dashboardLive() async throws {
        let base = try Self.freePortBase()
        let serve = try ServeProcess(["expired", "ocsp-unreachable", "--port-base", "\(base)",
                                      "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        let document = try #require(try await serve.document(timeout: 120), "serve did not report: \(serve.errors)")
        let dashboard = "http://localhost:\(base)"
        let page = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/"]).stdout
        let row = try #require(page.range(of: "id=\"scenario-ocsp-unreachable\"").map { String(page[$0.upperBound...].prefix(4000)) })
        #expect(row.contains("OCSP http://localhost:\(base + ScenarioCatalog.refusingPortOffset)/"), "\(row.prefix(2000))")
        #expect(row.contains("CRL http://localhost:\(base + ScenarioCatalog.revocationResponderOffset)/"))
        for fixed in ["9898", "9899"] { #expect(!page.contains(fixed), "the page names \(fixed) at --port-base \(base)") }

        let port = try #require(document.scenarios.first { $0.name == "expired" }?.port)
        _ = try await Subprocess.runAwaiting(["curl", "-sS", "-k", "--max-time", "10", "https://localhost:\(port)/"])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var seen: DashboardLive.Seen?
        // Until the record has settled; 60 s only detects a hang.
        try await Poll.until(timeout: 60, every: .milliseconds(100)) {
            let json = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "\(dashboard)/live.json"]).stdout
            let live = try decoder.decode(DashboardLive.self, from: Data(json.utf8))
            #expect(live.scenarios["ocsp-unreachable"]?.status == "serving")
            seen = live.scenarios["expired"]?.recent?.first
            return seen?.settled == true
        }
        let record = try #require(seen, "/live.json shows no connection to expired")
        #expect(record.summary.hasPrefix("the handshake completed (TLSv1.3") && record.summary.contains("GET / was answered 200"),
                "\(record.summary)")
    }

    /// The `data-…` attribute `attribute` of `name`'s live cell in a dumped DOM.
    static func liveAttribute(_ dom: String, _ name: String, _ attribute: String) -> String? {
        guard let range = dom.range(of: "data-scenario=\"\(name)\"") else { return nil }
        let tail = dom[range.upperBound...].prefix(1500)
        guard let start = tail.range(of: " \(attribute)=\"") else { return nil }
        return String(tail[start.upperBound...].prefix { $0 != "\"" })
    }

    /// Issue 29 item 9: a browser that ignores certificate errors loads `expired` and `wrong-host`; the page must mark
    /// that unexpected and say the browser is not verifying, not show a green "loaded" as if all were well.
    func ignoringBrowserCheck(dashboard: String) async throws {
        let browser = try #require(Tools.chromium.path)
        let home = TestEnvironment.temporaryDirectory("chromium-ignoring")
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=30000",
                     "--ignore-certificate-errors"]
        let dom = try await Subprocess.runAwaiting([browser] + flags + ["--dump-dom", "\(dashboard)/"], environment: ["HOME": home.path],
                                     timeout: 90).stdout
        #expect(dom.contains("data-live-done=\"true\""), "the live column did not finish")
        for name in ["expired", "wrong-host"] {
            #expect(Self.liveAttribute(dom, name, "data-live") == "loaded", "\(name): --ignore-certificate-errors loads it")
            #expect(Self.liveAttribute(dom, name, "data-mark") == "unexpected", "\(name)")
        }
        #expect(Self.liveAttribute(dom, "ats-compliant", "data-mark") == "expected")
        #expect(dom.contains("data-live-verifying=\"false\""))
        let banner = try #require(dom.range(of: "id=\"live-not-verifying\"").map { String(dom[$0.lowerBound...].prefix(400)) })
        #expect(!banner.prefix(60).contains("hidden") && banner.contains("not verifying certificates"), "\(banner)")
        let names = try #require(dom.range(of: "id=\"live-not-verifying-names\">").map { String(dom[$0.upperBound...].prefix(200)) })
        #expect(names.hasPrefix("wrong-host, expired") || names.hasPrefix("expired, wrong-host"), "\(names)")
    }

    func browserCheck(dashboard: String, ca: Certificate) async throws {
        let browser = try #require(Tools.chromium.path)
        // A private home whose NSS database trusts the built-in CA, as a developer's browser would after installing it.
        let home = TestEnvironment.temporaryDirectory("chromium-home")
        let nss = home.appendingPathComponent(".pki/nssdb")
        try FileManager.default.createDirectory(at: nss, withIntermediateDirectories: true)
        let caFile = try TestEnvironment.file(ca.pem, name: "ca.pem")
        #expect(try await Subprocess.runAwaiting(
            ["certutil", "-d", "sql:\(nss.path)", "-N", "--empty-password"]).status == 0)
        #expect(try await Subprocess.runAwaiting(["certutil", "-d", "sql:\(nss.path)", "-A", "-t", "C,,", "-n", "tls-fixtures", "-i", caFile]).status == 0)
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--virtual-time-budget=30000"]
        let screenshots = TestEnvironment.packageRoot.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        let png = screenshots.appendingPathComponent("dashboard.png")
        try? FileManager.default.removeItem(at: png)
        let shot = try await Subprocess.runAwaiting([browser] + flags + ["--window-size=1400,2400", "--screenshot=\(png.path)", "\(dashboard)/"],
                                      environment: ["HOME": home.path], timeout: 90)
        #expect(shot.status == 0, "\(shot.stderr.suffix(500))")
        let image = try Data(contentsOf: png)
        #expect(image.starts(with: [0x89, 0x50, 0x4E, 0x47]) && image.count > 20_000, "not a real screenshot")

        let dom = try await Subprocess.runAwaiting([browser] + flags + ["--dump-dom", "\(dashboard)/"], environment: ["HOME": home.path], timeout: 90)
        func live(_ name: String) -> String? {
            guard let range = dom.stdout.range(of: "data-scenario=\"\(name)\"") else { return nil }
            let tail = dom.stdout[range.upperBound...].prefix(1500)
            guard let start = tail.range(of: " data-live=\"") else { return nil }
            return String(tail[start.upperBound...].prefix { $0 != "\"" })
        }
        #expect(dom.stdout.contains("data-live-done=\"true\""), "the live column did not finish")
        #expect(live("ats-compliant") == "loaded")
        #expect(live("wrong-host") == "blocked")
        #expect(live("expired") == "blocked")
        #expect(live("http") == "loaded")
        // Each result against what a verifying browser does: all as expected here, and what the fixture saw beside it.
        for name in ["ats-compliant", "wrong-host", "expired", "http"] {
            #expect(Self.liveAttribute(dom.stdout, name, "data-mark") == "expected", "\(name)")
        }
        #expect(!dom.stdout.contains("data-live-verifying=\"false\""))
        let expiredCell = try #require(dom.stdout.range(of: "data-scenario=\"expired\"").map { String(dom.stdout[$0.upperBound...].prefix(3000)) })
        #expect(expiredCell.contains("the server saw (since this page opened):") && expiredCell.contains("the client "), "\(expiredCell.prefix(1500))")
        // Trusted: no banner blaming the browser.
        #expect(!dom.stdout.contains("data-live-trust=\"untrusted\""))
        #expect(dom.stdout.contains("id=\"live-untrusted\" class=\"trap\" hidden"))
    }

    /// A browser that does not trust the CA blocks every HTTPS fixture, the controls too: the page must say that this
    /// is the browser's trust, not the scenarios, and how to fix it.
    func untrustingBrowserCheck(dashboard: String) async throws {
        let browser = try #require(Tools.chromium.path)
        let home = TestEnvironment.temporaryDirectory("chromium-untrusting")   // an empty NSS database: no CA trusted
        let flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=30000"]
        let dom = try await Subprocess.runAwaiting([browser] + flags + ["--dump-dom", "\(dashboard)/"], environment: ["HOME": home.path], timeout: 90)
        #expect(dom.stdout.contains("data-live-done=\"true\""), "the live column did not finish")
        let control = try #require(dom.stdout.range(of: "data-scenario=\"ats-compliant\"").map { dom.stdout[$0.upperBound...].prefix(1500) })
        #expect(control.contains("data-live=\"blocked\""), "\(control)")
        #expect(dom.stdout.contains("data-live-trust=\"untrusted\""), "the page did not notice that the browser distrusts the CA")
        let banner = try #require(dom.stdout.range(of: "id=\"live-untrusted\"").map { String(dom.stdout[$0.lowerBound...].prefix(300)) })
        #expect(!banner.contains("hidden") && banner.contains("does not trust the built-in CA"), "\(banner)")
    }

    func probeCLIChecks(document: CatalogDocument, ca: Certificate) async throws {
        let caFile = try TestEnvironment.file(ca.pem, name: "ca.pem")
        func port(_ name: String) throws -> Int { try #require(document.scenarios.first { $0.name == name }?.port) }
        // The same facts the in-process probe sees, through the CLI, in JSON…
        for name in ["ats-compliant", "tls-v1-0", "static-rsa", "dh1024", "wrong-host", "incomplete-chain"] {
            let cli = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(try port(name))", "--ca", caFile, "--json"])
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let decoded = try decoder.decode(ProbeJSONView.self, from: cli.stdoutData).result
            var options = ProbeOptions()
            options.trustRoots = [ca]
            options.checkDefaultClient = true
            let direct = try await TLSProbe(
                options: options).probe(ProbeTarget(host: "localhost", port: try port(name)))
            #expect(decoded.version == direct.version && decoded.cipher == direct.cipher && decoded.keyExchange == direct.keyExchange, "\(name)")
            #expect(decoded.verification?.summary == direct.verification?.summary, "\(name)")
            #expect(decoded.presentedChain.map(\.sha256Fingerprint) == direct.presentedChain.map(\.sha256Fingerprint), "\(name)")
            // …and what the scenario file says a client sees, which neither probe computed: the protocol, the suite,
            // the chain's length and the verify result.
            let declared = try #require(ScenarioExpectations.named(name).handshake, "\(name)")
            #expect(decoded.protocolName == declared.protocolName, "\(name)")
            #expect(declared.ciphers.contains(decoded.cipher?.openssl ?? "none"), "\(name): \(decoded.cipher?.openssl ?? "none")")
            #expect(decoded.presentedChain.count == declared.certificateCount, "\(name)")
            #expect((decoded.verification?.summary ?? "ok") == declared.verify, "\(name)")
            // …and in text, with the exit status scripts rely on.
            let text = try await TestEnvironment.tlsFixturesAwaiting(
                ["probe", "localhost:\(try port(name))", "--ca", caFile])
            #expect(text.stdout.contains("Protocol   \(direct.protocolName ?? "?")"), "\(name): \(text.stdout)")
            // The label column is as wide as the longest label ("Default client" now).
            let verify = text.stdout.split(separator: "\n").first { $0.hasPrefix("Verify ") } ?? ""
            #expect(verify.contains("  \(direct.verification?.summary ?? "?")"), "\(name): \(text.stdout)")
            // 5: only the probe's permissive handshake completed (tls-v1-0, dh1024: a default client refuses them).
            let expected: Int32 = direct.verification?.error != nil ? 3 : direct.defaultClient?.outcome == "refuses" ? 5 : 0
            #expect(text.status == expected, "\(name): exit \(text.status)")
        }
        // Offering only TLS 1.2+ to the TLS 1.0 fixture fails the handshake: exit 2.
        let refused = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(try port("tls-v1-0"))", "--ca", caFile, "--tls-min", "1.2"])
        #expect(refused.status == 2 && refused.stdout.contains("protocol version"))
        // Pins: the published pinned key matches `pinned` and fails `pin-rotated-key` (exit 4).
        let pinned = try #require(document.scenarios.first { $0.name == "pinned" }?.pins?.pinnedLeaf)
        #expect(try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(try port("pinned"))", "--ca", caFile, "--pin", "sha256/\(pinned)"]).status == 0)
        let rotated = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost:\(try port("pin-rotated-key"))", "--ca", caFile, "--pin", "sha256/\(pinned)", "--pin-mode", "leaf"])
        #expect(rotated.status == 4 && rotated.stdout.contains("FAIL"))
        // Bad targets are one-line errors.
        let bad = try await TestEnvironment.tlsFixturesAwaiting(["probe", "localhost"])
        #expect(bad.status != 0 && bad.stderr.split(separator: "\n").count == 1 && bad.stderr.contains("HOST:PORT"))
    }

    @Test("serve runs the revocation scenarios' OCSP responder on base + 99 and a refusing port on base + 98, and frees both")
    func serveRevocation() async throws {
        let base = try Self.freePortBase()
        let names = ["revoked", "revoked-stapled", "ocsp-unreachable", "crl-revoked"]
        let serve = try ServeProcess(names + ["--port-base", "\(base)", "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        let document = try #require(try await serve.document(timeout: 180), "serve did not report: \(serve.errors)")
        let responder = base + ScenarioCatalog.revocationResponderOffset
        let refusing = base + ScenarioCatalog.refusingPortOffset
        #expect(document.revocationResponder == "http://localhost:\(responder)")
        #expect(Ports.accepts(responder), "nothing answers on \(responder)")
        #expect(!Ports.accepts(refusing) && !Ports.canListen(refusing), "\(refusing) is not held refusing")

        let ca = try store.ca().certificate
        let caFile = try TestEnvironment.file(ca.pem, name: "ca.pem")
        let issuerFile = try TestEnvironment.file(try store.authority(.intermediate).certificate.pem, name: "issuer.pem")
        for entry in document.scenarios {
            let sources = try #require(entry.revocationSources, "\(entry.name): /scenarios.json names no revocation sources")
            #expect(sources.crl == ["http://localhost:\(responder)/crl/intermediate.crl"], "\(entry.name): \(sources.crl)")
            let expectedOCSP = switch entry.name {
            case "crl-revoked": [String]()
            case "ocsp-unreachable": ["http://localhost:\(refusing)/ocsp"]
            default: ["http://localhost:\(responder)/ocsp"]
            }
            #expect(sources.ocsp == expectedOCSP, "\(entry.name): \(sources.ocsp)")
            #expect(entry.expect.revocation != nil, "\(entry.name): no expect.revocation in /scenarios.json")
        }
        // The served revoked leaf, asked about at the URL it names: revoked, signed by the issuer.
        let port = try #require(document.scenarios.first { $0.name == "revoked" }?.port)
        let transcript = try await SClient.connect(port: port, extra: ["-CAfile", caFile])
        let leafFile = try TestEnvironment.file(Data(try #require(transcript.certificatesPEM.first).utf8), name: "leaf.pem")
        let asked = try await TestEnvironment.opensslAwaiting(
            ["ocsp", "-issuer", issuerFile, "-CAfile", caFile, "-cert", leafFile,
            "-url", "http://localhost:\(responder)/ocsp"])
        #expect(asked.stdout.contains("\(leafFile): revoked") && asked.combined.contains("Response verify OK"), "\(asked.combined)")
        // `pins revoked` for this serve's --port-base writes the leaf it presents and names its responder; for
        // another base (the default), a leaf naming that base's, not this one.
        let served = try Certificate(pem: Data(try #require(transcript.certificatesPEM.first).utf8))
        for (pinsBase, same) in [(base, true), (ScenarioCatalog.defaultPortBase, false)] {
            let pins = try await TestEnvironment.tlsFixturesAwaiting(
                ["pins", "revoked", "--port-base", "\(pinsBase)", "--json",
                "--dir", store.directory.path])
            let material = try JSONDecoder().decode(PinMaterial.self, from: pins.stdoutData)
            let written = try Data(contentsOf: URL(fileURLWithPath: material.leafCertificateFile))
            #expect((written == served.der) == same, "pins --port-base \(pinsBase): the .cer is \(same ? "not " : "")the served leaf")
            let pinsResponder = pinsBase + ScenarioCatalog.revocationResponderOffset
            #expect(material.revocationSources?.ocsp == ["http://localhost:\(pinsResponder)/ocsp"],
                    "pins --port-base \(pinsBase): \(String(describing: material.revocationSources))")
            #expect(material.leaf == served.spkiSHA256, "the key pin is the same whatever the base")
        }
        // The dashboard says what each means for Apple.
        let page = try await Subprocess.runAwaiting(["curl", "-sS", "-f", "http://localhost:\(base)/"])
        #expect(page.stdout.contains("Apple by default:") && page.stdout.contains("SecRevocationServer.c"), "dashboard lacks the revocation notes")

        // SIGTERM; the bound only detects a hang (the siblings' 20 s was 5 s here).
        #expect(await serve.stop())
        #expect(!Ports.accepts(responder) && Ports.canListen(responder) && Ports.canListen(refusing), "revocation ports held after SIGTERM")
    }

    @Test("without the legacy helper ssl-v3, rc4 and 3des are unsupported with the make target to run; a broken helper is one line")
    func legacyScenariosWithoutTheHelper() async throws {
        for feature in [OptionalFeature.sslv3, .rc4, .tripleDES] where try await OpenSSLFeatures.has(feature) {
            Issue.record("this machine's OpenSSL has \(feature): the unsupported path cannot be checked here")
        }
        let base = try Self.freePortBase()
        let none = try ServeProcess(["ssl-v3", "rc4", "3des", "--port-base", "\(base)", "--dir", store.directory.path, "--legacy-helper", "none"])
        defer { none.kill() }
        // A hang detector: with nothing to serve, serve exits at once.
        try #require(await none.exited(within: 120), "serve kept running with nothing to serve")
        #expect(none.terminationStatus != 0)
        let lines = none.errors.split(separator: "\n").filter { !$0.hasPrefix("generating") }
        #expect(lines.count == 1 && none.errors.contains("ssl-v3: unsupported by the linked OpenSSL")
                && none.errors.contains("run `make legacy-openssl`"), "\(none.errors)")

        // A helper that is not one: one line naming it and the way out; nothing left listening.
        let broken = try ServeProcess(["rc4", "ats-compliant", "--port-base", "\(base)", "--dir", store.directory.path,
                                       "--legacy-helper", "/bin/false"])
        defer { broken.kill() }
        try #require(await broken.exited(within: 120), "serve kept running")
        #expect(broken.terminationStatus != 0)
        #expect(broken.errors.split(separator: "\n").filter { !$0.hasPrefix("generating") }.count == 1
                && broken.errors.contains("the legacy helper /bin/false did not start") && broken.errors.contains("make legacy-openssl"),
                "\(broken.errors)")
        #expect(!Ports.accepts(base + 1), "ats-compliant was left listening")
        let missing = try await TestEnvironment.tlsFixturesAwaiting(
            ["serve", "rc4", "--legacy-helper", "/nonexistent/helper"])
        #expect(missing.status != 0 && missing.stderr.contains("is not an executable"), "\(missing.combined)")
    }

    @Test("a port in use: one-line error naming it, non-zero exit, nothing left listening")
    func portInUse() async throws {
        let base = try Self.freePortBase()
        let blocker = try ListeningSocket(port: base + 1)   // ats-compliant's port
        defer { blocker.close() }
        let serve = try ServeProcess(["ats-compliant", "tls-v1-0", "--port-base", "\(base)", "--dir", store.directory.path])
        defer { serve.kill() }
        try #require(await serve.exited(within: 120), "serve kept running with its port taken")
        #expect(serve.terminationStatus != 0)
        let lines = serve.errors.split(separator: "\n").filter { !$0.hasPrefix("generating") }
        #expect(lines.count == 1, "\(serve.errors)")
        #expect(serve.errors.contains("port \(base + 1)") && serve.errors.contains("already in use") && serve.errors.contains("--port-base"))
        #expect(!Ports.accepts(base) && !Ports.accepts(base + 10), "something was left listening")
    }

    @Test("--log-connections and --connection-log: each connection as it ends, by scenario and port; the file is appended to, never replaced",
          .requires(Tools.curl))
    func connectionEvents() async throws {
        let base = try Self.freePortBase()
        let scratch = TestEnvironment.temporaryDirectory("connection-log")
        let log = scratch.appendingPathComponent("connections.jsonl")
        try Data("a line of the user's own\n".utf8).write(to: log)
        let serve = try ServeProcess(["ats-compliant", "expired", "--port-base", "\(base)", "--dir", store.directory.path,
                                      "--json", "--log-connections", "--connection-log", log.path])
        defer { serve.kill() }
        _ = try #require(try await serve.document(timeout: 120), "serve did not start: \(serve.errors)")
        let root = store.certificatePath(.root).path
        // A misspelled name through the proxy reaches no fixture: the proxy refuses it, and says so on standard error.
        let misspelled = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", root, "--proxy", "http://127.0.0.1:\(base)",
            "https://expird.fixtures.test:\(base + 31)/"])
        #expect(misspelled.status == 56 && misspelled.stderr.contains("403"), "\(misspelled.combined)")
        let accepted = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", root, "-o", "/dev/null", "-w", "%{http_code}",
            "https://localhost:\(base + 1)/"])
        #expect(accepted.stdout == "200", "\(accepted.combined)")
        let refused = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", root, "https://localhost:\(base + 31)/"])
        #expect(refused.status == 60, "curl should refuse the expired certificate: \(refused.combined)")
        // Written as each connection closes; 20 s only detects a hang.
        var lines: [Substring] = []
        await Poll.until(timeout: 20, every: .milliseconds(50)) {
            lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.count >= 3
        }
        try #require(lines.count == 3, "expected the user's line and two connections in \(log.path): \(lines)")
        #expect(lines[0] == "a line of the user's own")
        struct Event: Decodable { var scenario: String; var port: Int?; var fixture: String?; var record: ConnectionRecord }
        let events = try lines.dropFirst().map { try FixtureAPI.decoder().decode(Event.self, from: Data($0.utf8)) }
        // Every key present, `null` when there is nothing: a catalog fixture has no started fixture's id.
        for line in lines.dropFirst() {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["scenario", "port", "fixture", "record"] && object["fixture"] is NSNull, "\(line)")
            let record = try #require(object["record"] as? [String: Any])
            #expect(record["proxy"] is NSNull && record.keys.contains("alertAfterHandshake"), "\(line)")
        }
        let good = try #require(events.first { $0.scenario == "ats-compliant" }, "\(lines)")
        #expect(good.port == base + 1 && good.fixture == nil)
        #expect(good.record.requests.map { "\($0.method) \($0.path) \($0.status)" } == ["GET / 200"])
        let bad = try #require(events.first { $0.scenario == "expired" }, "\(lines)")
        #expect(bad.port == base + 31 && bad.record.requests.isEmpty)
        guard case .alertReceived(let alert, _)? = bad.record.outcome else {
            Issue.record("the expired fixture should have recorded curl's alert: \(bad.record.summary)")
            return
        }
        #expect(alert == TLSAlert(code: 45), "curl sends certificate_expired(45): \(bad.record.summary)")
        // And on standard error, one line each, in the words `tls-fixtures connections` uses.
        #expect(serve.errors.contains("ats-compliant :\(base + 1) #1 127.0.0.1:"), "\(serve.errors)")
        #expect(serve.errors.contains("expired :\(base + 31) #1 "), "\(serve.errors)")
        #expect(serve.errors.contains(bad.record.summary), "\(serve.errors)")
        // The proxy's refusal is a line of its own (it is no fixture's connection, so not in the JSON Lines file: the
        // user's line and the two connections above are all it holds).
        #expect(serve.errors.contains("proxy: CONNECT expird.fixtures.test:\(base + 31) from 127.0.0.1:")
                && serve.errors.contains("refused (403): port \(base + 31) is the expired fixture"), "\(serve.errors)")
        // The JSON document on standard output stays one document.
        #expect(try await serve.document(timeout: 1) != nil)
    }

    @Test("--connection-log that cannot be written: one line naming the option, before anything listens")
    func connectionLogUnwritable() async throws {
        let base = try Self.freePortBase()
        let folder = TestEnvironment.temporaryDirectory("connection-log-folder")
        let result = try await TestEnvironment.tlsFixturesAwaiting(["serve", "ats-compliant", "--port-base", "\(base)",
                                                      "--dir", store.directory.path, "--connection-log", folder.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--connection-log \(folder.path) is a directory"), "\(result.combined)")
        #expect(!result.stderr.contains("Fatal") && result.stderr.split(separator: "\n").count <= 2, "\(result.combined)")
        #expect(!Ports.accepts(base))
    }

    /// Every accepted socket was once given SOL_SOCKET option 1 (SO_DEBUG, which needs CAP_NET_ADMIN) where TCP_NODELAY
    /// was meant: root was let through (without TCP_NODELAY), any other user's serve closed every connection it
    /// accepted. The tests run as root, so only a serve run as another user shows it.
    @Test("serve run by an ordinary user answers: the dashboard, a fixture, and the proxy's tunnel",
          .requires(Tools.curl),
          .enabled(if: TestEnvironment.isRoot && Platform.isLinux, "needs root to run serve as another user (setpriv)"))
    func unprivilegedUser() async throws {
        let base = try Self.freePortBase()
        let store = TestEnvironment.temporaryDirectory("nobody-serve").appendingPathComponent("store")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        #expect(chown(store.path, 65534, 65534) == 0)
        let (serve, log) = try Self.serveAsNobody(["ats-compliant", "--port-base", "\(base)", "--dir", store.path])
        defer { serve.stopBlocking("serve as nobody") }
        let ready = try await TestEnvironment.tlsFixturesAwaiting(
            ["wait", "http://localhost:\(base)", "--timeout", "60"])
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(ready.status == 0, "the dashboard did not answer a serve run as nobody: \(ready.combined)\n\(output)")
        let root = store.appendingPathComponent("ca/root.pem").path
        let direct = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", root, "-o", "/dev/null", "-w", "%{http_code}",
            "https://localhost:\(base + 1)/"])
        #expect(direct.stdout == "200", "a fixture of a serve run as nobody: \(direct.combined)")
        let tunnelled = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--proxy", "http://localhost:\(base)", "--cacert", root,
            "-o", "/dev/null", "-w", "%{http_code}",
            "https://ats-compliant.fixtures.test:\(base + 1)/"])
        #expect(tunnelled.stdout == "200", "through the proxy of a serve run as nobody: \(tunnelled.combined)")
    }

    /// `tls-fixtures serve ARGUMENTS` as nobody (uid 65534), its output (both streams) in the file returned.
    static func serveAsNobody(_ arguments: [String]) throws -> (StoppableChild, URL) {
        let log = TestEnvironment.temporaryDirectory("nobody-serve-log").appendingPathComponent("out")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        // The tests' child environment (no legacy helper looked for: finding one asks Foundation's Bundle.main, which
        // traps when the executable's folder is one nobody may not read, as a CI clone in a 0700 folder is).
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", TestEnvironment.cli, "serve"]
        let child = try StoppableChild("/usr/bin/setpriv", asNobody + arguments,
                                       environment: TestEnvironment.nobodyEnvironment, standardOutput: handle,
                                       standardError: handle)
        return (child, log)
    }

    @Test("a key file this user may not read fails its scenario alone, naming the file and the fix; the others serve",
          .requires(Tools.curl),
          .enabled(if: TestEnvironment.isRoot && Platform.isLinux, "needs root to make a file nobody may read (setpriv)"))
    func unreadableKey() async throws {
        let base = try Self.freePortBase()
        let store = TestEnvironment.temporaryDirectory("unreadable-key").appendingPathComponent("store")
        let made = try await TestEnvironment.tlsFixturesAwaiting(
            ["prepare", "ats-compliant", "expired", "--dir", store.path])
        try #require(made.status == 0, "\(made.combined)")
        #expect(chown(store.path, 65534, 65534) == 0)
        for entry in FileManager.default.subpaths(atPath: store.path) ?? [] {
            #expect(chown(store.appendingPathComponent(entry).path, 65534, 65534) == 0)
        }
        let key = store.appendingPathComponent("keys/expired.rsa-2048.key")
        #expect(chown(key.path, 0, 0) == 0 && chmod(key.path, 0o600) == 0)   // root's now: nobody may not read it
        let (serve, log) = try Self.serveAsNobody(["ats-compliant", "expired", "--port-base", "\(base)",
                                                     "--dir", store.path])
        defer { serve.stopBlocking("serve as nobody") }
        let ready = try await TestEnvironment.tlsFixturesAwaiting(
            ["wait", "http://localhost:\(base)", "--timeout", "60"])
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(ready.status == 0 && ready.stdout.contains("1 serving, 1 failed"), "\(ready.combined)\n\(output)")
        #expect(serve.isRunning, "serve stopped over one scenario's key: \(output)")
        #expect(output.contains("expired: cannot read \(key.path): Permission denied; let this user read it"),
                "\(output)")
        let root = store.appendingPathComponent("ca/root.pem").path
        let served = try await Subprocess.runAwaiting(
            ["curl", "-sS", "--cacert", root, "-o", "/dev/null", "-w", "%{http_code}",
            "https://localhost:\(base + 1)/"])
        #expect(served.stdout == "200", "\(served.combined)")
    }

    @Test("Ctrl-C (SIGINT) also stops serve cleanly")
    func interrupt() async throws {
        let base = try Self.freePortBase()
        let serve = try ServeProcess(["ats-compliant", "--port-base", "\(base)", "--dir", store.directory.path, "--json"])
        defer { serve.kill() }
        _ = try #require(try await serve.document(timeout: 120))
        #expect(Ports.accepts(base + 1))
        kill(serve.process.processIdentifier, SIGINT)
        // A hang detector, not a speed claim.
        try #require(await serve.exited(within: StoppableChild.stopBound), "serve did not exit on SIGINT")
        #expect(serve.terminationStatus == 0)
        #expect(!Ports.accepts(base + 1) && !Ports.accepts(base))
    }
}

/// The JSON `probe --json` prints.
struct ProbeJSONView: Decodable { var result: ProbeResult }

/// Holds a TCP port open, as another program would.
final class ListeningSocket {
    let fd: Int32
    init(port: Int) throws {
        fd = socket(AF_INET, streamSocketType, 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { closeDescriptor(fd); throw ServeEndToEndTests.CLIFailure("cannot hold port \(port)") }
    }
    func close() { closeDescriptor(fd) }
}

/// True when a listening socket could be bound on 127.0.0.1:`port` right now.

/// `close(2)`, callable from a type that has its own `close()`.
func closeDescriptor(_ fd: Int32) { _ = close(fd) }
