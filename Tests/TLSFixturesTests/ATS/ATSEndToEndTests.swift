import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesCLISupport

/// The ATS model against real fixtures: every verdict comes from facts gathered by real handshakes.
@Suite("ATS model against served scenarios")
struct ATSEndToEndTests {
    static var store: CertificateStore { get async { await TestEnvironment.suiteStoreWithSlowKeys("ATSEndToEnd") } }

    /// Starts a scenario and observes it as an ATS test would (by its qualified name, device roots trusted). nil only
    /// for a scenario whose file declares what the linked OpenSSL may lack (`expect.handshake.requires`: `ssl-v3`,
    /// `rc4`, `3des`), when the system's own `openssl` lacks it too; any other scenario reported unsupported fails
    /// here, so one that regressed to "unsupported" cannot pass by being skipped.
    static func observe(_ name: String) async throws -> ScenarioATSProbe.Observation? {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        do {
            return try await ScenarioATSProbe.observe(scenario, store: store)
        } catch let unsupported as ScenarioUnsupported {
            guard let handshake = scenario.expect.handshake, let requirement = handshake.requires else {
                Issue.record(Comment(rawValue: "\(name) was reported unsupported, but its file declares nothing the linked "
                                     + "OpenSSL may lack (expect.handshake.requires): \(unsupported)"))
                return nil
            }
            #expect(unsupported.reason.contains("unsupported by the linked OpenSSL"), "\(unsupported)")
            #expect(try await Self.systemOpenSSLLacks(requirement, handshake: handshake),
                    Comment(rawValue: "\(name) requires \(requirement), which the system's openssl has, yet the linked "
                            + "OpenSSL was reported without it: \(unsupported)"))
            return nil
        }
    }

    /// Whether the `openssl` command (the same OpenSSL 3 build, judged by its own option and cipher lists) lacks what a
    /// scenario requires: SSLv3 (`s_client` offers `-ssl3` only when compiled in) or the file's cipher suites.
    static func systemOpenSSLLacks(_ requirement: String, handshake: Expectations.Handshake) async throws -> Bool {
        if requirement == "SSLv3" {
            let help = try await External.openssl(["s_client", "-help"]).combined
            return !help.split(separator: "\n").contains { $0.hasPrefix(" -ssl3 ") }
        }
        let list = handshake.ciphers.joined(separator: ":") + ":@SECLEVEL=0"
        let ciphers = try await External.openssl(["ciphers", "-v", list])
        return ciphers.status != 0 && ciphers.combined.contains("no cipher match")
    }

    /// Unsupported only where the scenario's file requires what the linked OpenSSL lacks (see `observe`).
    @Test("default verdict equals the scenario file's; the smallest exception found admits it",
          .requires(Tools.openssl), arguments: ScenarioCatalog.builtIn.names)
    func verdicts(name: String) async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        guard scenario.expect.ats != .notApplicable else {
            #expect(scenario.tls?.clientAuth == .required, "only mutual TLS is outside ATS's scope")
            return
        }
        guard let observation = try await Self.observe(name) else {
            // Unsupported by the linked OpenSSL (observe checked that and why): the verdict on what its file declares.
            try await Self.expectDeclaredVerdict(scenario)
            return
        }
        let verdict = ATSEvaluator().evaluate(url: observation.url, facts: observation.facts)
        #expect(verdict.atsApplies, "\(name): ATS must apply to \(observation.url) (a qualified name)")
        #expect(verdict.allowed == (scenario.expect.ats == .allow), "\(name): \(verdict)")

        let finding = ATSExceptionFinder().find(url: observation.url, facts: observation.facts)
        let expected = try #require(scenario.expect.atsFix, "\(name) has no atsFix")
        switch (expected.kind, finding.result) {
        case (.notNeeded, .notNeeded):
            break
        case (.impossible, .impossible):
            break
        case (.exception, .exception(let dictionary, _)), (.arbitraryLoads, .exception(let dictionary, _)):
            #expect(finding.usesArbitraryLoads == (expected.kind == .arbitraryLoads), "\(name): \(dictionary)")
            if expected.kind == .exception {
                let keys = try #require(finding.exceptionDomainKeys, "\(name): no exception entry")
                #expect(Set(keys.keys) == Set((expected.domainKeys ?? [:]).keys), "\(name): \(keys)")
            }
            #expect(finding.requiresTrustOverride == (expected.alsoRequires == "trust-override"), "\(name)")
            // The XML as printed parses back and, fed to the evaluator, admits the server.
            let xml = try #require(finding.plistXML)
            let policy = try ATSPolicy.parse(plist: Data(xml.utf8))
            #expect(policy.warnings.isEmpty, "\(name): \(policy.warnings)")
            let options = ATSEvaluationOptions(trustOverride: finding.requiresTrustOverride)
            let admitted = ATSEvaluator(policy: policy, options: options).evaluate(url: observation.url, facts: observation.facts)
            #expect(admitted.allowed, "\(name): the exception does not admit it: \(admitted)")
        default:
            Issue.record("\(name): expected \(expected.kind), found \(finding.result)")
        }
    }

    /// The IANA code points (RFC 5246, RFC 4492, the IANA TLS registry) of the suites that scenarios the linked OpenSSL
    /// may lack declare, by OpenSSL's names: that OpenSSL cannot translate a suite it does not have.
    static let declaredSuites: [String: UInt16] = [
        "AES128-SHA": 0x002F, "AES256-SHA": 0x0035, "RC4-SHA": 0x0005, "ECDHE-RSA-RC4-SHA": 0xC011,
        "DES-CBC3-SHA": 0x000A, "ECDHE-RSA-DES-CBC3-SHA": 0xC012,
    ]

    /// A scenario this OpenSSL cannot serve (ssl-v3, rc4, 3des on Debian's) still gets a verdict, and one that could
    /// fail: the ATS model judges the control's facts (ats-compliant's chain, served here) with the protocol and
    /// suites the scenario's file declares in place of its own, and must agree with the file's `ats` and `atsFix`.
    static func expectDeclaredVerdict(_ scenario: Scenario) async throws {
        let handshake = try #require(scenario.expect.handshake, "\(scenario.name) declares no handshake")
        let version = try #require(TLSVersion(parsing: handshake.protocol),
                                   "\(scenario.name): \(handshake.protocol) is no TLS version")
        let suites = try handshake.ciphers.map { name in
            let code = try #require(Self.declaredSuites[name], "\(scenario.name): no IANA code for \(name) here")
            return TLSRegistry.cipherSuiteName(code)
        }
        let control = try #require(try await Self.observe("ats-compliant"))
        var facts = control.facts
        facts.accepted = [version: suites]
        let verdict = ATSEvaluator().evaluate(url: control.url, facts: facts)
        #expect(verdict.allowed == (scenario.expect.ats == .allow), "\(scenario.name), as declared: \(verdict)")
        let finding = ATSExceptionFinder().find(url: control.url, facts: facts)
        let expected = try #require(scenario.expect.atsFix, "\(scenario.name) has no atsFix")
        switch (expected.kind, finding.result) {
        case (.impossible, .impossible), (.notNeeded, .notNeeded): break
        case (.exception, .exception), (.arbitraryLoads, .exception): break
        default: Issue.record("\(scenario.name), as declared: expected \(expected.kind), found \(finding.result)")
        }
    }

    /// nscurl's order: default; arbitrary loads; TLS 1.3/1.2/1.1/1.0; PFS off; PFS off + insecure HTTP;
    /// TLS 1.3…1.0 with PFS off; the same with insecure HTTP too.
    @Test("ats diagnose gives nscurl's PASS/FAIL pattern", arguments: [
        // Everything is acceptable to ATS: every configuration loads.
        ("ats-compliant", [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]),
        // Only a TLSv1.0 minimum (or ATS off) reaches a TLS 1.0 server; PFS is not the problem.
        ("tls-v1-0", [false, true, false, false, false, true, false, false, false, false, false, true, false, false, false, true]),
        // Static RSA needs forward secrecy off; a TLSv1.3 minimum excludes the TLS 1.2-only server.
        ("static-rsa", [false, true, false, false, false, false, true, true, false, true, true, true, false, true, true, true]),
        // Default trust fails everywhere: nscurl has no trust override.
        ("self-signed", [false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false]),
    ])
    func diagnose(name: String, pattern: [Bool]) async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        try await withFixture(scenario, store: Self.store) { fixture in
            var options = ProbeOptions()
            options.trustRoots = fixture.prepared.deviceTrustRoots
            let target = ProbeTarget(host: scenario.qualifiedHost, port: fixture.port, connectAddress: "127.0.0.1")
            let report = await ATSDiagnostics().run(url: fixture.qualifiedURL, handshaker: ATSLiveHandshaker(target: target, probeOptions: options))
            #expect(report.results.count == 16)
            #expect(report.results.map(\.passed) == pattern, "\(name):\n\(report.text(verbose: true))")
            let text = report.text()
            #expect(text.contains(String(repeating: "=", count: 80)))
            #expect(text.components(separatedBy: "Result : PASS").count - 1 == pattern.filter { $0 }.count)
        }
    }

    /// PASS means the load completed with no error (nscurl's header). A server that demands a client certificate
    /// completes a TLS 1.3 handshake on the client's side and then refuses the load, so nscurl FAILs every configuration.
    @Test("ats diagnose: a server demanding a client certificate fails all 16 configurations")
    func diagnoseClientCertificateRequired() async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "client-cert-required")
        try await withFixture(scenario, store: Self.store) { fixture in
            var options = ProbeOptions()
            options.trustRoots = fixture.prepared.deviceTrustRoots
            let target = ProbeTarget(host: scenario.qualifiedHost, port: fixture.port, connectAddress: "127.0.0.1")
            let report = await ATSDiagnostics().run(url: fixture.qualifiedURL, handshaker: ATSLiveHandshaker(target: target, probeOptions: options))
            let text = report.text(verbose: true)
            #expect(report.results.count == 16)
            #expect(report.results.allSatisfy { !$0.passed }, "\(text)")
            #expect(text.components(separatedBy: "Code=-1206").count - 1 == 16, "\(text)")
        }
    }

    @Test("pin outcomes of the pinning scenarios match the catalog", arguments: ["pinned", "pin-reissued", "pin-rotated-key", "pin-mitm"])
    func pins(name: String) async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        let expected = try #require(scenario.expect.pins)
        // The app's pins: the published pinned key, the built-in CA, and the `pinned` certificate as a .cer.
        let pinned = try await Self.store.prepare(try ScenarioCatalog.builtIn.scenario(named: "pinned"))
        let leafPin = pinned.pins.pinnedLeaf
        let caPin = pinned.pins.ca
        let certificate = try #require(pinned.credential?.certificate.der)

        let observation = try #require(try await Self.observe(name))
        let host = scenario.qualifiedHost
        let chain = observation.facts.presentedChain
        let trust = observation.facts.trust
        #expect(PinPolicy(.pinnedDomainsLeaf(spki: [leafPin])).evaluate(host: host, presentedChain: chain, trust: trust).matched == expected.leafSPKI)
        #expect(PinPolicy(.pinnedDomainsCA(spki: [caPin])).evaluate(host: host, presentedChain: chain, trust: trust).matched == expected.caSPKI)
        #expect(PinPolicy(.certificatesDER([certificate])).evaluate(host: host, presentedChain: chain, trust: trust).matched == expected.certificate)
        // TrustKit with the leaf and a backup pin: default trust first, then any chain certificate.
        let trustKit = PinPolicy(.trustKit(spki: [leafPin, pinned.pins.backup])).evaluate(host: host, presentedChain: chain, trust: trust)
        #expect(trustKit.matched == expected.leafSPKI, "\(trustKit)")
        // Pinning never relaxes trust: the MITM chain is trusted (the device trusts the interception root) and still fails.
        if name == "pin-mitm" {
            #expect(trust?.chainError == nil, "pin-mitm must be trusted by the device: \(String(describing: trust?.chainError))")
            let policy = ATSPolicy(["NSPinnedDomains": .dictionary([host: .dictionary(["NSPinnedCAIdentities": .array([.dictionary(["SPKI-SHA256-BASE64": .string(caPin)])])])])])
            let verdict = ATSEvaluator(policy: policy).evaluate(url: observation.url, facts: observation.facts)
            #expect(!verdict.allowed && verdict.violations.contains { $0.rule == .pinning })
        }
    }
}

