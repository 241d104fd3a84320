import Foundation
import TLSFixturesWire

/// The pins for one domain, in the form every pinning format starts from: base64 SHA-256 of DER SPKIs.
public struct PinSet: Sendable, Equatable, Codable {
    /// The host the pins are for, as a pinning configuration names it.
    public var domain: String
    /// SPKI pins of leaf keys (the key the server uses now).
    public var leafPins: [String]
    /// SPKI pins of CA keys. They survive a leaf-key change only when no leaf pins are set: NSPinnedDomains requires
    /// both lists when both are given.
    public var caPins: [String]
    /// A key no server uses yet, kept offline for the next rotation. TrustKit refuses a configuration
    /// without one, and NSPinnedDomains without one bricks the app the day the key must change.
    public var backupPin: String?
    /// Whether the pins also cover names below `domain`: in NSPinnedDomains one extra label only; TrustKit reaches
    /// every level.
    public var includesSubdomains: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(domain: String, leafPins: [String], caPins: [String] = [], backupPin: String? = nil,
                includesSubdomains: Bool = false) {
        self.domain = domain
        self.leafPins = leafPins
        self.caPins = caPins
        self.backupPin = backupPin
        self.includesSubdomains = includesSubdomains
    }
}

/// A pin that is not base64 of 32 bytes (a SHA-256), or a configuration with no pins.
public struct PinFormatError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<PinFormatError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<PinFormatError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?

    /// Memberwise: each argument sets the property of the same name; control characters are escaped (a pin is user
    /// input).
    public init(code: Code, reason: String, fix: String? = nil) {
        self.code = code
        self.reason = reason.escapingControlCharacters
        self.fix = fix
    }

    /// TrustKit needs two pins; `found` were given.
    public static func trustKitNeedsTwoPins(found: Int) -> PinFormatError {
        PinFormatError(code: .trustKitNeedsTwoPins, reason: "TrustKit requires at least two distinct pins and \(found) were given",
                       fix: "add a backup pin (the SPKI hash of a key you keep offline)")
    }

    /// No pins.
    public static let noPins = PinFormatError(code: .noPins, reason: "no pins were given", fix: "pass at least one leaf or CA SPKI pin")

    /// `text` is not a pin.
    public static func malformedPin(_ text: String) -> PinFormatError {
        PinFormatError(code: .malformedPin,
                       reason: "pin \"\(text)\" is not sha256/ followed by the base64 of a SHA-256 digest (44 characters)")
    }
}

/// Renders a `PinSet` in the formats apps paste: an `NSPinnedDomains` plist snippet and a TrustKit
/// configuration in Swift.
public enum PinFormats {
    /// The `NSAppTransportSecurity` dictionary holding `NSPinnedDomains` for the set.
    ///
    /// Where the backup pin goes: with the leaf identities when there are any (it stands for the next leaf
    /// key), otherwise with the CA identities (the next CA key). ATS matches any one listed identity.
    public static func pinnedDomainsDictionary(_ pins: PinSet) throws -> [String: ATSPlistValue] {
        guard !pins.leafPins.isEmpty || !pins.caPins.isEmpty else { throw PinFormatError.noPins }
        func identities(_ hashes: [String]) -> ATSPlistValue {
            .array(unique(hashes).map { .dictionary([ATSKey.spkiSHA256Base64: .string($0)]) })
        }
        var leaf = pins.leafPins
        var ca = pins.caPins
        if let backup = pins.backupPin {
            if leaf.isEmpty { ca.append(backup) } else { leaf.append(backup) }
        }
        var entry: [String: ATSPlistValue] = [ATSKey.includesSubdomains: .bool(pins.includesSubdomains)]
        if !leaf.isEmpty { entry[ATSKey.pinnedLeafIdentities] = identities(leaf) }
        if !ca.isEmpty { entry[ATSKey.pinnedCAIdentities] = identities(ca) }
        return [ATSKey.pinnedDomains: .dictionary([pins.domain: .dictionary(entry)])]
    }

    /// The snippet as Info.plist XML, ready to paste.
    public static func pinnedDomainsPlistXML(_ pins: PinSet) throws -> String {
        ATSPlistRendering.infoPlistXML(ats: try pinnedDomainsDictionary(pins))
    }

    /// Swift source for `TrustKit.initSharedInstance(withConfiguration:)`: live pins plus the backup in
    /// `kTSKPublicKeyHashes`, `kTSKIncludeSubdomains`, `kTSKEnforcePinning`.
    public static func trustKitSwift(_ pins: PinSet, enforcePinning: Bool = true) throws -> String {
        var labelled: [(String, String)] = []
        for pin in pins.leafPins { labelled.append((pin, "leaf key")) }
        for pin in pins.caPins { labelled.append((pin, "CA key")) }
        if let backup = pins.backupPin { labelled.append((backup, "backup key: no server uses it; keep it offline")) }
        var seen = Set<String>()
        labelled = labelled.filter { seen.insert($0.0).inserted }
        guard labelled.count >= 2 else { throw PinFormatError.trustKitNeedsTwoPins(found: labelled.count) }
        let hashes = labelled.map { "                \"\($0.0)\", // \($0.1)" }.joined(separator: "\n")
        return """
        // TrustKit pinning for \(pins.domain), generated by swift-tls-fixtures.
        // TrustKit evaluates default trust first, then requires one of these SPKI hashes in the chain.
        let trustKitConfig: [String: Any] = [
            kTSKSwizzleNetworkDelegates: false,
            kTSKPinnedDomains: [
                "\(pins.domain)": [
                    kTSKEnforcePinning: \(enforcePinning),
                    kTSKIncludeSubdomains: \(pins.includesSubdomains),
                    kTSKPublicKeyHashes: [
        \(hashes)
                    ],
                ],
            ],
        ]
        TrustKit.initSharedInstance(withConfiguration: trustKitConfig)

        """
    }

