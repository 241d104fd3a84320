import COpenSSL
import Foundation
import TLSFixturesWire

// OCSP (RFC 6960) through OpenSSL's OCSP API: requests read, responses signed by the issuing CA, responses read back.
// The CA itself is an authorised responder (RFC 6960 §4.2.2.2), so no delegated responder certificate is needed and
// clients check the signature against the issuer they already have.

/// Why a certificate was revoked (RFC 5280 §5.3.1 CRLReason), with OpenSSL's names (`OCSP_crl_reason_str`).
public enum RevocationReason: Int, Codable, Sendable, CaseIterable, CustomStringConvertible {
    case unspecified = 0, keyCompromise = 1, caCompromise = 2, affiliationChanged = 3, superseded = 4
    case cessationOfOperation = 5, certificateHold = 6, removeFromCRL = 8, privilegeWithdrawn = 9, aaCompromise = 10

    public var description: String { String(cString: OCSP_crl_reason_str(Int(rawValue))) }
}

/// What a responder says about one certificate.
public enum OCSPCertificateStatus: Sendable, Equatable {
    case good
    case revoked(at: Date, reason: RevocationReason)
    /// The responder does not know the certificate (not one of its issuer's, or not one it has a record of).
    case unknown

    /// `good`, `revoked` or `unknown`, as `openssl ocsp` prints it.
    public var name: String {
        switch self {
        case .good: return "good"
        case .revoked: return "revoked"
        case .unknown: return "unknown"
        }
    }
}

/// The outcome of an OCSP request as a whole (RFC 6960 §4.2.1 OCSPResponseStatus).
public enum OCSPResponseStatus: Int32, Sendable {
    case successful = 0, malformedRequest = 1, internalError = 2, tryLater = 3, signatureRequired = 5, unauthorized = 6
}

/// Owns one certificate identifier (`OCSP_CERTID`): the issuer's name and key hashes and a serial number.
package final class OCSPCertificateID {
    let pointer: OpaquePointer
    deinit { OCSP_CERTID_free(pointer) }
    private init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// The identifier a client computes for `certificate` (SHA-1 hashes, as RFC 6960 clients and OpenSSL do by default).
    package convenience init(certificate: Certificate, issuer: Certificate) throws {
        OpenSSLError.clearQueue()
        self.init(taking: try checkNotNull(OCSP_cert_to_id(EVP_sha1(), certificate.pointer, issuer.pointer),
                                           "make the OCSP certificate ID of \(certificate.subject)"))
    }

    /// A copy of an identifier someone else owns.
    convenience init(copying pointer: OpaquePointer) throws {
        self.init(taking: try checkNotNull(OCSP_CERTID_dup(pointer), "copy an OCSP certificate ID"))
    }

    /// Whether the name and key hashes are those of `issuer`, computed with the hash algorithm this identifier uses.
    package func isIssued(by issuer: Certificate) -> Bool {
        var algorithm: OpaquePointer? = nil
        guard OCSP_id_get0_info(nil, &algorithm, nil, nil, pointer) == 1, let algorithm,
              let digest = EVP_get_digestbyname(OBJ_nid2sn(OBJ_obj2nid(algorithm))),
              let issuerID = OCSP_cert_to_id(digest, nil, issuer.pointer) else {
            OpenSSLError.clearQueue()
            return false
        }
        defer { OCSP_CERTID_free(issuerID) }
        return OCSP_id_issuer_cmp(issuerID, pointer) == 0
    }

    /// The serial number asked about, in `BN_bn2hex`'s spelling (as `Certificate.serialHex`).
    package var serialHex: String {
        var serial: UnsafeMutablePointer<ASN1_INTEGER>? = nil
        guard OCSP_id_get0_info(nil, nil, nil, &serial, pointer) == 1, let serial,
              let bn = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { shim_OPENSSL_free(hex) }
        return String(cString: hex)
    }
}

