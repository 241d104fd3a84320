import Foundation

// What a scenario expects of standard clients, in the parts both worlds show: a scenario file (the TLSFixtures
// library) and a fixture started through the control API (TLSFixturesClient). One type each, so a test that imports
// both modules sees one `ATSExpectation`, one `PinExpectation`.

/// Apple's loader under a default ATS policy, connecting by the qualified name with the built-in CA trusted.
public enum ATSExpectation: String, Codable, Sendable, Hashable {
    case allow, block
    case notApplicable = "n/a"
}

/// The catalog's last column, as data.
public struct ATSFix: Codable, Sendable, Hashable {
    /// Which kind of change admits the scenario, from none to impossible.
    public enum Kind: String, Codable, Sendable, Hashable {
        /// Nothing to change.
        case notNeeded = "not-needed"
        /// Keys in an `NSExceptionDomains` entry for the host.
        case exception
        /// Top-level `NSAllowsArbitraryLoads`.
        case arbitraryLoads = "arbitrary-loads"
        /// No ATS key admits it (the client cannot speak what the server requires).
        case impossible
    }

    /// The smallest change that admits the scenario.
    public var kind: Kind
    /// For `exception`: the entry's keys; values are booleans or strings as in a plist.
    public var domainKeys: [String: PlistScalar]?
    /// Something beyond Info.plist the app also needs, e.g. `trust-override` (a URLSessionDelegate that accepts the trust).
    public var alsoRequires: String?
    /// Why, in one line, when the kind alone does not say (always set for `impossible`).
    public var reason: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(kind: Kind, domainKeys: [String: PlistScalar]? = nil, alsoRequires: String? = nil, reason: String? = nil) {
        self.kind = kind; self.domainKeys = domainKeys; self.alsoRequires = alsoRequires; self.reason = reason
    }
}

/// A boolean or string plist value.
public enum PlistScalar: Codable, Sendable, Hashable, CustomStringConvertible {
    case bool(Bool), string(String)

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let value = try? c.decode(Bool.self) { self = .bool(value) } else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .bool(let value): try c.encode(value)
        case .string(let value): try c.encode(value)
        }
    }

    public var description: String {
        switch self {
        case .bool(let value): return value ? "YES" : "NO"
        case .string(let value): return value
        }
    }

    /// The value as `PropertyListSerialization` takes it: `Bool` or `String`.
    public var propertyListValue: Any {
        switch self {
        case .bool(let value): return value
        case .string(let value): return value
        }
    }
}

/// For pinning scenarios: which of the published pins match the server.
public struct PinExpectation: Codable, Sendable, Hashable {
    /// The published `pinned` leaf SPKI pin matches this server's leaf.
    public var leafSPKI: Bool
    /// The built-in CA's SPKI pin matches a certificate in this server's chain.
    public var caSPKI: Bool
    /// The published `pinned` certificate (DER) is this server's leaf.
    public var certificate: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(leafSPKI: Bool, caSPKI: Bool, certificate: Bool) {
        self.leafSPKI = leafSPKI; self.caSPKI = caSPKI; self.certificate = certificate
    }
}

/// What a fixture started through the control API is expected to do: the scenario file's `expect`, less the client
/// matrix's detail (which `/scenarios.json` carries).
public struct FixtureExpectations: Codable, Sendable, Hashable {
    /// OpenSSL's verify result for host `localhost` with the built-in CA trusted: `ok` or OpenSSL's own text
    /// (`certificate has expired`); nil for plain HTTP.
    public var verify: String?
    /// ATS under a default policy, by the qualified name, with the built-in CA trusted.
    public var ats: ATSExpectation
    /// The smallest `NSAppTransportSecurity` change that admits it.
    public var atsFix: ATSFix?
    /// Roots besides the built-in CA the device is assumed to trust (`interception-root` for `pin-mitm`).
    public var trustedRoots: [String]?
    /// Which published pins match (pinning scenarios).
    public var pins: PinExpectation?
    /// Anything a reader must know to read the verdicts right.
    public var note: String?
    /// What a client refusing it for its own reason shows (the scenario file's `expect.refusal`): what a client's
    /// `expectRefused` checks the fixture's records and the thrown error against.
    public var refusal: RefusalExpectation?
    /// What an Android app does where that differs from iOS or from `verify` (the scenario file's `expect.android`);
    /// nil where Android agrees with `verify`.
    public var android: AndroidExpectation?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(verify: String?, ats: ATSExpectation, atsFix: ATSFix? = nil, trustedRoots: [String]? = nil,
                pins: PinExpectation? = nil, note: String? = nil, refusal: RefusalExpectation? = nil,
                android: AndroidExpectation? = nil) {
        self.verify = verify; self.ats = ats; self.atsFix = atsFix; self.trustedRoots = trustedRoots
        self.pins = pins; self.note = note; self.refusal = refusal; self.android = android
    }
}