    private static func unique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }
}

/// How a pinning implementation decides, so a fixture's outcome can be predicted per library.
/// An SPKI pin as people write it: `sha256/BASE64=` (TrustKit, HPKP) or the bare base64 (NSPinnedDomains).
public enum SPKIPin {
    /// The base64 of the 32-byte digest, whichever spelling was given.
    public static func parse(_ text: String) throws -> String {
        let base64 = text.hasPrefix("sha256/") ? String(text.dropFirst("sha256/".count)) : text
        guard let digest = Data(base64Encoded: base64), digest.count == 32 else { throw PinFormatError.malformedPin(text) }
        return base64
    }

    /// The bytes Apple makes of an `NSPinnedDomains` `SPKI-SHA256-BASE64` string, or nil where it makes none and skips
    /// the identity. Security/OSX/sec/Security/SecPolicy.c, `CreateCFDataFromBase64CFString`, decodes the string's
    /// UTF-8 with `SecBase64Decode` (OSX/sec/Security/SecBase64.c, flags `kSecB64_F_STOP_ON_NOTHING`), whose rules are:
    /// - every character outside the base64 alphabet and `=` is skipped: spaces, tabs, line breaks, and anything else;
    /// - characters are taken four at a time; a `=` counts as a zero in its place, and a quartet with padding ends the
    ///   decoding (what follows it is ignored); a letter after a `=` within a quartet cancels the padding;
    /// - a last quartet that never fills up is dropped;
    /// - an empty string, or one that decodes to no byte, gives nothing.
    /// The result may have any length; only one of 32 bytes can equal a certificate's SPKI SHA-256
    /// (trust/trustd/SecPolicyServer.c, `SecPolicyCheckLeafSPKISHA256` compares the data as a whole).
    public static func decodedAsNSPinnedDomains(_ text: String) -> Data? {
        var output: [UInt8] = []
        var quartet: [UInt8] = []
        var padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") {
                quartet.append(0)
                padding += 1
            } else if let value = base64Value(byte) {
                padding = 0
                quartet.append(value)
            } else {
                continue
            }
            guard quartet.count == 4 else { continue }
            output.append(quartet[0] << 2 | (quartet[1] & 0x30) >> 4)
            if padding != 2 {
                output.append((quartet[1] & 0x0f) << 4 | (quartet[2] & 0x3c) >> 2)
                if padding != 1 { output.append((quartet[2] & 0x03) << 6 | quartet[3]) }
            }
            quartet = []
            if padding != 0 { break }
        }
        return output.isEmpty ? nil : Data(output)
    }

    private static func base64Value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}

/// How a list of pins is checked, named as `probe --pin-mode` names it.
public enum PinMode: String, Sendable, CaseIterable {
    /// TrustKit, Alamofire: default trust, then any certificate in the chain.
    case trustkit
    /// NSPinnedDomains with `NSPinnedLeafIdentities`.
    case leaf
    /// NSPinnedDomains with `NSPinnedCAIdentities`.
    case ca

    /// The rule this mode checks `pins` (base64 SPKI SHA-256) with.
    public func rule(_ pins: [String]) -> PinRule {
        switch self {
        case .trustkit: return .trustKit(spki: pins)
        case .leaf: return .pinnedDomainsLeaf(spki: pins)
        case .ca: return .pinnedDomainsCA(spki: pins)
        }
    }
}

/// How a pinning configuration decides: which pins, compared with what, and whether default trust is checked first.
public enum PinRule: Sendable, Equatable {
    /// TrustKit: default trust must pass, then any certificate in the chain must have a listed SPKI.
    case trustKit(spki: [String])
    /// Alamofire `PublicKeysTrustEvaluator` / AFNetworking public-key mode: default trust, then any key in the chain.
    case publicKeys(spki: [String])
    /// NSPinnedDomains with only `NSPinnedLeafIdentities`: the leaf's SPKI must be listed.
    case pinnedDomainsLeaf(spki: [String])
    /// NSPinnedDomains with only `NSPinnedCAIdentities`: some CA in the verified chain must be listed.
    case pinnedDomainsCA(spki: [String])
    /// NSPinnedDomains with both lists: both must hold.
    case pinnedDomains(leaf: [String], ca: [String])
    /// Alamofire `PinnedCertificatesTrustEvaluator` / AFNetworking certificate mode with `.cer` files:
    /// default trust, then a whole certificate (DER) anywhere in the chain.
    case certificatesDER([Data])
    /// The same by hex SHA-256 fingerprint of the DER (colons and case ignored).
    case certificateFingerprints([String])

