import COpenSSL
import Foundation

/// Signs one X.509 v3 certificate from primitive inputs.
///
/// Extensions are given in OpenSSL's own configuration syntax (`critical,CA:TRUE,pathlen:0`), the same
/// text `openssl x509 -extfile` reads, so every value here can be checked against OpenSSL's documentation
/// (x509v3_config(5)) rather than against our code. Profiles, defaults and policy live in the PKI layer.
package struct CertificateBuilder {
    package init(subject: [(field: String, value: String)] = [], notBefore: Date, notAfter: Date,
                 extensions: [(kind: X509ExtensionKind, value: String)] = [], serial: Data? = nil) {
        self.subject = subject; self.notBefore = notBefore; self.notAfter = notAfter
        self.extensions = extensions; self.serial = serial
    }
    /// Relative distinguished names in order, by OpenSSL short name (`CN`, `O`, `OU`).
    package var subject: [(field: String, value: String)] = []
    var notBefore: Date
    var notAfter: Date
    /// Kind and x509v3_config(5) text, added in order.
    package var extensions: [(kind: X509ExtensionKind, value: String)] = []
    /// Positive random serial when nil (RFC 5280: ≤ 20 octets, positive).
    var serial: Data? = nil

    /// The key a certificate is made for: one whose private half is here (self-signing possible) or a public key alone
    /// (a CSR's).
    package enum SubjectKey {
        case privateKey(PrivateKey)
        case publicKey(PublicKey)

        var pointer: OpaquePointer {
            switch self {
            case .privateKey(let key): return key.pointer
            case .publicKey(let key): return key.pointer
            }
        }

        package var privateKey: PrivateKey? {
            if case .privateKey(let key) = self { return key }
            return nil
        }

        package var description: KeyDescription { KeyDescription(pkey: pointer) }
    }

    /// `issuer == nil` makes a self-signed certificate. `digest` is OpenSSL's digest name (`SHA256`, `MD5`)
    /// or nil for algorithms that hash internally (Ed25519).
    package func sign(subjectKey: PrivateKey, issuer: (certificate: Certificate, key: PrivateKey)?, digest: String?) throws -> Certificate {
        try sign(subjectKey: .privateKey(subjectKey), issuer: issuer, digest: digest)
    }

    /// The same for either kind of subject key; a public key alone needs an `issuer`.
    package func sign(subjectKey: SubjectKey, issuer: (certificate: Certificate, key: PrivateKey)?, digest: String?) throws -> Certificate {
        OpenSSLError.clearQueue()
        guard let signingKey = issuer?.key ?? subjectKey.privateKey else {
            throw OpenSSLError(operation: "sign a certificate", reasons: ["a public key alone cannot sign its own certificate"])
        }
        let x509 = try checkNotNull(X509_new(), "allocate a certificate")
        // Freed here on every early exit; `Certificate(taking:)` owns it once it is signed (and frees it if it fails).
        var handedOver = false
        defer { if !handedOver { X509_free(x509) } }

        try checkOne(X509_set_version(x509, 2), "set the certificate version")
        try setSerial(x509)

        let name = try checkNotNull(X509_NAME_new(), "allocate a name")
        defer { X509_NAME_free(name) }
        for (field, value) in subject {
            let bytes = Array(value.utf8)
            // An empty CN is legal DER but below the minimum length in OpenSSL's string table, which only the
            // MBSTRING conversion enforces: a raw UTF8String of length 0 is how an "empty CN" is made on purpose.
            let type = bytes.isEmpty ? V_ASN1_UTF8STRING : MBSTRING_UTF8
            let rc = bytes.withUnsafeBufferPointer {
                X509_NAME_add_entry_by_txt(name, field, type, $0.baseAddress ?? UnsafePointer(bitPattern: 1), Int32(bytes.count), -1, 0)
            }
            try checkOne(rc, "add \(field)=\(value) to the subject")
        }
        try checkOne(X509_set_subject_name(x509, name), "set the subject")
        try checkOne(X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.certificate.pointer) } ?? name), "set the issuer")

        try setTime(notBefore, X509_set1_notBefore, x509, "notBefore")
        try setTime(notAfter, X509_set1_notAfter, x509, "notAfter")
        try checkOne(X509_set_pubkey(x509, subjectKey.pointer), "set the public key")

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate.pointer ?? x509, x509, nil, nil, 0)
        // Lets authorityKeyIdentifier be computed for self-signed certificates too.
        try checkOne(X509V3_set_issuer_pkey(&context, signingKey.pointer), "set the issuer key")
        for (kind, value) in extensions {
            let nid = kind.nid
            guard let ext = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw OpenSSLError.drain("build the \(String(cString: OBJ_nid2ln(nid))) extension from \"\(value.prefix(120))\"")
            }
            defer { X509_EXTENSION_free(ext) }
            try checkOne(X509_add_ext(x509, ext, -1), "add the \(String(cString: OBJ_nid2ln(nid))) extension")
        }

        var md: OpaquePointer? = nil
        if let digest {
            md = try checkNotNull(EVP_get_digestbyname(digest), "find the digest \(digest) in the linked OpenSSL")
        }
        if X509_sign(x509, signingKey.pointer, md) <= 0 {
            throw OpenSSLError.drain("sign with \(digest ?? "the key's own digest") using a \(signingKey.description) key")
        }
        handedOver = true
        return try Certificate(taking: x509)
    }

    private func setSerial(_ x509: OpaquePointer) throws {
        let bn = try checkNotNull(BN_new(), "allocate a serial number")
        defer { BN_free(bn) }
        if let serial {
            _ = serial.withUnsafeBytes { BN_bin2bn($0.bindMemory(to: UInt8.self).baseAddress, Int32(serial.count), bn) }
        } else {
            // 127 random bits with the top bit clear: positive and well inside the 20-octet limit.
            try checkOne(BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY), "draw a random serial number")
        }
        guard BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x509)) != nil else { throw OpenSSLError.drain("set the serial number") }
    }

    private func setTime(_ date: Date, _ setter: (OpaquePointer?, UnsafePointer<ASN1_TIME>?) -> Int32,
                         _ x509: OpaquePointer, _ label: String) throws {
        let time = try checkNotNull(ASN1_TIME_set(nil, time_t(date.timeIntervalSince1970.rounded(.down))), "encode \(label)")
        defer { ASN1_TIME_free(time) }
        try checkOne(setter(x509, time), "set \(label)")
    }
}

/// The X.509 v3 extensions the PKI layer writes, named so it needs none of OpenSSL's NIDs.
package enum X509ExtensionKind: Sendable {
    case basicConstraints, keyUsage, extendedKeyUsage, subjectKeyIdentifier, authorityKeyIdentifier
    case subjectAltName, nameConstraints, authorityInfoAccess, crlDistributionPoints, tlsFeature

    var nid: Int32 {
        switch self {
        case .basicConstraints: return NID_basic_constraints
        case .keyUsage: return NID_key_usage
        case .extendedKeyUsage: return NID_ext_key_usage
        case .subjectKeyIdentifier: return NID_subject_key_identifier
        case .authorityKeyIdentifier: return NID_authority_key_identifier
        case .subjectAltName: return NID_subject_alt_name
        case .nameConstraints: return NID_name_constraints
        case .authorityInfoAccess: return NID_info_access
        case .crlDistributionPoints: return NID_crl_distribution_points
        case .tlsFeature: return NID_tlsfeature
        }
    }
}
