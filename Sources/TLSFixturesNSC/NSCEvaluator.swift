import Foundation
import TLSFixturesWire

/// The HTTP client the app uses; both run on Conscrypt, the platform's TLS provider.
public enum NSCClient: String, Sendable, Codable, CaseIterable {
    /// OkHttp 3.13 or later with its default connection specs (MODERN_TLS, CLEARTEXT).
    case okhttp
    /// `HttpsURLConnection` (the platform's own fork of OkHttp).
    case httpsURLConnection = "httpsurlconnection"
}

/// How to judge: the client, and the day on the device (pins expire at its local midnight).
public struct NSCEvaluationOptions: Sendable, Equatable, Codable {
    /// The HTTP client.
    public var client: NSCClient
    /// The device's local day.
    public var today: NSCDay

    /// Memberwise; `today` defaults to now in this machine's time zone.
    public init(client: NSCClient = .okhttp, today: NSCDay = NSCDay(Date(), timeZone: .current)) {
        self.client = client
        self.today = today
    }
}

/// What one change would make Android connect, from nothing to no key of the config at all.
public struct NSCFix: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Which kind of change.
    public enum Kind: String, Sendable, Codable {
        /// It connects already.
        case notNeeded = "not-needed"
        /// A change to network_security_config.xml.
        case config
        /// No key of the config admits it: the app's code or the server must change.
        case impossible
    }

    /// Which kind of change.
    public var kind: Kind
    /// The change in words (and, for `config`, the XML to add or the attribute to set).
    public var text: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(kind: Kind, text: String) {
        self.kind = kind
        self.text = text
    }

    /// Nothing to change.
    public static let notNeeded = NSCFix(kind: .notNeeded, text: "—")

    /// The text.
    public var description: String { text }
}

/// What the model predicts for one host: whether the platform's stack connects under the app's config, where it stops
/// if it does not, the smallest fix, and the rules it used.
public struct NSCVerdict: Sendable, Equatable, Codable {
    /// The host judged.
    public var host: String
    /// Whether the load completes (a request answered).
    public var connects: Bool
    /// Where a refusing client stops, as the fixture's records show it; nil when it connects.
    public var step: RefusalStep?
    /// Why it does not connect, in one line; nil when it does.
    public var reason: String?
    /// Which part of the config decided (`domain-config fixtures.test (line 4)`, `platform defaults …`).
    public var origin: String
    /// The `<domain>` that matched; nil for the default config.
    public var domain: NSCDomain?
    /// The smallest change that admits it.
    public var fix: NSCFix
    /// What is worth knowing and decided nothing (an expired pin-set, an anchor overriding pins).
    public var notes: [String]
    /// The model rules the verdict rests on, in the order used.
    public var rules: [NSCModelRule]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(host: String, connects: Bool, step: RefusalStep?, reason: String?, origin: String, domain: NSCDomain?,
                fix: NSCFix, notes: [String], rules: [NSCModelRule]) {
        self.host = host
        self.connects = connects
        self.step = step
        self.reason = reason
        self.origin = origin
        self.domain = domain
        self.fix = fix
        self.notes = notes
        self.rules = rules
    }
}

/// Judges servers against an app's resolved Network Security Config, as Android's stack would.
public struct NSCEvaluator: Sendable {
    /// The app's config, resolved.
    public var config: NSCApplicationConfig
    /// The app (its target SDK and device decide the TLS versions).
    public var app: NSCApp
    /// The client and the day.
    public var options: NSCEvaluationOptions

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(config: NSCApplicationConfig, app: NSCApp, options: NSCEvaluationOptions = NSCEvaluationOptions()) {
        self.config = config
        self.app = app
        self.options = options
    }

    /// The TLS 1.2-and-older suites Conscrypt enables by default (`NativeCrypto.DEFAULT_X509_CIPHER_SUITES`, IANA
    /// names): ECDHE with AES-GCM, ChaCha20 or AES-CBC-SHA, and RSA key exchange with AES-GCM or AES-CBC-SHA. No DHE,
    /// no 3DES, no RC4, no NULL.
    public static let conscryptTLS12Suites: Set<String> = [
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA",
    ]

