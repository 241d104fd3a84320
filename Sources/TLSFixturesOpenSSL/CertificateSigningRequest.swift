import COpenSSL
import Foundation

/// Owns one OpenSSL `EVP_PKEY` holding only a public key: the key of a certificate signing request, whose private half
/// stays with whoever made the request.
package final class PublicKey: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Takes ownership of one reference.
    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// Type and size, as for a private key.
    package var description: KeyDescription { KeyDescription(pkey: pointer) }

    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo: the key's SPKI pin.
    package var spkiSHA256: String {
        get throws { try PrivateKey.spkiSHA256(of: pointer) }
    }
}

/// A PKCS#10 certificate signing request (`openssl req -new`, mkcert's `-csr`, `step certificate create --csr`), read
/// and checked: its self-signature must verify, so the requester holds the private key of the public key in it.
package struct CertificateSigningRequest: Sendable {
    /// The requested subject, in order, by OpenSSL short name (`CN`, `O`, `C`, …).
    package let subject: [(field: String, value: String)]
    /// The subjectAltName entries the request asks for (`DNS:a.test`, `IP:127.0.0.1`, `email:…`, `URI:…`), in order;
    /// empty when it asks for none.
    package let requestedSubjectAltNames: [String]
    /// The key the certificate will carry.
    package let publicKey: PublicKey

    /// Reads a PEM or DER request; throws with OpenSSL's words when it is not one or its signature does not verify.
    package init(_ data: Data) throws {
        OpenSSLError.clearQueue()
        var request = try MemoryBIO.reading(data) { PEM_read_bio_X509_REQ($0, nil, nil, nil) }
        if request == nil {
            OpenSSLError.clearQueue()
            request = data.withUnsafeBytes { raw -> OpaquePointer? in
                var cursor = raw.bindMemory(to: UInt8.self).baseAddress
                return d2i_X509_REQ(nil, &cursor, data.count)
            }
        }
        guard let request else {
            throw OpenSSLError(operation: "read a certificate signing request (PEM or DER)",
                               reasons: OpenSSLError.drainReasons().suffix(1) + ["not a PKCS#10 request"])
        }
        defer { X509_REQ_free(request) }
        guard let key = X509_REQ_get_pubkey(request) else { throw OpenSSLError.drain("read the request's public key") }
        let publicKey = PublicKey(taking: key)
        guard X509_REQ_verify(request, publicKey.pointer) == 1 else {
            throw OpenSSLError(operation: "check the request's signature", reasons: OpenSSLError.drainReasons()
                + ["the request is not signed by the key in it, so whoever sent it may not hold that key"])
        }
        self.publicKey = publicKey
        subject = Self.entries(X509_REQ_get_subject_name(request))
        requestedSubjectAltNames = Self.requestedNames(request)
    }

    private static func entries(_ name: OpaquePointer?) -> [(field: String, value: String)] {
        guard let name else { return [] }
        return (0..<X509_NAME_entry_count(name)).compactMap { index in
            guard let entry = X509_NAME_get_entry(name, index) else { return nil }
            let nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))
            guard nid != NID_undef, let value = Certificate.utf8(X509_NAME_ENTRY_get_data(entry)) else { return nil }
            return (String(cString: OBJ_nid2sn(nid)), value)
        }
    }

    private static func requestedNames(_ request: OpaquePointer) -> [String] {
        guard let extensions = X509_REQ_get_extensions(request) else { return [] }
        defer { shim_sk_X509_EXTENSION_pop_free(extensions) }
        for index in 0..<shim_sk_X509_EXTENSION_num(extensions) {
            guard let ext = shim_sk_X509_EXTENSION_value(extensions, index),
                  OBJ_obj2nid(X509_EXTENSION_get_object(ext)) == NID_subject_alt_name,
                  let raw = X509V3_EXT_d2i(ext) else { continue }
            let names = OpaquePointer(raw)
            defer { shim_GENERAL_NAMES_free(names) }
            return (0..<shim_sk_GENERAL_NAME_num(names)).compactMap { index in
                shim_sk_GENERAL_NAME_value(names, index).map(Certificate.altNameText)
            }
        }
        return []
    }
}

extension CertificateSigningRequest {
    /// A new request for `key`, as `openssl req -new` makes one: `subject` in order (OpenSSL short names), the
    /// subjectAltName extension asked for when `subjectAltName` (x509v3_config(5) text: `DNS:a.test,IP:127.0.0.1`) is
    /// given, signed by `key` with SHA-256 (EdDSA with its own hash). PEM.
    package static func make(key: PrivateKey, subject: [(field: String, value: String)],
                             subjectAltName: String?) throws -> Data {
        OpenSSLError.clearQueue()
        let request = try checkNotNull(X509_REQ_new(), "allocate a certificate signing request")
        defer { X509_REQ_free(request) }
        try checkOne(X509_REQ_set_version(request, 0), "set the request's version")
        let name = try checkNotNull(X509_NAME_new(), "allocate a name")
        defer { X509_NAME_free(name) }
        for (field, value) in subject {
            let bytes = Array(value.utf8)
            let rc = bytes.withUnsafeBufferPointer {
                X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, $0.baseAddress ?? UnsafePointer(bitPattern: 1),
                                           Int32(bytes.count), -1, 0)
            }
            try checkOne(rc, "add \(field)=\(value) to the subject")
        }
        try checkOne(X509_REQ_set_subject_name(request, name), "set the subject")
        try checkOne(X509_REQ_set_pubkey(request, key.pointer), "set the public key")
        if let subjectAltName {
            let extensions = try checkNotNull(shim_sk_X509_EXTENSION_new_null(), "allocate the extensions")
            defer { shim_sk_X509_EXTENSION_pop_free(extensions) }
            guard let ext = X509V3_EXT_nconf_nid(nil, nil, NID_subject_alt_name, subjectAltName) else {
                throw OpenSSLError.drain("build the subjectAltName extension from \"\(subjectAltName.prefix(120))\"")
            }
            guard shim_sk_X509_EXTENSION_push(extensions, ext) > 0 else {
                X509_EXTENSION_free(ext)
                throw OpenSSLError.drain("add the subjectAltName extension")
            }
            try checkOne(X509_REQ_add_extensions(request, extensions), "add the requested extensions")
        }
        let digest = key.description.type.isEdDSA ? nil : EVP_sha256()
        guard X509_REQ_sign(request, key.pointer, digest) > 0 else { throw OpenSSLError.drain("sign the request") }
        return try MemoryBIO.collect("encode the request as PEM") { PEM_write_bio_X509_REQ($0, request) }
    }

    /// The request's public key as a key description (type, size).
    package var keyDescription: KeyDescription { publicKey.description }
}
