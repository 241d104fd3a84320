import Foundation
import XCTest
import TLSFixtures

/// The catalog's pinning rows (scenarios.md) against each pin style.
final class ATSPinTests: XCTestCase {
    typealias F = ATSFactsKit
    typealias P = ATSPinFixtures

    let leafSPKI = [F.pin(P.pinnedKey)]
    let caSPKI = [F.builtInCA.spkiSHA256]

    func outcome(_ rule: PinRule, _ name: String) -> PinOutcome {
        let facts = P.facts(name)
        return PinPolicy(rule).evaluate(host: "\(name).fixtures.test", presentedChain: facts.presentedChain, trust: facts.trust)
    }

    func testPinningRows() {
        // row → (leaf SPKI, CA SPKI, whole leaf certificate)
        let expected: [String: (leaf: Bool, ca: Bool, certificate: Bool)] = [
            "pinned": (true, true, true),              // "all pins match"
            "pin-reissued": (true, true, false),       // "certificate pins fail, SPKI pins match"
            "pin-rotated-key": (false, true, false),   // "leaf pins fail, CA pins match"
            "pin-mitm": (false, false, false),         // "every pin fails"
        ]
        for (name, want) in expected {
            XCTAssertEqual(outcome(.pinnedDomainsLeaf(spki: leafSPKI), name).matched, want.leaf, "\(name) leaf SPKI")
            XCTAssertEqual(outcome(.pinnedDomainsCA(spki: caSPKI), name).matched, want.ca, "\(name) CA SPKI")
            XCTAssertEqual(outcome(.certificatesDER([P.publishedLeaf.der]), name).matched, want.certificate, "\(name) certificate")
            XCTAssertEqual(outcome(.certificateFingerprints([P.publishedLeaf.sha256Fingerprint.uppercased()]), name).matched,
                           want.certificate, "\(name) fingerprint")
            XCTAssertEqual(outcome(.pinnedDomains(leaf: leafSPKI, ca: caSPKI), name).matched, want.leaf && want.ca, "\(name) both")
            // TrustKit / Alamofire public keys: any key in the chain (leaf or CA).
            XCTAssertEqual(outcome(.trustKit(spki: leafSPKI + [P.backupPin]), name).matched, want.leaf, "\(name) TrustKit leaf")
            XCTAssertEqual(outcome(.trustKit(spki: caSPKI + [P.backupPin]), name).matched, want.ca, "\(name) TrustKit CA")
            XCTAssertEqual(outcome(.publicKeys(spki: caSPKI), name).matched, want.ca, "\(name) public keys")
        }
    }

    /// Whole-certificate pins match anywhere in the chain: pinning the CA's .cer survives reissue and rotation.
    func testCertificatePinOfCAMatchesAnywhereInChain() {
        for name in ["pinned", "pin-reissued", "pin-rotated-key"] {
            XCTAssertTrue(outcome(.certificatesDER([F.builtInCA.der]), name).matched, name)
        }
        XCTAssertFalse(outcome(.certificatesDER([F.builtInCA.der]), "pin-mitm").matched)
    }

    /// TrustKit: "default trust must pass first, then any chain certificate must match".
    func testTrustKitRequiresDefaultTrust() {
        var facts = P.facts("pinned")
        facts.trust?.chainError = F.verifyError(10, "certificate has expired")
        let result = PinPolicy(.trustKit(spki: leafSPKI)).evaluate(host: "pinned.fixtures.test",
                                                                   presentedChain: facts.presentedChain, trust: facts.trust)
        XCTAssertFalse(result.matched)
        XCTAssertTrue(result.reason.hasPrefix("default trust fails before pins are checked"), result.reason)
        // NSPinnedDomains modes leave trust to ATS: the pin itself still matches.
        XCTAssertTrue(PinPolicy(.pinnedDomainsLeaf(spki: leafSPKI)).evaluate(
            host: "pinned.fixtures.test", presentedChain: facts.presentedChain, trust: facts.trust).matched)
    }

