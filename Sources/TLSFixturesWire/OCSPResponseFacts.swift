import Foundation

/// What a client reads from an OCSP response about one certificate: the probe's view of a stapled response.
public struct OCSPResponseFacts: Codable, Sendable, Equatable {
    /// `successful`, `malformedRequest`, … (RFC 6960's names).
    public var responseStatus: String
    /// `good`, `revoked` or `unknown` for the certificate asked about; nil when the response has no answer for it.
    public var certificateStatus: String?
    /// RFC 5280's reason name (`keyCompromise`, …) when the status is `revoked`; nil otherwise or when absent.
    public var revocationReason: String?
    /// When the certificate was revoked; nil unless the status is `revoked`.
    public var revokedAt: Date?
    /// The responder's thisUpdate: the time the status was known to be correct.
    public var thisUpdate: Date?
    /// The responder's nextUpdate: after it, a client should not trust the response; nil when the responder gave none.
    public var nextUpdate: Date?
    /// The response's signature verifies with the issuer's key and the issuer is the signer (what RFC 6960 calls a
    /// response signed by the CA itself).
    public var signedByIssuer: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(responseStatus: String, certificateStatus: String? = nil, revocationReason: String? = nil, revokedAt: Date? = nil,
                thisUpdate: Date? = nil, nextUpdate: Date? = nil, signedByIssuer: Bool) {
        self.responseStatus = responseStatus; self.certificateStatus = certificateStatus; self.revocationReason = revocationReason
        self.revokedAt = revokedAt; self.thisUpdate = thisUpdate; self.nextUpdate = nextUpdate; self.signedByIssuer = signedByIssuer
    }
}
