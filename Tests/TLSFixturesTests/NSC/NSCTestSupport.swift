import Foundation
import Testing
import TLSFixtures

/// One hand-written case of the NSC model: a config (or none), an app, and what Android does with it, with the place in
/// AOSP's sources or Android's documentation that says so. AOSP's tests connect to the real android.com; here the same
/// servers are facts (`NSCFacts`), chains ending at a CA in the system store.
struct NSCCase: Sendable, CustomStringConvertible {
    /// The name the case goes by in the test report.
    var name: String
    /// Where Android says so: an AOSP file and test or function, or a section of the documentation.
    var source: String
    /// network_security_config.xml; nil for an app that names none.
    var xml: String?
    var app = NSCApp(targetSdk: 35)
    /// The `_debug` twin, for a debug build.
    var debugResource: String?
    var expectation: Expectation

    /// What Android does.
    enum Expectation: Sendable {
        /// The app's config does not parse: the first connection fails with this error.
        case refused(ErrorCode<NSCConfigError>)
        /// For each probe, whether the connection completes.
        case connections([Probe])
        /// Something about the config resolved for a host.
        case config(host: String, holds: @Sendable (NSCEffectiveConfig) -> Bool)
    }

    /// A server and whether the app reaches it.
    struct Probe: Sendable {
        var facts: NSCServerFacts
        var connects: Bool
        var step: RefusalStep?

        init(_ facts: NSCServerFacts, connects: Bool, step: RefusalStep? = nil) {
            self.facts = facts
            self.connects = connects
            self.step = step
        }
    }

    var description: String { name }

    func document() throws -> NSCDocument? {
        guard let xml else { return nil }
        return try NSCDocument.parse(Data(xml.utf8), build: app.build,
                                     debugResource: debugResource.map { Data($0.utf8) })
    }

    /// Runs the case: every expectation checked, each failure naming the case and its source.
    func check(today: NSCDay = NSCDay(year: 2026, month: 6, day: 1)) throws {
        let comment = Comment(rawValue: "\(name) (\(source))")
        switch expectation {
        case .refused(let code):
            #expect(throws: NSCConfigError.self, comment) { try document() }
            do { _ = try document() } catch let error as NSCConfigError {
                #expect(error.code == code, "\(comment): \(error)")
            }
        case .connections(let probes):
            let config = NSCApplicationConfig(document: try document(), app: app)
            let evaluator = NSCEvaluator(config: config, app: app, options: NSCEvaluationOptions(today: today))
            for probe in probes {
                let verdict = evaluator.evaluate(probe.facts)
                #expect(verdict.connects == probe.connects,
                        "\(comment): \(probe.facts.host): \(verdict.reason ?? "connects")")
                if let step = probe.step { #expect(verdict.step == step, "\(comment): \(probe.facts.host)") }
            }
        case .config(let host, let holds):
            let config = NSCApplicationConfig(document: try document(), app: app)
            let resolved = config.config(forHost: host).config
            #expect(holds(resolved), "\(comment): \(host): \(resolved)")
        }
    }
}

/// The servers AOSP's tests connect to, as facts.
enum NSCFacts {
    /// The SPKI pin AOSP's pins1.xml and nested_domains.xml pin for android.com's chain (a certificate on it, 2015).
    static let androidComChainPin = "zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w="
    /// NetworkSecurityConfigTests' G2_SPKI_SHA256, android.com's intermediate in 2015, as base64.
    static let g2Pin = Data([0xec, 0x72, 0x29, 0x69, 0xcb, 0x64, 0x20, 0x0a, 0xb6, 0x63, 0x8f, 0x68, 0xac, 0x53, 0x8e,
                             0x40, 0xab, 0xab, 0x5b, 0x19, 0xa6, 0x48, 0x56, 0x61, 0x04, 0x2a, 0x10, 0x61, 0xc4, 0x61,
                             0x27, 0x76]).base64EncodedString()

    /// A publicly trusted server (android.com, google.com): its root is in the system store, and in the PEM and DER
    /// bundles AOSP's tests ship as res/raw (ca_certs_pem, ca_certs_der hold the roots those hosts chain to).
    static func publicServer(_ host: String, pins: [String] = [androidComChainPin, g2Pin]) -> NSCServerFacts {
        NSCServerFacts(host: host, chain: NSCChain(
            anchor: NSCChainAnchor(name: "a public root", heldBy: [.system, .resource("raw/ca_certs_pem"),
                                                                   .resource("raw/ca_certs_der")]),
            spkiPins: pins))
    }

    /// A server whose chain ends at a CA the user installed (and nowhere else).
    static func userCAServer(_ host: String) -> NSCServerFacts {
        NSCServerFacts(host: host, chain: NSCChain(anchor: NSCChainAnchor(name: "a user CA", heldBy: [.user]),
                                                   spkiPins: ["userCAPin"]))
    }

    /// A server whose chain ends at the CA bundled as `@raw/NAME`.
    static func bundledCAServer(_ host: String, resource: String = "raw/my_ca", pins: [String] = []) -> NSCServerFacts {
        NSCServerFacts(host: host, chain: NSCChain(
            anchor: NSCChainAnchor(name: "a bundled CA", heldBy: [.resource(resource)]), spkiPins: pins))
    }

    /// The same host over plain HTTP.
    static func cleartext(_ host: String) -> NSCServerFacts { NSCServerFacts(host: host, cleartext: true) }
}

/// A config file in a line: `<network-security-config>BODY</network-security-config>`.
func nsc(_ body: String) -> String {
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<network-security-config>\(body)</network-security-config>"
}
