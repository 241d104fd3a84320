import Foundation
import TLSFixturesWire

extension Expectations {
    /// What a client offering everything up to TLS 1.3 sees in one handshake with the scenario, as its file declares it
    /// (`expect.handshake`). Like the rest of a file it states only what differs from the catalog's baseline; the
    /// baseline is the catalog's (scenarios.md): an RSA-2048 leaf signed with SHA-256 by the built-in EC P-256 root and
    /// sent alone, TLS 1.3 with an AES-GCM suite and an (EC)DHE share.
    ///
    /// A person writes these from the catalog's description and OpenSSL's documented behaviour; the test suite holds
    /// the running server to them from the client side (openssl s_client, the probe), so they are never read back from
    /// what the server does.
    public struct Handshake: Codable, Sendable, Hashable {
        /// The protocol as OpenSSL names it: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3` (`SSLv3`).
        public var `protocol`: String
        /// OpenSSL cipher names; more than one where the server's choice is left open.
        public var ciphers: [String]
        /// `ECDHE` (X25519, X448, an ECDH curve or a hybrid with ML-KEM), `DHE BITS` (finite-field DH of exactly that
        /// size) or `RSA` (static RSA key transport: no ephemeral key).
        public var keyExchange: String
        /// The leaf's signature algorithm as `openssl x509 -text` prints it; more than one only where the catalog does
        /// not say what kind of key the issuer has.
        public var leafSignature: [String]
        /// The leaf's key: `RSA` or `EC`, and its size in bits.
        public var keyType: KeyAlgorithm
        /// The leaf key's size in bits (2048 for RSA-2048, 256 for P-256).
        public var keyBits: Int
        /// Certificates the server sends, the leaf included.
        public var certificates: Int
        /// OpenSSL's verify text against every root the device is assumed to trust (`trustedRoots` as well as the
        /// built-in CA), where that differs from `verify` (which is against the built-in CA alone).
        public var verifyTrustingDeviceRoots: String?
        /// Stock OpenSSL clients abort the handshake with this error before they see the chain (`10000-sans`).
        public var stockOpenSSLRefuses: String?
        /// Served only when the linked OpenSSL has this (`SSLv3`, `RC4`, `3DES`); otherwise starting it throws
        /// `ScenarioUnsupported`.
        public var requires: String?

        /// The catalog's baseline, which a file's `expect.handshake` changes.
        public init() {
            self.protocol = "TLSv1.3"
            ciphers = ["TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"]
            keyExchange = "ECDHE"
            leafSignature = ["ecdsa-with-SHA256"]
            keyType = .rsa
            keyBits = 2048
            certificates = 1
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case `protocol`, ciphers, keyExchange, leafSignature, keyType, keyBits, certificates, verifyTrustingDeviceRoots,
                 stockOpenSSLRefuses, requires
        }

        public init(from decoder: Decoder) throws {
            try decoder.rejectUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Handshake()
            func one(_ key: CodingKeys, of allowed: [String]) throws -> String? {
                guard let value = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
                guard allowed.contains(value) else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription:
                        "\"\(value)\" is not one of \(allowed.joined(separator: ", "))")
                }
                return value
            }
            self.protocol = try one(.protocol, of: ["SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"]) ?? d.protocol
            ciphers = try c.decodeIfPresent([String].self, forKey: .ciphers) ?? d.ciphers
            keyExchange = try c.decodeIfPresent(String.self, forKey: .keyExchange) ?? d.keyExchange
            if keyExchange != "ECDHE" && keyExchange != "RSA"
                && !(keyExchange.hasPrefix("DHE ") && Int(keyExchange.dropFirst(4)).map { $0 > 0 } == true) {
                throw DecodingError.dataCorruptedError(forKey: .keyExchange, in: c, debugDescription:
                    "\"\(keyExchange)\" is not ECDHE, RSA or DHE followed by the group's bits (\"DHE 2048\")")
            }
            leafSignature = try c.decodeIfPresent([String].self, forKey: .leafSignature) ?? d.leafSignature
            keyType = try one(.keyType, of: ["RSA", "EC"]).map(KeyAlgorithm.init(rawValue:)) ?? d.keyType
            keyBits = try c.decodeIfPresent(Int.self, forKey: .keyBits) ?? d.keyBits
            certificates = try c.decodeIfPresent(Int.self, forKey: .certificates) ?? d.certificates
            verifyTrustingDeviceRoots = try c.decodeIfPresent(String.self, forKey: .verifyTrustingDeviceRoots)
            stockOpenSSLRefuses = try c.decodeIfPresent(String.self, forKey: .stockOpenSSLRefuses)
            requires = try one(.requires, of: ["SSLv3", "RC4", "3DES"])
            if ciphers.isEmpty || leafSignature.isEmpty {
                throw DecodingError.dataCorruptedError(forKey: ciphers.isEmpty ? .ciphers : .leafSignature, in: c,
                                                       debugDescription: "an empty list: leave the key out for the baseline")
            }
        }
    }
}
