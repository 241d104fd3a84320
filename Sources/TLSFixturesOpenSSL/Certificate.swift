import COpenSSL
import Foundation
import TLSFixturesWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owns one OpenSSL `X509`.
///
/// Immutable once built (we never modify a certificate after signing), and OpenSSL's `X509` is safe for
/// concurrent readers, hence `@unchecked Sendable`.
public final class Certificate: @unchecked Sendable, Equatable, CustomStringConvertible {
    package let pointer: OpaquePointer
    /// The certificate's DER encoding, made once when the object is: a certificate that cannot be encoded is an
    /// error at construction, never an empty value later.
    public let der: Data
    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo, as stored in the certificate (so a key type the linked OpenSSL
    /// cannot decode still has its pin).
    public let spkiSHA256: String

    /// Takes ownership of one reference (freed here if the certificate cannot be encoded).
    init(taking pointer: OpaquePointer) throws {
        do {
            (der, spkiSHA256) = try Certificate.encodings(pointer)
        } catch {
            X509_free(pointer)
            throw error
        }
        self.pointer = pointer
    }

    /// Shares an `X509` someone else owns (bumps its reference count).
    package init(retaining pointer: OpaquePointer) throws {
        (der, spkiSHA256) = try Certificate.encodings(pointer)
        X509_up_ref(pointer)
        self.pointer = pointer
    }

    private static func encodings(_ pointer: OpaquePointer) throws -> (Data, String) {
        OpenSSLError.clearQueue()
        let der = try derEncode("encode a certificate") { i2d_X509(pointer, $0) }
        guard let publicKey = X509_get_X509_PUBKEY(pointer) else {
            throw OpenSSLError(operation: "read a certificate's public key", reasons: ["the certificate has no SubjectPublicKeyInfo"])
        }
        let spki = try derEncode("encode a certificate's public key") { i2d_X509_PUBKEY(publicKey, $0) }
        return (der, Digest.sha256(spki).base64EncodedString())
    }

    deinit { X509_free(pointer) }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { X509_cmp(lhs.pointer, rhs.pointer) == 0 }

    // MARK: Decoding

    /// Parses DER; throws `OpenSSLError` with OpenSSL's reason when it is not a certificate.
    public convenience init(der: Data) throws {
        OpenSSLError.clearQueue()
        let x509 = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_X509(nil, &cursor, raw.count)
        }
        try self.init(taking: try checkNotNull(x509, "decode a DER certificate"))
    }

    /// Parses the first `CERTIFICATE` block of PEM text; use `all(pem:)` for a whole chain.
    public convenience init(pem: Data) throws {
        guard let first = try Certificate.all(pem: pem).first else {
            throw OpenSSLError(operation: "read a PEM certificate", reasons: ["no certificate found"])
        }
        try self.init(retaining: first.pointer)
    }

