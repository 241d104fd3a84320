import Foundation
import NIOEmbedded
import Testing
@testable import TLSFixtures
@testable import TLSFixturesCLISupport
@testable import TLSFixturesRunner

/// The catalog through the NSC model: the baseline Android app (docs/android.md's strict config) against every
/// scenario, held to the scenario files (`expect.android`, else what ATS does), and the pin scenarios under the pins
/// `pins --android` prints, with their expiration.
@Suite("NSC model over the catalog: the scenario files' Android expectations, and pins with expiry")
struct NSCCatalogTests {
    /// Pins of the facts: not the store's keys, which no verdict of the baseline (it pins nothing) depends on.
    static let keys = ScenarioNSCFacts.Keys(ca: pin(2), pinnedLeaf: pin(1))
    static func pin(_ byte: UInt8) -> String { Data(repeating: byte, count: 32).base64EncodedString() }
    static let today = NSCDay(year: 2026, month: 6, day: 1)

    /// Scenarios the comparison leaves out, each for a reason the model states (docs/android.md, "Not modelled").
    static let notCompared: [String: String] = [
        "client-cert-required":
            "ATS has no verdict on a client certificate (\"n/a\"), and the baseline app presents none",
        "revoked-stapled": "revocation is not modelled: whether the platform asks for and checks a stapled OCSP answer",
    ]