@Suite("ats commands: input errors and the localhost warning", .ownThreads)
struct ATSCLITests {
    // A plist without NSAppTransportSecurity is not an error: it is ATS's defaults (CLINewUserTrialTests).
    @Test("malformed plist, an NSAppTransportSecurity that is not a dictionary: one-line errors", arguments: [
        ("<plist><dict><key>broken", ["malformed property list", "plutil -lint"]),
        ("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>NSAppTransportSecurity</key><string>yes</string></dict></plist>",
         ["NSAppTransportSecurity is a string", "<dict>"]),
    ])
    func plistErrors(contents: String, fragments: [String]) throws {
        let plist = try TestEnvironment.file(Data(contents.utf8), name: "Info.plist")
        let result = try TestEnvironment.tlsFixtures(["ats", "check", "--plist", plist, "https://ats-compliant.fixtures.test:1/"])
        CLIInputTests.expectOneLineError(result, mentioning: fragments)
    }

    @Test("a URL without a host")
    func noHost() throws {
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ats", "check", "https:///path"]), mentioning: ["no host"])
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ats", "diagnose", "not a url"]), mentioning: ["not a URL"])
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ats", "exception", "no-such-scenario"]), mentioning: ["unknown scenario"])
    }

    @Test("reading options take their listed values only, with one-line errors", arguments: [
        ("--ip-addresses", "loopback"), ("--third-party-keys", "yes"), ("--dhe", "maybe"), ("--subdomains", "two"), ("--cipher-suites", "2016"),
        ("--web-view-pins", "strict"),
    ])
    func readingErrors(flag: String, value: String) throws {
        let result = try TestEnvironment.tlsFixtures(["ats", "check", flag, value, "https://ats-compliant.fixtures.test:1/"])
        CLIInputTests.expectOneLineError(result, mentioning: [flag, value])
    }