    /// OkHttp 3.13's `ConnectionSpec.APPROVED_CIPHER_SUITES` for TLS 1.2 and older (IANA names). OkHttp enables the
    /// ones the socket supports, so on Android it offers these and Conscrypt's together.
    public static let okHttpTLS12Suites: Set<String> = [
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    ]

    /// The TLS 1.2-and-older suites the client offers on Android.
    public var clientTLS12Suites: Set<String> {
        switch options.client {
        case .okhttp: return Self.okHttpTLS12Suites.intersection(Self.conscryptTLS12Suites)
        case .httpsURLConnection: return Self.conscryptTLS12Suites
        }
    }

    /// The versions the client offers on this device: TLS 1.3 from API 29; OkHttp never below TLS 1.2;
    /// HttpsURLConnection below it only for apps targeting API 34 or lower (or on devices older than Android 15).
    public var clientVersions: ClosedRange<TLSVersion> {
        let newest: TLSVersion = app.deviceAPI >= 29 ? .tls1_3 : .tls1_2
        switch options.client {
        case .okhttp:
            return .tls1_2...newest
        case .httpsURLConnection:
            return (app.targetSdk >= 35 && app.deviceAPI >= 35 ? .tls1_2 : .tls1_0)...newest
        }
    }

    /// Whether the client would agree on a TLS 1.2-or-older suite the server accepts.
    func agreesOnSuite(_ suites: [String]) -> Bool {
        suites.contains { clientTLS12Suites.contains($0) }
    }

    /// One thing that stops the connection, with where and what would change it.
    struct Blocker {
        var step: RefusalStep
        var reason: String
        var fix: NSCFix
        var rule: NSCModelRule
    }