    @Test("the baseline app does, scenario by scenario, what expect.android says, else what ATS does")
    func baselineMatchesFiles() throws {
        let check = try NSCCatalogCheck.baseline(keys: Self.keys, today: Self.today)
        let rows = check.rows(ScenarioCatalog.builtIn.scenarios)
        var compared = 0
        for row in rows where Self.notCompared[row.scenario] == nil {
            let scenario = try ScenarioCatalog.builtIn.scenario(named: row.scenario)
            let expected = try #require(scenario.expect.android?.outcome ?? Self.atsOutcome(scenario.expect.ats),
                                        "\(row.scenario): its file says nothing Android can be compared with")
            let verdict = row.verdict
            #expect(verdict.connects == (expected == .accept),
                    "\(row.scenario): the file says \(expected.rawValue), the model \(verdict.reason ?? "connects")")
            if let step = scenario.expect.android?.step {
                #expect(verdict.step == step,
                        "\(row.scenario): the file says \(step), the model \(String(describing: verdict.step))")
            }
            compared += 1
        }
        #expect(compared == ScenarioCatalog.builtIn.scenarios.count - Self.notCompared.count)
    }

    @Test("every expect.android differs from iOS, or states a cleartext fact: none repeats what ATS says")
    func androidOnlyWhereItDiffers() throws {
        for scenario in ScenarioCatalog.builtIn.scenarios {
            guard let android = scenario.expect.android else { continue }
            let differs = Self.atsOutcome(scenario.expect.ats) != android.outcome || android.step != nil
            #expect(differs, "\(scenario.name): expect.android says what ATS says; leave it out")
            #expect(["(", "AOSP", "OkHttp"].contains { android.because.contains($0) },
                    "\(scenario.name): expect.android.because names no source")
        }
        // The lead's three kinds of difference are each stated: cleartext, a user-installed CA, and the model's pins.
        #expect(try ScenarioCatalog.builtIn.scenario(named: "http").expect.android?.step == .beforeConnecting)
        #expect(try ScenarioCatalog.builtIn.scenario(named: "pin-mitm").expect.android?.step == .certificate)
    }

    static func atsOutcome(_ ats: ATSExpectation) -> AndroidExpectation.Outcome? {
        switch ats {
        case .allow: return .accept
        case .block: return .reject
        case .notApplicable: return nil
        }
    }

    /// The four pin scenarios under the pin-set `pins --android` prints for the published keys (leaf and backup).
    static func pinVerdicts(expiration: NSCDay, userCAs: Bool) throws -> [String: NSCVerdict] {
        let pins = NSCPinFormats.Pins(host: "pinned.fixtures.test", leaf: Self.keys.pinnedLeaf,
                                      backup: Self.pin(3), ca: Self.keys.ca)
        let trustUser = userCAs ? "<certificates src=\"user\"/>" : ""
        // Nested in the fixtures.test entry: a top-level domain-config would inherit base-config's anchors instead.
        let config = nsc("""
            <domain-config><domain includeSubdomains="true">fixtures.test</domain><trust-anchors>
            <certificates src="@raw/tls_fixtures_ca"/>\(trustUser)</trust-anchors>
            \(NSCPinFormats.pinSetXML(pins, expiration: expiration)
                .replacingOccurrences(of: "pinned.fixtures.test</domain>", with: "NAME.fixtures.test</domain>"))
            </domain-config>
            """)
        var verdicts: [String: NSCVerdict] = [:]
        for name in ["pinned", "pin-reissued", "pin-rotated-key", "pin-mitm"] {
            // One domain-config for the scenario's host, inheriting the fixtures.test anchors.
            let document = try NSCDocument.parse(Data(config.replacingOccurrences(of: "NAME", with: name).utf8),
                                                 build: .release)
            let check = NSCCatalogCheck(app: NSCApp(targetSdk: 35), document: document,
                                        options: NSCEvaluationOptions(today: Self.today), keys: Self.keys)
            verdicts[name] = check.rows([try ScenarioCatalog.builtIn.scenario(named: name)]).first?.verdict
        }
        return verdicts
    }

    @Test("pins --android's pin-set: pinned and pin-reissued connect, pin-rotated-key is refused at the certificate")
    func pinsEnforced() throws {
        let verdicts = try Self.pinVerdicts(expiration: NSCDay(year: 2027, month: 6, day: 1), userCAs: true)
        #expect(verdicts["pinned"]?.connects == true, "\(String(describing: verdicts["pinned"]))")
        #expect(verdicts["pin-reissued"]?.connects == true)
        #expect(verdicts["pin-rotated-key"]?.connects == false && verdicts["pin-rotated-key"]?.step == .certificate)
        #expect(verdicts["pin-rotated-key"]?.reason?.contains("pin verification failed") == true)
        // With the user's CAs trusted, pin-mitm passes the trust and fails the pins, as on iOS.
        #expect(verdicts["pin-mitm"]?.connects == false && verdicts["pin-mitm"]?.reason?.contains("pin") == true,
                "\(String(describing: verdicts["pin-mitm"]))")
        // Without them (the default from target SDK 24), the trust refuses it first.
        let strict = try Self.pinVerdicts(expiration: NSCDay(year: 2027, month: 6, day: 1), userCAs: false)
        #expect(strict["pin-mitm"]?.reason?.contains("trust anchor") == true,
                "\(String(describing: strict["pin-mitm"]))")
    }

    @Test("an expired pin-set is not enforced: pin-rotated-key and pin-mitm connect from its expiration day on")
    func pinsExpired() throws {
        let verdicts = try Self.pinVerdicts(expiration: Self.today, userCAs: true)
        #expect(verdicts["pin-rotated-key"]?.connects == true, "\(String(describing: verdicts["pin-rotated-key"]))")
        #expect(verdicts["pin-mitm"]?.connects == true)
        #expect(verdicts["pin-rotated-key"]?.notes.contains { $0.contains("expired on 2026-06-01") } == true)
        let dayBefore = try Self.pinVerdicts(expiration: NSCDay(year: 2026, month: 6, day: 2), userCAs: true)
        #expect(dayBefore["pin-rotated-key"]?.connects == false)
    }

    @Test("the facts a scenario makes: cleartext, the chain's end, the suites, the strength, the SAN")
    func facts() throws {
        func facts(_ name: String) throws -> NSCServerFacts {
            ScenarioNSCFacts.facts(try ScenarioCatalog.builtIn.scenario(named: name), host: "h", keys: Self.keys)
        }
        #expect(try facts("http").cleartext)
        #expect(try facts("pin-mitm").chain?.anchor.heldBy == [.user])
        #expect(try facts("untrusted-root").chain?.anchor.heldBy.isEmpty == true)
        #expect(try facts("intermediate").chain?.anchor.heldBy == ScenarioNSCFacts.defaultCAPlacement)
        #expect(try facts("pinned").chain?.spkiPins == [Self.pin(1), Self.pin(2)])
        #expect(try facts("pin-rotated-key").chain?.spkiPins == [Self.pin(2)])
        #expect(try facts("dhe-only").tls12Suites == ["TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
                                                       "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"])
        #expect(try facts("3des").tls12Suites?.contains("TLS_RSA_WITH_3DES_EDE_CBC_SHA") == true)
        #expect(try facts("rsa1024").chain?.smallestRSAKeyBits == 1024)
        #expect(try facts("sha1-intermediate").chain?.weakestDigest == .sha1)
        #expect(try facts("no-san").chain?.leafHasSubjectAltName == false)
        #expect(try facts("wrong-host").stack == .refuses(step: .afterHandshake, because:
            "the leaf does not name the host: OkHttp's host name check fails after the handshake"))
        #expect(try facts("expired").stack != .accepts)
        #expect(try facts("rsa512").stack == .accepts, "the model, not OpenSSL's level 2, judges key sizes")
    }

    @Test("the control API's description and the dashboard carry expect.android")
    func carried() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let fleet = try await FleetTests.fleet(on: loop, origin: Date(timeIntervalSince1970: 1_900_000_000))
        let leased = try await fleet.startLeased(LeaseRequest(scenario: .catalog("pin-mitm"), ttl: 60))
        let described = try FixtureDescription(leased, proxy: nil)
        #expect(described.expect.android?.outcome == .reject && described.expect.android?.step == .certificate)
        let json = try FixtureAPI.encoder().encode(described)
        let decoded = try FixtureAPI.decoder().decode(FixtureDescription.self, from: json)
        #expect(decoded.expect.android == described.expect.android)
        await fleet.stop()
        let http = try ScenarioCatalog.builtIn.scenario(named: "http")
        let cell = DashboardPage.androidCell(http.expect.android)
        #expect(cell.contains("android-reject") && cell.contains("before connecting") && cell.contains("fix: "))
        #expect(DashboardPage.androidCell(nil) == "—")
    }

    @Test("expect.android is decoded strictly: an unknown key, an empty because, a step on an accepted scenario")
    func strictDecoding() throws {
        func decode(_ json: String) throws -> AndroidExpectation {
            try JSONDecoder().decode(AndroidExpectation.self, from: Data(json.utf8))
        }
        #expect(try decode(#"{"outcome": "reject", "step": "certificate", "because": "x (y)"}"#).step == .certificate)
        #expect(throws: DecodingError.self) { try decode(#"{"outcome": "reject", "because": "x", "steps": "y"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"outcome": "reject", "because": " "}"#) }
        #expect(throws: DecodingError.self) {
            try decode(#"{"outcome": "accept", "step": "certificate", "because": "x"}"#)
        }
        #expect(throws: DecodingError.self) { try decode(#"{"outcome": "maybe", "because": "x"}"#) }
    }
}
