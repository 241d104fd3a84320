import COpenSSL
import Foundation
import NIOConcurrencyHelpers

// Where a certificate says its revocation status can be found, and OCSP stapling on both ends of a connection.

extension Certificate {
    /// The OCSP responder URLs of the authorityInfoAccess extension (RFC 5280 §4.2.2.1), in order.
    public var ocspURLs: [String] {
        guard let list = X509_get1_ocsp(pointer) else { return [] }
        defer { X509_email_free(list) }
        return (0..<shim_sk_OPENSSL_STRING_num(list)).compactMap { shim_sk_OPENSSL_STRING_value(list, $0).map { String(cString: $0) } }
    }

    /// The URIs of the CRL distribution points extension (RFC 5280 §4.2.1.13).
    public var crlURLs: [String] {
        guard let raw = X509_get_ext_d2i(pointer, NID_crl_distribution_points, nil, nil) else { return [] }
        let points = OpaquePointer(raw)
        defer { shim_CRL_DIST_POINTS_free(points) }
        var urls: [String] = []
        for index in 0..<shim_sk_DIST_POINT_num(points) {
            guard let point = shim_sk_DIST_POINT_value(points, index), let names = shim_DIST_POINT_fullname(point) else { continue }
            for nameIndex in 0..<shim_sk_GENERAL_NAME_num(names) {
                guard let name = shim_sk_GENERAL_NAME_value(names, nameIndex), shim_GENERAL_NAME_type(name) == GEN_URI,
                      let bytes = Certificate.bytes(shim_GENERAL_NAME_string(name)) else { continue }
                urls.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        return urls
    }

    /// The TLS Feature extension (RFC 7633) lists status_request: "OCSP must-staple".
    public var mustStaple: Bool {
        guard let raw = X509_get_ext_d2i(pointer, NID_tlsfeature, nil, nil) else { return false }
        let features = OpaquePointer(raw)
        defer { shim_TLS_FEATURE_free(features) }
        // status_request is TLS extension 5 (RFC 6066 §8).
        return (0..<shim_sk_ASN1_INTEGER_num(features)).contains { ASN1_INTEGER_get(shim_sk_ASN1_INTEGER_value(features, $0)) == 5 }
    }
}

/// Hands a server the DER OCSP response to staple, made on demand and reused while it is fresh.
///
/// OpenSSL calls back on whatever thread runs the handshake, so the cache is locked. A response is remade once it is
/// older than `refreshAfter`, long before its nextUpdate, so a server running for days never staples a stale one.
package final class OCSPStapler: Sendable {
    private let make: @Sendable () throws -> Data
    private let refreshAfter: TimeInterval
    private let cache = NIOLockedValueBox<(made: Date, der: Data)?>(nil)

    package init(refreshAfter: TimeInterval = 3_600, make: @escaping @Sendable () throws -> Data) {
        self.make = make
        self.refreshAfter = refreshAfter
    }

    /// The response to staple now; nil when none can be made (the handshake then goes on without one).
    public func current(now: Date = Date()) -> Data? {
        cache.withLockedValue { cached in
            if let cached, now.timeIntervalSince(cached.made) < refreshAfter { return cached.der }
            guard let fresh = try? make() else { return cached?.der }
            cached = (now, fresh)
            return fresh
        }
    }
}

extension TLSContext {
    /// Staples `stapler`'s response when a client asks for the certificate status (status_request, RFC 6066 §8); in
    /// TLS 1.3 it rides in the leaf's CertificateEntry, in TLS 1.2 in a CertificateStatus message. The context keeps
    /// the stapler alive. Call before the context is shared.
    package func staple(_ stapler: OCSPStapler) {
        stapleSource = stapler
        _ = shim_SSL_CTX_set_tlsext_status_arg(pointer, Unmanaged.passUnretained(stapler).toOpaque())
        _ = shim_SSL_CTX_set_tlsext_status_cb(pointer) { ssl, argument in
            guard let ssl, let argument else { return SSL_TLSEXT_ERR_NOACK }
            let stapler = Unmanaged<OCSPStapler>.fromOpaque(argument).takeUnretainedValue()
            guard let der = stapler.current(), !der.isEmpty else { return SSL_TLSEXT_ERR_NOACK }
            // OpenSSL frees the staple with OPENSSL_free once it is sent, so it must be OpenSSL's own copy.
            guard let copy = der.withUnsafeBytes({ shim_OPENSSL_memdup($0.baseAddress, $0.count) }) else { return SSL_TLSEXT_ERR_NOACK }
            if shim_SSL_set_tlsext_status_ocsp_resp(ssl, copy.assumingMemoryBound(to: UInt8.self), Int32(der.count)) != 1 {
                shim_OPENSSL_free(copy)
                return SSL_TLSEXT_ERR_NOACK
            }
            return SSL_TLSEXT_ERR_OK
        }
    }
}

/// The client side: ask for a stapled response, and read the one the server sent.
package enum StapleRequest {
    package static func ask(_ ssl: OpaquePointer) {
        _ = shim_SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp)
    }

    /// The stapled DER response, or nil when the server sent none.
    package static func received(_ ssl: OpaquePointer) -> Data? {
        var bytes: UnsafePointer<UInt8>? = nil
        let length = shim_SSL_get_tlsext_status_ocsp_resp(ssl, &bytes)
        guard length > 0, let bytes else { return nil }
        return Data(bytes: bytes, count: length)
    }
}
