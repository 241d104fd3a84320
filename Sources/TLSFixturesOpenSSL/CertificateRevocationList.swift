import COpenSSL
import Foundation

/// One entry of a CRL: which certificate (by serial number), since when, and why.
package struct RevokedEntry: Sendable, Equatable {
    package init(serialHex: String, revokedAt: Date, reason: RevocationReason) {
        self.serialHex = serialHex; self.revokedAt = revokedAt; self.reason = reason
    }
    /// As `Certificate.serialHex` spells it.
    var serialHex: String
    var revokedAt: Date
    var reason: RevocationReason
}

/// Signs X.509 v2 CRLs (RFC 5280 §5) as the CA that issued the certificates they list.
package struct CRLSigner {
    package init(issuer: Certificate, key: PrivateKey) { self.issuer = issuer; self.key = key }
    let issuer: Certificate
    let key: PrivateKey

    /// A DER CRL listing `revoked`, valid from `thisUpdate` to `nextUpdate`, with the CRL number and authority key
    /// identifier RFC 5280 requires of a conforming CA, each entry with its reason code, signed with SHA-256.
    package func sign(revoked: [RevokedEntry], number: Int, thisUpdate: Date, nextUpdate: Date) throws -> Data {
        OpenSSLError.clearQueue()
        let crl = try checkNotNull(X509_CRL_new(), "allocate a CRL")
        defer { X509_CRL_free(crl) }
        try checkOne(X509_CRL_set_version(crl, 1), "set the CRL version (v2)")
        try checkOne(X509_CRL_set_issuer_name(crl, X509_get_subject_name(issuer.pointer)), "set the CRL issuer")
        try checkOne(try ASN1Time.with(thisUpdate) { X509_CRL_set1_lastUpdate(crl, $0) }, "set the CRL's thisUpdate")
        try checkOne(try ASN1Time.with(nextUpdate) { X509_CRL_set1_nextUpdate(crl, $0) }, "set the CRL's nextUpdate")
        for entry in revoked { try add(entry, to: crl) }
        try checkOne(X509_CRL_sort(crl), "sort the CRL entries")

        let crlNumber = try checkNotNull(ASN1_INTEGER_new(), "allocate the CRL number")
        defer { ASN1_INTEGER_free(crlNumber) }
        try checkOne(ASN1_INTEGER_set(crlNumber, number), "set the CRL number")
        try checkOne(X509_CRL_add1_ext_i2d(crl, NID_crl_number, crlNumber, 0, 0), "add the CRL number")
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer.pointer, nil, nil, crl, 0)
        guard let authorityKeyID = X509V3_EXT_nconf_nid(nil, &context, NID_authority_key_identifier, "keyid:always") else {
            throw OpenSSLError.drain("build the CRL's authority key identifier")
        }
        defer { X509_EXTENSION_free(authorityKeyID) }
        try checkOne(X509_CRL_add_ext(crl, authorityKeyID, -1), "add the CRL's authority key identifier")

        if X509_CRL_sign(crl, key.pointer, EVP_sha256()) <= 0 { throw OpenSSLError.drain("sign the CRL as \(issuer.subject)") }
        return try derEncode("encode the CRL") { i2d_X509_CRL(crl, $0) }
    }

    private func add(_ entry: RevokedEntry, to crl: OpaquePointer) throws {
        let revoked = try checkNotNull(X509_REVOKED_new(), "allocate a CRL entry")
        var handedOver = false
        defer { if !handedOver { X509_REVOKED_free(revoked) } }
        var bn: OpaquePointer? = nil
        guard BN_hex2bn(&bn, entry.serialHex) > 0, let bn else { throw OpenSSLError.drain("read serial \(entry.serialHex)") }
        defer { BN_free(bn) }
        let serial = try checkNotNull(BN_to_ASN1_INTEGER(bn, nil), "encode serial \(entry.serialHex)")
        defer { ASN1_INTEGER_free(serial) }
        try checkOne(X509_REVOKED_set_serialNumber(revoked, serial), "set the serial of a CRL entry")
        try checkOne(try ASN1Time.with(entry.revokedAt) { X509_REVOKED_set_revocationDate(revoked, $0) }, "set a revocation date")
        let reason = try checkNotNull(ASN1_ENUMERATED_new(), "allocate a reason code")
        defer { ASN1_ENUMERATED_free(reason) }
        try checkOne(ASN1_ENUMERATED_set(reason, entry.reason.rawValue), "set the reason code")
        try checkOne(X509_REVOKED_add1_ext_i2d(revoked, NID_crl_reason, reason, 0, 0), "add the reason code")
        try checkOne(X509_CRL_add0_revoked(crl, revoked), "add serial \(entry.serialHex) to the CRL")
        handedOver = true
    }
}
