import Foundation
import TLSFixturesWire

/// What an Android client would meet at a server, as the NSC model needs it: the host it connects by, plain HTTP or
/// TLS, the versions and suites the server accepts, the chain it presents, and what the platform's TLS stack makes
/// of that chain apart from the trust anchors and pins the config decides.
public struct NSCServerFacts: Sendable, Equatable, Codable {
    /// The host the app connects by (`expired.fixtures.test`, `localhost`), as the config is looked up for it.
    public var host: String
    /// True for `http://` (the `http` scenario): no TLS at all.
    public var cleartext: Bool
    /// The oldest version the server accepts.
    public var minVersion: TLSVersion
    /// The newest version the server accepts.
    public var maxVersion: TLSVersion
    /// The TLS 1.2-and-older suites the server accepts, IANA names; nil when not known (taken as ECDHE with AES-GCM,
    /// the catalog's baseline).
    public var tls12Suites: [String]?
    /// The chain as the client would build it.
    public var chain: NSCChain?
    /// What Android's TLS stack does with the server besides what the model decides itself; `.accepts` to judge the
    /// config alone.
    public var stack: NSCStackOutcome

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(host: String, cleartext: Bool = false, minVersion: TLSVersion = .tls1_2,
                maxVersion: TLSVersion = .tls1_3, tls12Suites: [String]? = nil, chain: NSCChain? = nil,
                stack: NSCStackOutcome = .accepts) {
        self.host = host
        self.cleartext = cleartext
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.tls12Suites = tls12Suites
        self.chain = chain
        self.stack = stack
    }
}

/// A chain as the client builds it: where it ends, the SPKI pins of its certificates, and what Conscrypt's strength
/// check and OkHttp's host-name check look at.
public struct NSCChain: Sendable, Equatable, Codable {
    /// The certificate the chain ends at (a root, or the leaf itself when it is self-signed).
    public var anchor: NSCChainAnchor
    /// base64 SHA-256 of the SubjectPublicKeyInfo of the chain's certificates the facts can name, leaf first, the
    /// anchor last (a key the caller does not know is left out: it matches no pin anyway).
    public var spkiPins: [String]
    /// The modulus size of the smallest RSA key on the chain, in bits; nil when none is RSA.
    public var smallestRSAKeyBits: Int?
    /// The weakest signature digest on the chain; nil for SHA-256 or better.
    public var weakestDigest: NSCDigest?
    /// Whether the leaf has a subjectAltName extension (OkHttp looks for the host there only).
    public var leafHasSubjectAltName: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(anchor: NSCChainAnchor, spkiPins: [String], smallestRSAKeyBits: Int? = nil,
                weakestDigest: NSCDigest? = nil, leafHasSubjectAltName: Bool = true) {
        self.anchor = anchor
        self.spkiPins = spkiPins
        self.smallestRSAKeyBits = smallestRSAKeyBits
        self.weakestDigest = weakestDigest
        self.leafHasSubjectAltName = leafHasSubjectAltName
    }
}

/// A signature digest Conscrypt's `ChainStrengthAnalyzer` refuses (SHA-1 only from Android 10).
public enum NSCDigest: String, Sendable, Codable, CaseIterable {
    case md5, sha1
}

/// The certificate a chain ends at, and where on the device (or in the app) a copy of it is.
public struct NSCChainAnchor: Sendable, Equatable, Codable, CustomStringConvertible {
    /// What it is, in words (`the kit's CA`, `the interception root`).
    public var name: String
    /// The certificate sources that hold it: `@raw/tls_fixtures_ca` in the app, `user` when the user installed it,
    /// `system` on a system image that has it. Empty: nowhere (a self-signed leaf, a root nobody installed).
    public var heldBy: Set<NSCCertificateSource>

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(name: String, heldBy: Set<NSCCertificateSource>) {
        self.name = name
        self.heldBy = heldBy
    }

    /// The name.
    public var description: String { name }
}

/// What Android's TLS stack (Conscrypt's trust manager and handshake) does with a server, apart from the trust
/// anchors, pins, TLS versions and suites the model decides itself.
public enum NSCStackOutcome: Sendable, Equatable, Codable {
    /// Nothing else stands in the way.
    case accepts
    /// The stack refuses it for a reason of its own (an expired leaf, a wrong name), at `step`.
    case refuses(step: RefusalStep, because: String)
}