    /// The same rows through the evaluator with an NSPinnedDomains policy from PinFormats.
    func testPinnedDomainsThroughTheEvaluator() throws {
        for (name, leafOK, caOK) in [("pinned", true, true), ("pin-reissued", true, true),
                                     ("pin-rotated-key", false, true), ("pin-mitm", false, false)] {
            let host = "\(name).fixtures.test"
            let url = URL(string: "https://\(host)/")!
            let facts = P.facts(name)
            let leafOnly = try PinFormats.pinnedDomainsDictionary(PinSet(domain: host, leafPins: leafSPKI, backupPin: P.backupPin))
            let caOnly = try PinFormats.pinnedDomainsDictionary(PinSet(domain: host, leafPins: [], caPins: caSPKI))
            XCTAssertEqual(ATSEvaluator(policy: ATSPolicy(leafOnly)).evaluate(url: url, facts: facts).allowed, leafOK, name)
            XCTAssertEqual(ATSEvaluator(policy: ATSPolicy(caOnly)).evaluate(url: url, facts: facts).allowed, caOK, name)
            let blocked = ATSEvaluator(policy: ATSPolicy(leafOnly)).evaluate(url: url, facts: facts)
            if !leafOK {
                XCTAssertEqual(blocked.violations.map(\.rule), [.pinning], name)
                // The reference: a pin mismatch fails with -1200 / -9802, as the scenario file states it.
                XCTAssertEqual(blocked.likelyError?.urlErrorCode, -1200)
                XCTAssertEqual(blocked.likelyError?.streamErrorCode, -9802)
                XCTAssertEqual(blocked.likelyError, try ScenarioCatalog.builtIn.scenario(named: name).expect.refusal?.apple?.error, name)
            }
        }
    }

    func testNSPinnedDomainsSnippet() throws {
        let set = PinSet(domain: "pinned.fixtures.test", leafPins: leafSPKI, caPins: caSPKI, backupPin: P.backupPin,
                         includesSubdomains: true)
        let xml = try PinFormats.pinnedDomainsPlistXML(set)
        let policy = try ATSPolicy(infoPlist: Data(xml.utf8))
        XCTAssertEqual(policy.warnings, [])
        let entry = try XCTUnwrap(policy.pinnedDomains["pinned.fixtures.test"])
        XCTAssertEqual(entry.includesSubdomains, true)
        XCTAssertEqual(entry.leafIdentities, leafSPKI + [P.backupPin], "the backup sits with the leaf pins")
        XCTAssertEqual(entry.caIdentities, caSPKI)
        XCTAssertTrue(xml.contains("<key>SPKI-SHA256-BASE64</key>"))
        XCTAssertThrowsError(try PinFormats.pinnedDomainsDictionary(PinSet(domain: "x", leafPins: [])))
    }

    func testTrustKitConfiguration() throws {
        let source = try PinFormats.trustKitSwift(PinSet(domain: "pinned.fixtures.test", leafPins: leafSPKI,
                                                         backupPin: P.backupPin))
        XCTAssertTrue(source.contains("TrustKit.initSharedInstance(withConfiguration: trustKitConfig)"))
        XCTAssertTrue(source.contains("kTSKEnforcePinning: true,"))
        XCTAssertTrue(source.contains("kTSKIncludeSubdomains: false,"))
        XCTAssertTrue(source.contains("\"\(leafSPKI[0])\", // leaf key"))
        XCTAssertTrue(source.contains("\"\(P.backupPin)\", // backup key"))
        XCTAssertTrue(source.contains("\"pinned.fixtures.test\": ["))
        XCTAssertThrowsError(try PinFormats.trustKitSwift(PinSet(domain: "x", leafPins: leafSPKI))) { error in
            XCTAssertEqual((error as? PinFormatError)?.code, .trustKitNeedsTwoPins)
            XCTAssertTrue("\(error)".contains("at least two distinct pins and 1 were given; add a backup pin"), "\(error)")
            XCTAssertTrue("\(error)".contains("backup pin"))
        }
        // The same pin twice is still one pin.
        XCTAssertThrowsError(try PinFormats.trustKitSwift(PinSet(domain: "x", leafPins: leafSPKI, backupPin: leafSPKI[0])))
    }
}
