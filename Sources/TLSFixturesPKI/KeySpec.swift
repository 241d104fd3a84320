import Foundation
import TLSFixturesOpenSSL

/// What kind of key to make, written the way the CLI and scenario files spell it: `rsa:2048`, `ec:p256`, `ed25519`.
public enum KeySpec: Hashable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible {
    case rsa(bits: Int)
    case ec(Curve)
    case ed25519

    /// The NIST curves a key can be made on.
    public enum Curve: String, CaseIterable, Sendable, Codable {
        case p224, p256, p384, p521
        /// OpenSSL's group name.
        var openSSLGroup: String {
            switch self {
            case .p224: return "P-224"
            case .p256: return "P-256"
            case .p384: return "P-384"
            case .p521: return "P-521"
            }
        }
        var bits: Int {
            switch self {
            case .p224: return 224
            case .p256: return 256
            case .p384: return 384
            case .p521: return 521
            }
        }
    }

    /// RSA sizes OpenSSL 3 will generate (512 is its floor) up to the largest a test could reasonably want.
    public static let rsaBitsRange = 512...8192

    public var description: String {
        switch self {
        case .rsa(let bits): return "rsa:\(bits)"
        case .ec(let curve): return "ec:\(curve.rawValue)"
        case .ed25519: return "ed25519"
        }
    }

    /// File-name safe form (`rsa-2048`).
    var slug: String { description.replacingOccurrences(of: ":", with: "-") }

    /// Parses `rsa:2048`, `ec:p256`, `ed25519`, …; nil where `init(parsing:)` would throw.
    public init?(_ description: String) { try? self.init(parsing: description) }

    /// Parses `rsa:BITS`, `ec:CURVE` or `ed25519`; throws `PKIError` naming the accepted forms.
    public init(parsing text: String) throws {
        let lower = text.lowercased().trimmingCharacters(in: .whitespaces)
        let parts = lower.split(separator: ":", maxSplits: 1).map(String.init)
        switch (parts.first, parts.count) {
        case ("rsa", 2):
            guard let bits = Int(parts[1]) else {
                throw PKIError.invalidKeySpec(text, "the RSA size must be a number of bits, e.g. rsa:2048")
            }
            guard KeySpec.rsaBitsRange.contains(bits) else {
                throw PKIError.invalidKeySpec(text, "RSA keys must be \(KeySpec.rsaBitsRange.lowerBound)–\(KeySpec.rsaBitsRange.upperBound) bits")
            }
            self = .rsa(bits: bits)
        case ("rsa", 1): self = .rsa(bits: 2048)
        case ("ec", 2), ("ecdsa", 2):
            let name = parts[1].replacingOccurrences(of: "-", with: "").replacingOccurrences(of: "secp", with: "p")
                .replacingOccurrences(of: "prime256v1", with: "p256").replacingOccurrences(of: "r1", with: "")
            guard let curve = Curve(rawValue: name) else {
                throw PKIError.invalidKeySpec(text, "EC curves are p224, p256, p384, p521")
            }
            self = .ec(curve)
        case ("ec", 1): self = .ec(.p256)
        case ("ed25519", 1): self = .ed25519
        default:
            throw PKIError.invalidKeySpec(text, "use rsa:BITS (\(KeySpec.rsaBitsRange.lowerBound)–\(KeySpec.rsaBitsRange.upperBound)), ec:p224|p256|p384|p521 or ed25519")
        }
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        do { try self.init(parsing: try container.decode(String.self)) } catch let error as PKIError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Generates a fresh key. RSA-4096 takes about a second and RSA-8192 tens of seconds, so callers cache.
    public func generate() throws -> PrivateKey {
        switch self {
        case .rsa(let bits): return try PrivateKey.generateRSA(bits: bits)
        case .ec(let curve): return try PrivateKey.generateEC(group: curve.openSSLGroup)
        case .ed25519: return try PrivateKey.generateEd25519()
        }
    }

    /// True when `key` is of this kind and size (a stored key is reused only then).
    public func matches(_ key: PrivateKey) -> Bool {
        let d = key.description
        switch self {
        case .rsa(let bits): return d.type == .rsa && d.bits == bits
        case .ec(let curve): return d.type == .ec && d.bits == curve.bits
        case .ed25519: return d.type == .ed25519
        }
    }

    var isRSA: Bool { if case .rsa = self { return true } else { return false } }
}

/// The digest a certificate is signed with. MD5 and SHA-1 are here on purpose.
public enum SignatureDigest: String, CaseIterable, Sendable, Codable {
    case md5, sha1, sha224, sha256, sha384, sha512

    /// Parses a digest name (`sha256`, `SHA-1`, case and dashes ignored); throws `PKIError` listing the names.
    public init(parsing text: String) throws {
        let normal = text.lowercased().replacingOccurrences(of: "-", with: "")
        guard let digest = SignatureDigest(rawValue: normal) else {
            throw PKIError.invalidDigest(text)
        }
        self = digest
    }

    var openSSLName: String { rawValue.uppercased() }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        do { try self.init(parsing: try container.decode(String.self)) } catch let error as PKIError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }
}
