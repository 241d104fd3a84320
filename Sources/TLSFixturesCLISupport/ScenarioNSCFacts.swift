import Foundation
import TLSFixturesNSC
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesWire

/// A catalog scenario as the NSC model sees it, without a server: what its file and plan say (plain HTTP or TLS, the
/// versions and suites, where its chain ends) and the published pins of the store.
package enum ScenarioNSCFacts {
    /// Where the kit's CA is on the device: `@raw/tls_fixtures_ca` (bundled with the app, docs/android.md's
    /// setup), `user` (installed in Settings), `system` (a rooted image). Several may hold it.
    package static let defaultCAPlacement: Set<NSCCertificateSource> = [.resource("raw/tls_fixtures_ca")]

    /// The SPKI pins the facts can name: the built-in CA's and the published `pinned` key's (the keys of other
    /// scenarios' leaves are their own, and no published pin matches them).
    package struct Keys: Sendable, Equatable {
        package var ca: String
        package var pinnedLeaf: String

        package init(ca: String, pinnedLeaf: String) {
            self.ca = ca
            self.pinnedLeaf = pinnedLeaf
        }

        /// The store's published pins (`pinned`'s key and the CA), as `tls-fixtures pins` prints them.
        package init(_ pins: FixturePins) {
            self.init(ca: pins.ca, pinnedLeaf: pins.pinnedLeaf)
        }
    }

    /// The host an Android test reaches a fixture by: the qualified name through the runner's proxy (or a hosts
    /// line), or `localhost` through `adb reverse`.
    package enum HostChoice: String, Sendable, CaseIterable {
        case qualified
        case localhost

        package func host(for scenario: Scenario) -> String {
            switch self {
            case .qualified:
                return scenario.qualifiedHost
            case .localhost:
                return "localhost"
            }
        }
    }

    /// The facts of `scenario` at `host`, the kit's CA held by `caPlacement`.
    package static func facts(_ scenario: Scenario, host: String, keys: Keys,
                              caPlacement: Set<NSCCertificateSource> = defaultCAPlacement) -> NSCServerFacts {
        guard let tls = scenario.tls, let plan = scenario.certificate else {
            return NSCServerFacts(host: host, cleartext: true)
        }
        let anchor = anchor(plan, caPlacement: caPlacement)
        var pins: [String] = []
        if plan.keyName == "pinned" { pins.append(keys.pinnedLeaf) }
        if case .authority(let authority) = plan.leafIssuer, authority == .root || !authority.isRoot {
            pins.append(keys.ca)
        }
        let chain = NSCChain(anchor: anchor, spkiPins: pins, smallestRSAKeyBits: smallestRSAKeyBits(plan),
                             weakestDigest: weakestDigest(plan), leafHasSubjectAltName: plan.subjectAltName)
        return NSCServerFacts(host: host, minVersion: tls.minVersion, maxVersion: tls.maxVersion,
                              tls12Suites: suites(tls.ciphers), chain: chain,
                              stack: stack(scenario, tls: tls, anchorHeld: !anchor.heldBy.isEmpty))
    }

    /// The leaf's RSA modulus, or the intermediates' (every built-in intermediate is RSA-2048); the built-in roots
    /// are EC.
    static func smallestRSAKeyBits(_ plan: CertificatePlan) -> Int? {
        var sizes: [Int] = []
        if case .rsa(let bits) = plan.key { sizes.append(bits) }
        if case .authority(let authority) = plan.leafIssuer, !authority.isRoot { sizes.append(2048) }
        return sizes.min()
    }

    /// MD5 or SHA-1 where the leaf is signed with it or its intermediate is (`sha1-intermediate`).
    static func weakestDigest(_ plan: CertificatePlan) -> NSCDigest? {
        if plan.digest == .md5 { return .md5 }
        if plan.digest == .sha1 || plan.leafIssuer == .authority(.sha1Intermediate) { return .sha1 }
        return nil
    }

    /// OpenSSL's verify failures the model judges itself (Conscrypt's own strength rules, OkHttp's name rule), so that
    /// OpenSSL's stricter level-2 limits do not stand in for Android's.
    static let judgedByTheModel: Set<String> = [
        "EE certificate key too weak", "CA certificate key too weak", "CA signature digest algorithm too weak",
    ]

    /// Where the chain ends and who holds that certificate. The interception root stands for a debugging proxy's CA,
    /// which on Android the user installs (the scenario file assumes the device trusts it).
    static func anchor(_ plan: CertificatePlan, caPlacement: Set<NSCCertificateSource>) -> NSCChainAnchor {
        switch plan.leafIssuer {
        case .selfSigned:
            return NSCChainAnchor(name: "its own self-signed leaf", heldBy: [])
        case .authority(let authority):
            switch authority {
            case .interceptionRoot:
                return NSCChainAnchor(name: "the interception root (a proxy's CA the user installed)", heldBy: [.user])
            case .untrustedRoot:
                return NSCChainAnchor(name: "the untrusted root (installed nowhere)", heldBy: [])
            case .clientCA:
                return NSCChainAnchor(name: "the client CA (installed nowhere)", heldBy: [])
            case .root, .intermediate, .sha1Intermediate, .rsaIntermediate:
                return NSCChainAnchor(name: "the kit's CA", heldBy: caPlacement)
            }
        }
    }

    /// What the platform's stack does besides the anchors, pins, versions and suites the model judges: OpenSSL's
    /// verify result trusting the device's roots (a wrong name OkHttp checks after the handshake), a client
    /// certificate the server demands. A chain that ends nowhere the device holds is left to the model's anchor check,
    /// whose fix (bundle the root) is the one that admits it.
    static func stack(_ scenario: Scenario, tls: TLSPlan, anchorHeld: Bool) -> NSCStackOutcome {
        if tls.clientAuth == .required {
            return .refuses(step: .clientCertificate, because: "the server demands a client certificate")
        }
        let verify = scenario.expect.handshake?.verifyTrustingDeviceRoots ?? scenario.expect.verify ?? "ok"
        // A refusal at the negotiation is the versions' or suites', which the model judges.
        guard verify != "ok", anchorHeld, !judgedByTheModel.contains(verify),
              scenario.expect.refusal?.step != .negotiation else { return .accepts }
        if verify == "hostname mismatch" {
            return .refuses(step: .afterHandshake, because: "the leaf does not name the host: OkHttp's host name "
                            + "check fails after the handshake")
        }
        return .refuses(step: scenario.expect.refusal?.step ?? .certificate, because: "the chain itself is refused: "
                        + "\(verify) (OpenSSL's verify, taken for Conscrypt's)")
    }

    /// The scenario's TLS 1.2 suites as IANA names: the linked OpenSSL expands the cipher string; names it lacks
    /// (RC4 and 3DES on Debian's build) are mapped here.
    static func suites(_ cipherString: String) -> [String]? {
        if let expanded = CipherNames.ianaSuites(cipherString: cipherString) {
            let missing = cipherString.split(separator: ":").compactMap { legacyNames[String($0)] }
            return expanded + missing.filter { !expanded.contains($0) }
        }
        let mapped = cipherString.split(separator: ":").compactMap { legacyNames[String($0)] }
        return mapped.isEmpty ? nil : mapped
    }

    /// The legacy suites the catalog names that OpenSSL 3 builds without the legacy provider do not know.
    static let legacyNames: [String: String] = [
        "RC4-SHA": "TLS_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA": "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
        "DES-CBC3-SHA": "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        "ECDHE-RSA-DES-CBC3-SHA": "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    ]
}