    /// The verdict for one server.
    public func evaluate(_ facts: NSCServerFacts) -> NSCVerdict {
        let (resolved, domain) = config.config(forHost: facts.host)
        var rules: [NSCModelRule] = [.hostNormalization, .mostSpecificDomain, .inheritance]
        if !config.hasConfigFile { rules.append(.manifestCleartext) }
        if resolved.origin.hasPrefix("platform") { rules.append(.platformDefaults) }
        var notes: [String] = []
        var blockers: [Blocker] = []
        let place = domain.map { "<domain-config> for \($0.name)" } ?? "<base-config>"

        if facts.cleartext {
            rules.append(.cleartextBeforeConnecting)
            if !resolved.cleartextTrafficPermitted {
                blockers.append(Blocker(step: .beforeConnecting, reason: "cleartext to \(facts.host) is not permitted "
                    + "(\(resolved.origin)): the request fails before connecting", fix: cleartextFix(facts.host,
                    domain: domain, origin: resolved.origin), rule: .cleartextBeforeConnecting))
            }
            return verdict(facts, resolved, domain, blockers, notes, rules)
        }

        rules += [options.client == .okhttp ? .okHttpTLSVersions : .platformTLSVersions, .platformTLSVersions]
        let offered = clientVersions
        if facts.maxVersion < offered.lowerBound || facts.minVersion > offered.upperBound {
            let server = facts.minVersion == facts.maxVersion ? "\(facts.maxVersion)"
                : "\(facts.minVersion)–\(facts.maxVersion)"
            let client = offered.lowerBound == offered.upperBound ? "\(offered.lowerBound) only"
                : "\(offered.lowerBound)–\(offered.upperBound)"
            blockers.append(Blocker(step: .negotiation, reason: "the server speaks \(server), "
                + "\(options.client.rawValue) offers \(client) here (device API \(app.deviceAPI), target SDK "
                + "\(app.targetSdk))",
                fix: versionFix(facts), rule: .okHttpTLSVersions))
        } else if facts.maxVersion < .tls1_3 || offered.upperBound < .tls1_3, let suites = facts.tls12Suites,
                  !agreesOnSuite(suites) {
            rules.append(.tls12CipherSuites)
            blockers.append(Blocker(step: .negotiation, reason: "no TLS 1.2 suite in common: the server accepts "
                + suites.joined(separator: ", "), fix: NSCFix(kind: .impossible, text: "none: no config key changes "
                + "the suites; the server must offer ECDHE (or RSA) with AES-GCM, ChaCha20 or AES-CBC"),
                rule: .tls12CipherSuites))
        }
        if case .refuses(.negotiation, let because) = facts.stack {
            rules.append(.stackAsScenario)
            blockers.append(Blocker(step: .negotiation, reason: because, fix: stackFix(because),
                                    rule: .stackAsScenario))
        }

        let chain = facts.chain ?? NSCChain(anchor: NSCChainAnchor(name: "an unknown root", heldBy: []), spkiPins: [])
        rules += [.trustAnchorRequired, .certificateSources]
        let entry = resolved.anchorEntry(holdingAny: chain.anchor.heldBy)
        if entry == nil {
            let anchors = resolved.trustAnchors.isEmpty ? "none"
                : resolved.trustAnchors.map(\.description).joined(separator: ", ")
            blockers.append(Blocker(step: .certificate, reason: "trust anchor for certification path not found: the "
                + "chain ends at \(chain.anchor), and the anchors for \(facts.host) (\(resolved.origin)) are "
                + anchors, fix: anchorFix(chain.anchor, host: facts.host, place: place, domain: domain),
                rule: .trustAnchorRequired))
        }
        rules.append(.chainStrength)
        if let bits = chain.smallestRSAKeyBits, bits < 1024 {
            blockers.append(Blocker(step: .certificate, reason: "the chain has an RSA key of \(bits) bits: Conscrypt "
                + "refuses keys under 1024", fix: NSCFix(kind: .impossible, text: "none: no config key admits a weak "
                + "key; the server needs RSA 2048 (or EC)"), rule: .chainStrength))
        }
        if let digest = chain.weakestDigest, digest == .md5 || app.deviceAPI >= 29 {
            blockers.append(Blocker(step: .certificate, reason: "the chain has a \(digest.rawValue.uppercased()) "
                + "signature: Conscrypt refuses it" + (digest == .sha1 ? " from Android 10 (API 29)" : ""),
                fix: NSCFix(kind: .impossible, text: "none: no config key admits a weak signature; the server needs "
                + "SHA-256 signatures"), rule: .chainStrength))
        }
        if case .refuses(.certificate, let because) = facts.stack {
            rules.append(.stackAsScenario)
            blockers.append(Blocker(step: .certificate, reason: because, fix: stackFix(because),
                                    rule: .stackAsScenario))
        }
        let pins = resolved.pinSet
        if !pins.pins.isEmpty {
            rules.append(.pinSetExpiration)
            if !pins.isEnforced(on: options.today) {
                notes.append("the pin-set expired on \(pins.expiration.map(\.description) ?? "?"): its pins are not "
                             + "enforced, so the connection is judged without them")
            } else if let entry, entry.overridePins {
                rules.append(.overridePins)
                notes.append("the chain ends at \(entry), which overrides pins: they are not checked")
            } else if entry != nil {
                rules += [.pinsAnyInChain, .pinsAfterTrust]
                if Set(chain.spkiPins).isDisjoint(with: pins.pins) {
                    blockers.append(Blocker(step: .certificate, reason: "pin verification failed: no key of the chain "
                        + "(leaf to \(chain.anchor)) is in the pin-set for \(facts.host)", fix: NSCFix(kind: .config,
                        text: "add a pin of this chain to the pin-set (tls-fixtures pins NAME --android prints them), "
                            + "or, for debug builds, trust its anchor in <debug-overrides> (overridePins is true "
                            + "there)"), rule: .pinsAnyInChain))
                }
            }
        }
        if !chain.leafHasSubjectAltName {
            rules += [.hostnameInSANOnly, .hostnameAfterHandshake]
            blockers.append(Blocker(step: .afterHandshake, reason: "the leaf has no subjectAltName: the client finds "
                + "no host name in it and closes after the handshake", fix: NSCFix(kind: .impossible, text: "none: no "
                + "config key admits it; the leaf must name \(facts.host) in its subjectAltName"),
                rule: .hostnameInSANOnly))
        }
        if case .refuses(.afterHandshake, let because) = facts.stack {
            rules += [.stackAsScenario, .hostnameAfterHandshake]
            blockers.append(Blocker(step: .afterHandshake, reason: because, fix: stackFix(because),
                                    rule: .stackAsScenario))
        }
        if case .refuses(.beforeConnecting, let because) = facts.stack {
            blockers.append(Blocker(step: .beforeConnecting, reason: because, fix: stackFix(because),
                                    rule: .stackAsScenario))
        }
        if case .refuses(.clientCertificate, let because) = facts.stack {
            blockers.append(Blocker(step: .clientCertificate, reason: because, fix: stackFix(because),
                                    rule: .stackAsScenario))
        }
        return verdict(facts, resolved, domain, blockers, notes, rules)
    }