    /// Every certificate in a PEM bundle, in file order. Throws on damage; an empty bundle is empty.
    public static func all(pem: Data) throws -> [Certificate] {
        OpenSSLError.clearQueue()
        return try MemoryBIO.reading(pem) { bio in
            var certificates: [Certificate] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(try Certificate(taking: x509))
            }
            // Reading stops with "no start line" at the clean end of a bundle; anything else is damage.
            let reasons = OpenSSLError.drainReasons()
            if !reasons.isEmpty && !(reasons.count == 1 && reasons[0].contains("no start line")) {
                throw OpenSSLError(operation: "read a PEM certificate", reasons: reasons)
            }
            if certificates.isEmpty && String(decoding: pem, as: UTF8.self).contains("-----BEGIN") {
                throw OpenSSLError(operation: "read a PEM certificate", reasons: ["no certificate in the PEM data"])
            }
            return certificates
        }
    }

    /// Reads PEM or DER, whichever the bytes are.
    public static func read(_ data: Data) throws -> [Certificate] {
        if data.starts(with: Array("-----".utf8)) || String(decoding: data.prefix(4096), as: UTF8.self).contains("-----BEGIN") {
            return try all(pem: data)
        }
        return [try Certificate(der: data)]
    }

    // MARK: Encoding

    /// The certificate as one PEM block, with a trailing newline.
    public var pem: Data {
        (try? MemoryBIO.collect("encode a certificate as PEM") { PEM_write_bio_X509($0, pointer) }) ?? Data()
    }

    /// A chain as concatenated PEM, in the order given (leaf first, as servers send it).
    public static func pem(_ chain: [Certificate]) -> Data { chain.reduce(into: Data()) { $0.append($1.pem) } }

    // MARK: Reading

    /// The subject in RFC 2253 order and syntax (`CN=expired.fixtures.test,O=swift-tls-fixtures`).
    public var subject: String { Certificate.render(X509_get_subject_name(pointer)) }
    /// The issuer's name, in the same syntax as `subject`.
    public var issuer: String { Certificate.render(X509_get_issuer_name(pointer)) }
    public var description: String { subject }

    /// `nil` when the subject has no commonName; `""` when it has an empty one.
    public var commonName: String? {
        let name = X509_get_subject_name(pointer)
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index) else { return nil }
        return Certificate.utf8(X509_NAME_ENTRY_get_data(entry)) ?? ""
    }

    /// The subject key's algorithm, size and curve.
    public var publicKey: KeyDescription { KeyDescription(pkey: X509_get0_pubkey(pointer)) }


    /// SHA-256 of the DER: the fingerprint browsers show (not a pin: pins hash the SPKI).
    public var sha256Fingerprint: Data { Digest.sha256(der) }

    /// Start of validity, to the second.
    public var notBefore: Date { Certificate.date(X509_get0_notBefore(pointer)) }
    /// End of validity, to the second.
    public var notAfter: Date { Certificate.date(X509_get0_notAfter(pointer)) }

    /// The serial number in upper-case hex, no leading zeros; empty when OpenSSL cannot read it.
    public var serialHex: String {
        guard let bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(pointer), nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { shim_OPENSSL_free(hex) }
        return String(cString: hex)
    }

    /// OpenSSL's long name, e.g. `sha256WithRSAEncryption`, `ecdsa-with-SHA1`, `ED25519`.
    public var signatureAlgorithm: String { String(cString: OBJ_nid2ln(X509_get_signature_nid(pointer))) }

    /// Lowercase digest of the signature (`md5`, `sha1`, `sha256`, …), `none` for Ed25519.
    public var signatureDigest: String {
        var digestNID: Int32 = 0
        var keyNID: Int32 = 0
        guard OBJ_find_sigid_algs(X509_get_signature_nid(pointer), &digestNID, &keyNID) == 1,
              digestNID != NID_undef else { return "none" }
        return String(cString: OBJ_nid2sn(digestNID)).lowercased().replacingOccurrences(of: "-", with: "")
    }

    private var extensionFlags: UInt32 { X509_get_extension_flags(pointer) }
    /// basicConstraints says CA:TRUE.
    public var isCA: Bool { extensionFlags & UInt32(EXFLAG_CA) != 0 }
    /// Whether the certificate carries a name-constraints extension (only a CA's means anything).
    public var hasNameConstraints: Bool { X509_get_ext_by_NID(pointer, NID_name_constraints, -1) >= 0 }
    /// The CT precertificate SCT list extension (1.3.6.1.4.1.11129.2.4.2) is present.
    public var hasEmbeddedSCTs: Bool { X509_get_ext_by_NID(pointer, NID_ct_precert_scts, -1) >= 0 }
    /// Subject and issuer names are equal (a root, or a self-signed leaf).
    public var isSelfIssued: Bool { extensionFlags & UInt32(EXFLAG_SI) != 0 }
    /// Self-issued, and OpenSSL's check (its key identifiers and key usage) says it signed itself.
    public var isSelfSigned: Bool { extensionFlags & UInt32(EXFLAG_SS) != 0 }

    /// basicConstraints pathLenConstraint, when set.
    public var pathLength: Int? {
        let value = X509_get_pathlen(pointer)
        return value >= 0 ? Int(value) : nil
    }

    /// DNS names of the subjectAltName extension; `nil` when there is no such extension.
    public var dnsNames: [String]? { subjectAltNames.map { $0.compactMap { if case .dns(let n) = $0 { n } else { nil } } } }
    /// The subjectAltName's IP addresses in text form (`127.0.0.1`, `::1`).
    public var ipAddresses: [String] { (subjectAltNames ?? []).compactMap { if case .ip(let a) = $0 { a } else { nil } } }

    /// One subjectAltName entry: a DNS name, an IP address, or any other kind as OpenSSL prints it.
    public enum AltName: Equatable, Sendable { case dns(String), ip(String), other(String) }

    /// Every subjectAltName entry in order; nil when the certificate has no subjectAltName extension.
    public var subjectAltNames: [AltName]? {
        guard let raw = X509_get_ext_d2i(pointer, NID_subject_alt_name, nil, nil) else { return nil }
        let names = OpaquePointer(raw)
        defer { shim_GENERAL_NAMES_free(names) }
        var result: [AltName] = []
        for index in 0..<shim_sk_GENERAL_NAME_num(names) {
            guard let name = shim_sk_GENERAL_NAME_value(names, index) else { continue }
            let type = shim_GENERAL_NAME_type(name)
            let string = shim_GENERAL_NAME_string(name)
            switch type {
            case GEN_DNS: result.append(.dns(Certificate.bytes(string).map { String(decoding: $0, as: UTF8.self) } ?? ""))
            case GEN_IPADD: result.append(.ip(Certificate.bytes(string).map(Certificate.ipText) ?? ""))
            default: result.append(.other(Certificate.altNameText(name)))
            }
        }
        return result
    }

    /// One GENERAL_NAME as OpenSSL's configuration syntax writes it (`DNS:a.test`, `IP:127.0.0.1`, `email:a@b.test`,
    /// `URI:https://a.test/`), or `type N` for kinds the kit never writes.
    static func altNameText(_ name: UnsafeMutablePointer<GENERAL_NAME>) -> String {
        let type = shim_GENERAL_NAME_type(name)
        let bytes = Certificate.bytes(shim_GENERAL_NAME_string(name))
        let text = bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
        switch type {
        case GEN_DNS: return "DNS:\(text)"
        case GEN_IPADD: return "IP:\(bytes.map(Certificate.ipText) ?? "")"
        case GEN_EMAIL: return "email:\(text)"
        case GEN_URI: return "URI:\(text)"
        default: return "type \(type)"
        }
    }

    /// The name constraints extension's subtrees, written as `NameConstraints` entries are: a DNS name as stored
    /// (`localhost`, or `.test` in the leading-dot form older CAs used), an address block as `ADDRESS/PREFIX`
    /// (`127.0.0.0/8`, `::1/128`), anything else as `type N`. `nil` when the certificate has no such extension.
    public var nameConstraintEntries: (permitted: [String], excluded: [String])? {
        guard let raw = X509_get_ext_d2i(pointer, NID_name_constraints, nil, nil) else { return nil }
        let constraints = raw.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        defer { shim_NAME_CONSTRAINTS_free(constraints) }
        func entries(excluded: Bool) -> [String] {
            guard let subtrees = shim_NAME_CONSTRAINTS_subtrees(constraints, excluded ? 1 : 0) else { return [] }
            return (0..<shim_sk_GENERAL_SUBTREE_num(subtrees)).compactMap { index in
                guard let base = shim_GENERAL_SUBTREE_base(subtrees, index) else { return nil }
                let type = shim_GENERAL_NAME_type(base)
                let bytes = Certificate.bytes(shim_GENERAL_NAME_string(base)) ?? []
                switch type {
                case GEN_DNS: return String(decoding: bytes, as: UTF8.self)
                case GEN_IPADD where bytes.count == 8 || bytes.count == 32:
                    // Address then mask, RFC 5280 4.2.1.10; the mask's leading one bits are the prefix.
                    let half = bytes.count / 2
                    let prefix = bytes[half...].reduce(0) { $0 + $1.nonzeroBitCount }
                    return "\(Certificate.ipText(Array(bytes[..<half])))/\(prefix)"
                default: return "type \(type)"
                }
            }
        }
        return (entries(excluded: false), entries(excluded: true))
    }

    /// The keyUsage bits set, named as RFC 5280 4.2.1.3 names them (`digitalSignature`, `keyCertSign`); nil when the
    /// certificate has no keyUsage extension.
    public var keyUsage: [String]? {
        guard extensionFlags & UInt32(EXFLAG_KUSAGE) != 0 else { return nil }
        let bits = X509_get_key_usage(pointer)
        let names: [(UInt32, String)] = [
            (UInt32(KU_DIGITAL_SIGNATURE), "digitalSignature"), (UInt32(KU_NON_REPUDIATION), "nonRepudiation"),
            (UInt32(KU_KEY_ENCIPHERMENT), "keyEncipherment"), (UInt32(KU_DATA_ENCIPHERMENT), "dataEncipherment"),
            (UInt32(KU_KEY_AGREEMENT), "keyAgreement"), (UInt32(KU_KEY_CERT_SIGN), "keyCertSign"), (UInt32(KU_CRL_SIGN), "cRLSign"),
            (UInt32(KU_ENCIPHER_ONLY), "encipherOnly"), (UInt32(KU_DECIPHER_ONLY), "decipherOnly"),
        ]
        return names.filter { bits & $0.0 != 0 }.map(\.1)
    }

    /// Whether the certificate has a basicConstraints extension at all.
    public var hasBasicConstraints: Bool { X509_get_ext_by_NID(pointer, NID_basic_constraints, -1) >= 0 }

    /// Extended key usages by OpenSSL short name (`serverAuth`, `clientAuth`); `nil` when absent.
    public var extendedKeyUsage: [String]? {
        guard let raw = X509_get_ext_d2i(pointer, NID_ext_key_usage, nil, nil) else { return nil }
        let usages = OpaquePointer(raw)
        defer { shim_EXTENDED_KEY_USAGE_free(usages) }
        return (0..<shim_sk_ASN1_OBJECT_num(usages)).compactMap { index in
            guard let object = shim_sk_ASN1_OBJECT_value(usages, index) else { return nil }
            let nid = OBJ_obj2nid(object)
            if nid != NID_undef { return String(cString: OBJ_nid2sn(nid)) }
            var buffer = [CChar](repeating: 0, count: 128)
            OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
            return String(cBuffer: buffer)
        }
    }

    /// Every extension as OpenSSL prints it (`X509v3 Name Constraints` → `Permitted: DNS:localhost …`).
    public var extensionTexts: [(name: String, critical: Bool, text: String)] {
        (0..<X509_get_ext_count(pointer)).compactMap { index in
            guard let ext = X509_get_ext(pointer, index) else { return nil }
            let object = X509_EXTENSION_get_object(ext)
            var buffer = [CChar](repeating: 0, count: 128)
            let nid = OBJ_obj2nid(object)
            let name = nid != NID_undef ? String(cString: OBJ_nid2ln(nid))
                : { OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1); return String(cBuffer: buffer) }()
            let text = MemoryBIO.text { bio in
                if X509V3_EXT_print(bio, ext, 0, 0) != 1 {
                    ASN1_STRING_print(bio, X509_EXTENSION_get_data(ext))
                }
            }
            return (name, X509_EXTENSION_get_critical(ext) == 1, text.replacingOccurrences(of: "\n", with: " ").trimmingCharacters(in: .whitespaces))
        }
    }

    /// The whole certificate as `openssl x509 -text` prints it.
    public var text: String { MemoryBIO.text { X509_print($0, pointer) } }

    /// The signature verifies with `issuer`'s public key (the signature alone: no names, dates or chain).
    package func isSigned(by issuer: Certificate) -> Bool {
        X509_verify(pointer, X509_get0_pubkey(issuer.pointer)) == 1
    }

    // MARK: Helpers

    static func render(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        return MemoryBIO.text { X509_NAME_print_ex($0, name, 0, shim_XN_FLAG_RFC2253) }
    }

    static func utf8(_ string: UnsafePointer<ASN1_STRING>?) -> String? {
        guard let string else { return nil }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&out, string)
        guard length >= 0, let out else { return nil }
        defer { shim_OPENSSL_free(out) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }

    static func bytes(_ string: UnsafePointer<ASN1_STRING>?) -> [UInt8]? {
        guard let string, let data = ASN1_STRING_get0_data(string) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }

    package static func ipText(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 16 ? AF_INET6 : AF_INET
        guard bytes.count == 4 || bytes.count == 16,
              inet_ntop(family, bytes, &buffer, socklen_t(buffer.count)) != nil else {
            return bytes.map { String($0) }.joined(separator: ".")
        }
        return String(cBuffer: buffer)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        guard let time else { return .distantPast }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return .distantPast }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