    /// The NSPinnedDomains modes leave trust to ATS (the evaluator checks it); the libraries check it first.
    var checksDefaultTrust: Bool {
        switch self {
        case .trustKit, .publicKeys, .certificatesDER, .certificateFingerprints: return true
        case .pinnedDomainsLeaf, .pinnedDomainsCA, .pinnedDomains: return false
        }
    }
}

/// The result of one pin check.
public struct PinOutcome: Sendable, Equatable, CustomStringConvertible {
    /// True when the connection passes the pin check.
    public var matched: Bool
    /// Why, in one line.
    public var reason: String
    /// Subject of the certificate that matched, if one did.
    public var matchedSubject: String?

    public var description: String { "\(matched ? "MATCH" : "FAIL"): \(reason)" }
}

/// Checks pins against what a client observed, the way each library does.
public struct PinPolicy: Sendable {
    /// The pins and how they are compared.
    public var rule: PinRule
    /// Which OS's default trust to apply for the library modes.
    public var profile: ATSOSProfile

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(_ rule: PinRule, profile: ATSOSProfile = .default) {
        self.rule = rule
        self.profile = profile
    }

    /// Judges what a client saw (the chain as sent and how trust went) as the library or `NSPinnedDomains` would.
    public func evaluate(host: String, presentedChain: [CertificateFacts], trust: TrustFacts?) -> PinOutcome {
        if rule.checksDefaultTrust {
            let failures = ATSDefaultTrust(profile: profile)
                .violations(host: ATSHost(host), presentedChain: presentedChain, trust: trust)
            if let first = failures.first {
                return PinOutcome(matched: false, reason: "default trust fails before pins are checked: \(first.message)",
                                  matchedSubject: nil)
            }
        }
        let verified = trust?.verifiedChain ?? []
        // "Anywhere in the chain": what the server sent plus what trust evaluation added (the root).
        var chain = verified.isEmpty ? presentedChain : verified
        for certificate in presentedChain where !chain.contains(certificate) { chain.append(certificate) }
        let leaf = presentedChain.first ?? chain.first
        let cas = Array((verified.isEmpty ? presentedChain : verified).dropFirst())

        switch rule {
        case .trustKit(let pins), .publicKeys(let pins):
            return first(in: chain, "SPKI", where: { pins.contains($0.spkiSHA256) })
        case .pinnedDomainsLeaf(let pins):
            return first(in: leaf.map { [$0] } ?? [], "leaf SPKI", where: { pins.contains($0.spkiSHA256) })
        case .pinnedDomainsCA(let pins):
            return first(in: cas, "CA SPKI", where: { pins.contains($0.spkiSHA256) })
        case .pinnedDomains(let leafPins, let caPins):
            let leafOutcome = PinPolicy(.pinnedDomainsLeaf(spki: leafPins), profile: profile)
                .evaluate(host: host, presentedChain: presentedChain, trust: trust)
            let caOutcome = PinPolicy(.pinnedDomainsCA(spki: caPins), profile: profile)
                .evaluate(host: host, presentedChain: presentedChain, trust: trust)
            let matched = leafOutcome.matched && caOutcome.matched
            return PinOutcome(matched: matched, reason: "\(leafOutcome.reason); \(caOutcome.reason)",
                              matchedSubject: matched ? leafOutcome.matchedSubject : nil)
        case .certificatesDER(let ders):
            return first(in: chain, "certificate", where: { ders.contains($0.der) })
        case .certificateFingerprints(let prints):
            let wanted = Set(prints.map(Self.normalizedFingerprint))
            return first(in: chain, "certificate fingerprint",
                         where: { wanted.contains(Self.normalizedFingerprint($0.sha256Fingerprint)) })
        }
    }

    private func first(in certificates: [CertificateFacts], _ what: String,
                       where matches: (CertificateFacts) -> Bool) -> PinOutcome {
        if let hit = certificates.first(where: matches) {
            return PinOutcome(matched: true, reason: "\(what) of \(hit.subject) is pinned", matchedSubject: hit.subject)
        }
        let scope = certificates.count == 1 ? "the certificate checked" : "any of the \(certificates.count) certificates checked"
        return PinOutcome(matched: false, reason: "no pinned \(what) in \(scope)", matchedSubject: nil)
    }

    static func normalizedFingerprint(_ text: String) -> String {
        text.lowercased().filter { $0.isHexDigit }
    }
}

/// The codes of `PinFormatError`.
extension ErrorCode where Owner == PinFormatError {
    /// TrustKit refuses a configuration with fewer than two distinct pins.
    public static var trustKitNeedsTwoPins: Self { Self("trustKitNeedsTwoPins") }
    /// A pin set with no pin at all.
    public static var noPins: Self { Self("noPins") }
    /// A pin that is not `sha256/` and the base64 of 32 bytes.
    public static var malformedPin: Self { Self("malformedPin") }
}