/// Owns one decoded OCSP request (`OCSP_REQUEST`).
package final class OCSPRequest {
    let pointer: OpaquePointer
    deinit { OCSP_REQUEST_free(pointer) }

    package init(der: Data) throws {
        OpenSSLError.clearQueue()
        let request = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_OCSP_REQUEST(nil, &cursor, raw.count)
        }
        pointer = try checkNotNull(request, "decode an OCSP request")
    }

    /// The certificates asked about, in request order.
    package func certificateIDs() throws -> [OCSPCertificateID] {
        try (0..<OCSP_request_onereq_count(pointer)).map { index in
            let one = try checkNotNull(OCSP_request_onereq_get0(pointer, index), "read request \(index) of an OCSP request")
            return try OCSPCertificateID(copying: try checkNotNull(OCSP_onereq_get0_id(one), "read a certificate ID"))
        }
    }
}

/// Signs OCSP responses as the CA that issued the certificates they are about.
package struct OCSPResponseSigner {
    package init(issuer: Certificate, key: PrivateKey) { self.issuer = issuer; self.key = key }
    let issuer: Certificate
    let key: PrivateKey

    /// A successful response with one answer per identifier, valid from `thisUpdate` to `nextUpdate`, the request's
    /// nonce copied when it had one (RFC 8954), signed with SHA-256. DER of the whole `OCSPResponse`.
    package func sign(_ answers: [(OCSPCertificateID, OCSPCertificateStatus)], nonceFrom request: OCSPRequest? = nil,
              thisUpdate: Date, nextUpdate: Date) throws -> Data {
        OpenSSLError.clearQueue()
        let basic = try checkNotNull(OCSP_BASICRESP_new(), "allocate an OCSP response")
        defer { OCSP_BASICRESP_free(basic) }
        // The times are OpenSSL objects that must outlive every call that reads them: held for the whole loop.
        let from = try ASN1Time(thisUpdate)
        let until = try ASN1Time(nextUpdate)
        try withExtendedLifetime((from, until)) {
            for (id, status) in answers {
                let single: OpaquePointer?
                switch status {
                case .good:
                    single = OCSP_basic_add1_status(basic, id.pointer, V_OCSP_CERTSTATUS_GOOD, 0, nil, from.pointer, until.pointer)
                case .unknown:
                    single = OCSP_basic_add1_status(basic, id.pointer, V_OCSP_CERTSTATUS_UNKNOWN, 0, nil, from.pointer, until.pointer)
                case .revoked(let at, let reason):
                    let when = try ASN1Time(at)
                    single = withExtendedLifetime(when) {
                        OCSP_basic_add1_status(basic, id.pointer, V_OCSP_CERTSTATUS_REVOKED, Int32(reason.rawValue), when.pointer,
                                               from.pointer, until.pointer)
                    }
                }
                _ = try checkNotNull(single, "add a \(status.name) answer to the OCSP response")
            }
        }
        if let request { _ = OCSP_copy_nonce(basic, request.pointer) }   // 2 (no nonce to copy) is fine too
        // The signer's certificate rides along (flags 0): a client that looks for the signer only in the response and
        // the chain the server sent (curl's --cert-status does) finds it even when the issuer is a root nobody sends.
        try checkOne(OCSP_basic_sign(basic, issuer.pointer, key.pointer, EVP_sha256(), nil, 0),
                     "sign the OCSP response as \(issuer.subject)")
        let response = try checkNotNull(OCSP_response_create(OCSPResponseStatus.successful.rawValue, basic), "wrap the OCSP response")
        defer { OCSP_RESPONSE_free(response) }
        return try derEncode("encode the OCSP response") { i2d_OCSP_RESPONSE(response, $0) }
    }

    /// An unsuccessful response (`malformedRequest`, `unauthorized`, …): a status and no body.
    package static func failure(_ status: OCSPResponseStatus) throws -> Data {
        OpenSSLError.clearQueue()
        let response = try checkNotNull(OCSP_response_create(status.rawValue, nil), "make an OCSP \(status) response")
        defer { OCSP_RESPONSE_free(response) }
        return try derEncode("encode the OCSP response") { i2d_OCSP_RESPONSE(response, $0) }
    }
}

