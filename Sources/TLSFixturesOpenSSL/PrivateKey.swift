import COpenSSL
import Foundation
import NIOConcurrencyHelpers
import TLSFixturesWire

/// Owns one OpenSSL `EVP_PKEY` holding a private key.
///
/// Immutable after creation; OpenSSL allows concurrent read-only use of an `EVP_PKEY`
/// (signing, `SSL_CTX_use_PrivateKey`), hence `@unchecked Sendable`.
public final class PrivateKey: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Takes ownership of one reference.
    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    // MARK: Generation

    private static let generated = NIOLockedValueBox(0)

    /// How many keys this process has generated. The store promises "nothing generated twice";
    /// tests and `make bench` count with this.
    public static var generatedCount: Int { generated.withLockedValue { $0 } }

    package static func generateRSA(bits: Int) throws -> PrivateKey {
        try generate(algorithm: "RSA", description: "RSA-\(bits)") { ctx in
            try checkOne(EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)), "set the RSA key size to \(bits)")
        }
    }

    /// `group` is OpenSSL's group name: `P-224`, `P-256`, `P-384`, `P-521`.
    package static func generateEC(group: String) throws -> PrivateKey {
        try generate(algorithm: "EC", description: "EC \(group)") { ctx in
            try checkOne(EVP_PKEY_CTX_set_group_name(ctx, group), "select the curve \(group)")
        }
    }

    package static func generateEd25519() throws -> PrivateKey {
        try generate(algorithm: "ED25519", description: "Ed25519") { _ in }
    }

    private static func generate(algorithm: String, description: String,
                                 configure: (OpaquePointer) throws -> Void) throws -> PrivateKey {
        OpenSSLError.clearQueue()
        let ctx = try checkNotNull(EVP_PKEY_CTX_new_from_name(nil, algorithm, nil), "create a \(description) key generator")
        defer { EVP_PKEY_CTX_free(ctx) }
        try checkOne(EVP_PKEY_keygen_init(ctx), "start \(description) key generation")
        try configure(ctx)
        var key: OpaquePointer? = nil
        try checkOne(EVP_PKEY_generate(ctx, &key), "generate a \(description) key")
        generated.withLockedValue { $0 += 1 }
        return PrivateKey(taking: try checkNotNull(key, "generate a \(description) key"))
    }

    // MARK: Encoding

    /// Reads an unencrypted PEM private key (PKCS#8 or traditional).
    public convenience init(pem: Data) throws {
        OpenSSLError.clearQueue()
        let key = try MemoryBIO.reading(pem) { bio in
            // A passphrase callback that refuses, so an encrypted key fails instead of prompting on the terminal.
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else {
            let reasons = OpenSSLError.drainReasons()
            if reasons.contains(where: { $0.contains("bad decrypt") || $0.contains("interrupted or cancelled") }) {
                throw OpenSSLError(operation: "read the private key: it is encrypted; decrypt it first (openssl pkey -in KEY -out KEY.plain)", reasons: [])
            }
            throw OpenSSLError(operation: "read a PEM private key", reasons: reasons.isEmpty ? ["no PEM private key found"] : reasons)
        }
        self.init(taking: key)
    }

    /// PKCS#8, unencrypted: the store protects keys with file modes, not passphrases, because tests must start unattended.
    public var pem: Data {
        get throws {
            try MemoryBIO.collect("encode the private key as PEM") { bio in
                PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil)
            }
        }
    }

    // MARK: Public half

    /// DER SubjectPublicKeyInfo: the input of every SPKI pin.
    public var subjectPublicKeyInfoDER: Data {
        get throws { try Self.subjectPublicKeyInfoDER(of: pointer) }
    }

    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo (NSPinnedDomains, TrustKit and HPKP format).
    public var spkiSHA256: String {
        get throws { try Self.spkiSHA256(of: pointer) }
    }

    /// The pin of any public key, a certificate's included: one definition for keys and certificates alike.
    static func spkiSHA256(of pkey: OpaquePointer?) throws -> String {
        Digest.sha256(try subjectPublicKeyInfoDER(of: pkey)).base64EncodedString()
    }

    static func subjectPublicKeyInfoDER(of pkey: OpaquePointer?) throws -> Data {
        try derEncode("encode the public key") { i2d_PUBKEY(pkey, $0) }
    }

    public var description: KeyDescription { KeyDescription(pkey: pointer) }

    /// True when `certificate` carries this key's public half.
    package func matches(_ certificate: Certificate) -> Bool {
        X509_check_private_key(certificate.pointer, pointer) == 1
    }
}


/// Type and size of a key, read from OpenSSL.
public struct KeyDescription: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `RSA`, `EC`, `Ed25519`, or OpenSSL's name for anything else.
    public var type: KeyAlgorithm
    package var bits: Int
    /// OpenSSL's group name for EC keys (`prime256v1`, `secp384r1`).
    public var curve: String?

    init(pkey: OpaquePointer) {
        bits = Int(EVP_PKEY_get_bits(pkey))
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA: type = .rsa
        case NID_X9_62_id_ecPublicKey: type = .ec
        case NID_ED25519: type = .ed25519
        case NID_ED448: type = .ed448
        case NID_dhKeyAgreement: type = .dh
        case NID_X25519: type = .x25519
        case NID_X448: type = .x448
        case let id: type = KeyAlgorithm(rawValue: String(cString: OBJ_nid2sn(id)))
        }
        curve = KeyDescription.groupName(pkey)
    }

    static func groupName(_ pkey: OpaquePointer) -> String? {
        guard EVP_PKEY_get_base_id(pkey) == NID_X9_62_id_ecPublicKey else { return nil }
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &buffer, buffer.count, &length) == 1 else { return nil }
        return String(cBuffer: buffer)
    }

    public var description: String {
        if let curve { return "\(type) \(curve) (\(bits) bits)" }
        return "\(type) \(bits)"
    }
}
