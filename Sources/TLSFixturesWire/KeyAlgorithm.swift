/// A key's algorithm, compared as a value rather than as text. A struct with static members, not a closed enum, because
/// OpenSSL can hand back a key of any type it knows (its short name is kept); encoded as that name (`RSA`, `EC`).
/// It lives with the wire values so the ATS model, which must not link OpenSSL, compares key types as values too.
public struct KeyAlgorithm: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// RSA (PKCS#1 keys; `rsaEncryption` SPKI).
    public static let rsa = KeyAlgorithm(rawValue: "RSA")
    /// Elliptic-curve keys on a named curve (P-256, P-384, …).
    public static let ec = KeyAlgorithm(rawValue: "EC")
    /// Ed25519 signing keys (RFC 8410).
    public static let ed25519 = KeyAlgorithm(rawValue: "Ed25519")
    /// Ed448 signing keys (RFC 8410).
    public static let ed448 = KeyAlgorithm(rawValue: "Ed448")
    /// Finite-field Diffie-Hellman keys (DHE parameters, never a certificate key here).
    public static let dh = KeyAlgorithm(rawValue: "DH")
    /// X25519 key-agreement keys (a TLS 1.3 group, not a certificate key).
    public static let x25519 = KeyAlgorithm(rawValue: "X25519")
    /// X448 key-agreement keys (a TLS group, not a certificate key).
    public static let x448 = KeyAlgorithm(rawValue: "X448")

    /// EdDSA (Ed25519, Ed448): the signature hashes internally, so no digest can be chosen.
    public var isEdDSA: Bool { self == .ed25519 || self == .ed448 }

    public var description: String { rawValue }
}