/// Reads a DER `OCSPResponse` about `certificate` issued by `issuer`.
package enum OCSPResponseReader {
    package static func facts(der: Data, certificate: Certificate, issuer: Certificate?) -> OCSPResponseFacts {
        OpenSSLError.clearQueue()
        defer { OpenSSLError.clearQueue() }
        let parsed = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_OCSP_RESPONSE(nil, &cursor, raw.count)
        }
        guard let response = parsed else {
            return OCSPResponseFacts(responseStatus: "undecodable", signedByIssuer: false)
        }
        defer { OCSP_RESPONSE_free(response) }
        let status = OCSP_response_status(response)
        var facts = OCSPResponseFacts(responseStatus: String(cString: OCSP_response_status_str(Int(status))), signedByIssuer: false)
        guard status == OCSPResponseStatus.successful.rawValue, let basic = OCSP_response_get1_basic(response) else { return facts }
        defer { OCSP_BASICRESP_free(basic) }
        guard let issuer, let id = try? OCSPCertificateID(certificate: certificate, issuer: issuer) else { return facts }
        facts.signedByIssuer = isSigned(basic, by: issuer)

        var certificateStatus: Int32 = 0
        var reason: Int32 = 0
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        let found = withExtendedLifetime(id) {
            OCSP_resp_find_status(basic, id.pointer, &certificateStatus, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1
        }
        guard found else { return facts }
        facts.certificateStatus = String(cString: OCSP_cert_status_str(Int(certificateStatus)))
        if certificateStatus == V_OCSP_CERTSTATUS_REVOKED {
            facts.revocationReason = reason >= 0 ? String(cString: OCSP_crl_reason_str(Int(reason))) : nil
            facts.revokedAt = revokedAt.map { Certificate.date($0) }
        }
        facts.thisUpdate = thisUpdate.map { Certificate.date($0) }
        facts.nextUpdate = nextUpdate.map { Certificate.date($0) }
        return facts
    }

    /// Signed by `issuer` itself: its key verifies the signature and the responder ID names it.
    private static func isSigned(_ basic: OpaquePointer, by issuer: Certificate) -> Bool {
        guard let others = shim_sk_X509_new_null() else { return false }
        defer { shim_sk_X509_free(others) }
        _ = shim_sk_X509_push(others, issuer.pointer)
        var signer: OpaquePointer? = nil
        guard OCSP_resp_get0_signer(basic, &signer, others) == 1, let signer, X509_cmp(signer, issuer.pointer) == 0 else { return false }
        return OCSP_basic_verify(basic, others, nil, UInt(OCSP_NOVERIFY | OCSP_TRUSTOTHER | OCSP_NOINTERN)) == 1
    }
}

/// Owns one `ASN1_TIME`, for APIs that take a pointer. Keep it alive across the call that reads `pointer`
/// (`withExtendedLifetime`, or `ASN1Time.with`): Swift may free an object as soon as its last property is read.
final class ASN1Time {
    let pointer: UnsafeMutablePointer<ASN1_TIME>
    deinit { ASN1_TIME_free(pointer) }

    init(_ date: Date) throws {
        pointer = try checkNotNull(ASN1_TIME_set(nil, time_t(date.timeIntervalSince1970.rounded(.down))), "encode \(date)")
    }

    /// Runs `body` with a time that lives exactly as long as the call.
    static func with<T>(_ date: Date, _ body: (UnsafeMutablePointer<ASN1_TIME>) throws -> T) throws -> T {
        let time = try ASN1Time(date)
        return try withExtendedLifetime(time) { try body(time.pointer) }
    }
}