    private func verdict(_ facts: NSCServerFacts, _ resolved: NSCEffectiveConfig, _ domain: NSCDomain?,
                         _ blockers: [Blocker], _ notes: [String], _ rules: [NSCModelRule]) -> NSCVerdict {
        var used: [NSCModelRule] = []
        for rule in rules where !used.contains(rule) { used.append(rule) }
        guard let first = blockers.first else {
            return NSCVerdict(host: facts.host, connects: true, step: nil, reason: nil, origin: resolved.origin,
                              domain: domain, fix: .notNeeded, notes: notes, rules: used)
        }
        // One change must lift every blocker: any that no config key lifts decides the fix.
        let fix = blockers.first { $0.fix.kind == .impossible }?.fix
            ?? NSCFix(kind: .config, text: blockers.map(\.fix.text).joined(separator: "; and "))
        return NSCVerdict(host: facts.host, connects: false, step: first.step, reason: first.reason,
                          origin: resolved.origin, domain: domain, fix: fix, notes: notes, rules: used)
    }

    private func cleartextFix(_ host: String, domain: NSCDomain?, origin: String) -> NSCFix {
        if let domain {
            let own = "<domain-config cleartextTrafficPermitted=\"true\"><domain>\(Self.xmlEscaped(host))</domain>"
                + "</domain-config>"
            return NSCFix(kind: .config, text: domain.name == host
                ? "set cleartextTrafficPermitted=\"true\" on the \(origin)"
                : "\(own) (or cleartextTrafficPermitted=\"true\" on the \(origin), for all of \(domain.name))")
        }
        return NSCFix(kind: .config, text: "<domain-config cleartextTrafficPermitted=\"true\"><domain>"
                      + "\(Self.xmlEscaped(host))</domain></domain-config>")
    }

    private func anchorFix(_ anchor: NSCChainAnchor, host: String, place: String, domain: NSCDomain?) -> NSCFix {
        let order: [NSCCertificateSource] = anchor.heldBy.sorted { Self.rank($0) < Self.rank($1) }
        guard let source = order.first else {
            return NSCFix(kind: .config, text: "bundle \(anchor)'s certificate in res/raw and add <certificates "
                          + "src=\"@raw/NAME\"/> to the trust-anchors of the \(place)")
        }
        let element = "<certificates src=\"\(Self.xmlEscaped(source.description))\"/>"
        if domain != nil {
            return NSCFix(kind: .config, text: "add \(element) to the <trust-anchors> of the \(place)")
        }
        return NSCFix(kind: .config, text: "<domain-config><domain>\(Self.xmlEscaped(host))</domain><trust-anchors>"
                      + "\(element)</trust-anchors></domain-config>")
    }

    private static func rank(_ source: NSCCertificateSource) -> Int {
        switch source {
        case .resource: return 0
        case .user: return 1
        case .system: return 2
        case .wfa: return 3
        }
    }

    private func versionFix(_ facts: NSCServerFacts) -> NSCFix {
        if facts.maxVersion < .tls1_0 {
            return NSCFix(kind: .impossible, text: "none: Android's TLS stack has no SSL 3.0 at all")
        }
        if facts.maxVersion < .tls1_2 {
            let code = options.client == .okhttp ? "ConnectionSpec.COMPATIBLE_TLS in OkHttpClient.connectionSpecs, "
                + "and " : ""
            return NSCFix(kind: .impossible, text: "none: no config key lowers the TLS floor; it takes \(code)a target "
                          + "SDK of 34 or lower (Android 15 refuses TLS 1.0 and 1.1 to apps targeting it)")
        }
        return NSCFix(kind: .impossible, text: "none: this device has no TLS 1.3 (it came with Android 10, API 29)")
    }

    private func stackFix(_ because: String) -> NSCFix {
        NSCFix(kind: .impossible, text: "none: no config key admits it")
    }

    static func xmlEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
