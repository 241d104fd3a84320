import COpenSSL
import Foundation

/// PKCS#12 archives.
public enum PKCS12Export {
    /// Documented in docs/: PKCS#12 cannot be written without a password that every importer accepts.
    public static let defaultPassword = "tls-fixtures"

    /// A `.p12` holding `certificate`, its `key` (when given) and `chain`.
    ///
    /// Protected with PBE-SHA1-3DES and a SHA-1 MAC, the legacy profile: OpenSSL 3's default (AES-256 + PBKDF2)
    /// is rejected by older iOS/macOS importers with "MAC verification failed", and this file protects test material.
    public static func archive(certificate: Certificate, key: PrivateKey?, chain: [Certificate] = [],
                               friendlyName: String, password: String = defaultPassword) throws -> Data {
        OpenSSLError.clearQueue()
        let extra = try checkNotNull(shim_sk_X509_new_null(), "allocate the chain")
        defer { shim_sk_X509_free(extra) }
        for certificate in chain { _ = shim_sk_X509_push(extra, certificate.pointer) }
        let pbe = NID_pbe_WithSHA1And3_Key_TripleDES_CBC
        // mac_iter -1: no MAC yet; it is added below with an explicit digest.
        let p12 = try checkNotNull(
            PKCS12_create(password, friendlyName, key?.pointer, certificate.pointer, extra, pbe, pbe, 2048, -1, 0),
            "build the PKCS#12 archive")
        defer { PKCS12_free(p12) }
        try checkOne(PKCS12_set_mac(p12, password, -1, nil, 0, 2048, EVP_sha1()), "add the PKCS#12 MAC")
        return try derEncode("encode the PKCS#12 archive") { i2d_PKCS12(p12, $0) }
    }
}

extension PKCS12Export {
    /// The certificate and the key's SPKI pin a `.p12` holds, or nil when `data` is not an archive `password` opens:
    /// how an export tells an archive of the same material (new salts each time) from one of other material.
    package static func contents(_ data: Data, password: String = defaultPassword) -> (certificate: Certificate, keyPin: String?)? {
        opened(data, password: password).map { ($0.chain[0], $0.keyPin) }
    }

    /// The certificates a `.p12` holds (its own first, then the rest as stored) and its key's SPKI pin, or nil when
    /// `data` is not an archive `password` opens.
    package static func opened(_ data: Data, password: String) -> (chain: [Certificate], keyPin: String?)? {
        OpenSSLError.clearQueue()
        defer { OpenSSLError.clearQueue() }
        let parsed: OpaquePointer? = data.withUnsafeBytes { raw -> OpaquePointer? in
            var cursor = raw.bindMemory(to: UInt8.self).baseAddress
            return d2i_PKCS12(nil, &cursor, data.count)
        }
        guard let p12 = parsed else { return nil }
        defer { PKCS12_free(p12) }
        var key: OpaquePointer? = nil
        var x509: OpaquePointer? = nil
        var chain: OpaquePointer? = nil
        guard PKCS12_parse(p12, password, &key, &x509, &chain) == 1, let x509 else {
            if let key { EVP_PKEY_free(key) }
            return nil
        }
        var others: [Certificate] = []
        if let chain {
            for index in 0..<shim_sk_X509_num(chain) {
                if let item = shim_sk_X509_value(chain, index), let certificate = try? Certificate(retaining: item) {
                    others.append(certificate)
                }
            }
            shim_sk_X509_pop_free(chain)
        }
        let pin = key.flatMap { try? PrivateKey.spkiSHA256(of: $0) }
        if let key { EVP_PKEY_free(key) }
        guard let certificate = try? Certificate(taking: x509) else { return nil }
        return ([certificate] + others, pin)
    }
}