    @Test("a web load with mismatched NSPinnedDomains: admitted under the default reading, said so; refused under --web-view-pins enforced")
    func webViewPins() async throws {
        try await withFixture("ats-compliant", store: TestEnvironment.sharedStore) { fixture in
            let host = "ats-compliant.fixtures.test"
            let plist = try TestEnvironment.file(Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict><key>NSPinnedDomains</key><dict>
                <key>\(host)</key><dict><key>NSPinnedLeafIdentities</key><array><dict><key>SPKI-SHA256-BASE64</key>
                <string>\(Data(repeating: 7, count: 32).base64EncodedString())</string></dict></array></dict>
                </dict></dict></dict></plist>
                """.utf8), name: "Info.plist")
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            let arguments = ["ats", "check", "--plist", plist, "--trust-ca", ca, "--load-kind", "web",
                             "--resolve", "\(host):\(fixture.port):127.0.0.1", "https://\(host):\(fixture.port)/"]
            let lenient = try await TestEnvironment.tlsFixturesAwaiting(arguments)
            #expect(lenient.status == 0, "\(lenient.combined)")
            #expect(lenient.stdout.contains("web view (medium confidence)") && lenient.stdout.contains("they would refuse this server"),
                    "\(lenient.stdout)")
            #expect(lenient.stdout.contains("web-view-pins (medium, notEnforced)"), "\(lenient.stdout)")
            let strict = try await TestEnvironment.tlsFixturesAwaiting(arguments + ["--web-view-pins", "enforced"])
            #expect(strict.status == 2, "\(strict.combined)")
            #expect(strict.stdout.contains("violates pinning"), "\(strict.stdout)")
            // A URLSession load of the same URL applies the pins whatever the reading.
            let data = try await TestEnvironment.tlsFixturesAwaiting(
                arguments.filter { $0 != "web" && $0 != "--load-kind" })
            #expect(data.status == 2, "\(data.combined)")
        }
    }

    @Test("checking localhost or an IP literal says loudly that ATS does not apply")
    func localhostTrap() async throws {
        try await withFixture("tls-v1-0", store: ATSEndToEndTests.store) { fixture in
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            for host in ["localhost", "127.0.0.1"] {
                let result = try await TestEnvironment.tlsFixturesAwaiting(["ats", "check", "--os", "ios16", "--trust-ca", ca, "https://\(host):\(fixture.port)/"])
                #expect(result.stdout.contains("ATS does not apply"), "\(host): \(result.stdout)")
                #expect(result.stdout.contains("NAME.fixtures.test"))
            }
            // The stricter reading of iOS 17 puts loopback under ATS too: blocked, with the reading named.
            let strict = try await TestEnvironment.tlsFixturesAwaiting(
                ["ats", "check", "--ip-addresses", "all", "--trust-ca", ca,
                "https://127.0.0.1:\(fixture.port)/"])
            #expect(strict.status == 2, "\(strict.stdout + strict.stderr)")
            #expect(strict.stdout.contains("ios17-external-ips (medium, every)"), "\(strict.stdout)")
            // The default reading keeps 127.0.0.1 exempt on iOS 17 and says which rule (and confidence) decided. The load
            // is still blocked, by default trust rather than ATS: leaves name no IP address (only `ip-san` does), and
            // the exemption never lifts the host-name check.
            let loopback = try await TestEnvironment.tlsFixturesAwaiting(["ats", "check", "--trust-ca", ca, "https://127.0.0.1:\(fixture.port)/"])
            #expect(loopback.status == 2)
            #expect(loopback.stdout.contains("ATS does not apply") && loopback.stdout.contains("local-exemption (high)"), "\(loopback.stdout)")
            #expect(loopback.stdout.contains("violates hostname") && loopback.stdout.contains("-9843"), "\(loopback.stdout)")
            #expect(!loopback.stdout.contains("minimum TLS version"), "ATS's own rules must not be applied: \(loopback.stdout)")
            // By its qualified name the same server is blocked (exit 2), with the violated rule named.
            let qualified = try await TestEnvironment.tlsFixturesAwaiting(["ats", "check", "--trust-ca", ca, "--resolve", "tls-v1-0.fixtures.test:\(fixture.port):127.0.0.1",
                                                             "https://tls-v1-0.fixtures.test:\(fixture.port)/", "--json"])
            #expect(qualified.status == 2)
            let json = try #require(try JSONSerialization.jsonObject(with: qualified.stdoutData) as? [String: Any])
            #expect(json["allowed"] as? Bool == false)
        }
    }
}
