import Foundation
import NIOConcurrencyHelpers
import TLSFixturesOpenSSL

/// Where revocation information is published: the URLs a leaf's authorityInfoAccess (OCSP) and CRL distribution points
/// extensions name. `serve` publishes them on fixed ports (`serveDefault` for port base 9800); an in-process fixture on
/// the ports its own responder got.
public struct RevocationEndpoints: Sendable, Hashable, Codable {
    /// `http://HOST:PORT` of the responder that answers OCSP requests (`/ocsp`) and serves CRLs (`/crl/NAME.crl`).
    public var responder: String
    /// `http://HOST:PORT` of a port that refuses connections (bound, never listening): `ocsp-unreachable`'s responder.
    public var refusing: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(responder: String, refusing: String) {
        self.responder = responder
        self.refusing = refusing
    }

    /// Endpoints on `host` at these ports.
    public init(host: String, responderPort: Int, refusingPort: Int) {
        let authority = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        self.init(responder: "http://\(authority):\(responderPort)", refusing: "http://\(authority):\(refusingPort)")
    }

    /// The OCSP responder's URL, as leaves name it.
    public var ocspURL: String { responder + "/ocsp" }
    /// An OCSP URL at the refusing port, for `ocsp-unreachable`.
    public var unreachableOCSPURL: String { refusing + "/ocsp" }
    /// The URL of `authority`'s CRL on the responder (`/crl/NAME.crl`).
    public func crlURL(for authority: BuiltinAuthority) -> String { responder + "/crl/\(authority.rawValue).crl" }
}

/// What the issuing CA says about one leaf: the record behind its OCSP answers, its CRL entry and its staple.
package struct RevocationRecord: Sendable {
    package let authority: BuiltinAuthority
    package let issuer: CertificateAuthority
    package let leaf: Certificate
    package let status: OCSPCertificateStatus

    /// OCSP answers are valid for a day from a minute ago (a little clock skew is harmless); CRLs for a week.
    static let ocspValidity: TimeInterval = 86_400
    static let crlValidity: TimeInterval = 7 * 86_400
    static let skew: TimeInterval = 60

    package init(authority: BuiltinAuthority, issuer: CertificateAuthority, leaf: Certificate, revoked: Bool, now: Date = Date()) {
        self.authority = authority
        self.issuer = issuer
        self.leaf = leaf
        // Revoked at the moment it was issued (notBefore is a day before that), for key compromise: the reason every
        // verifier treats as "never trust this certificate".
        self.status = revoked ? .revoked(at: min(leaf.notBefore.addingTimeInterval(86_400), now), reason: .keyCompromise) : .good
    }

    /// A fresh response about this leaf, signed by its issuer: what a server staples.
    public func ocspResponse(now: Date = Date()) throws -> Data {
        let signer = OCSPResponseSigner(issuer: issuer.certificate, key: issuer.privateKey)
        let id = try OCSPCertificateID(certificate: leaf, issuer: issuer.certificate)
        return try signer.sign([(id, status)], thisUpdate: now.addingTimeInterval(-Self.skew),
                               nextUpdate: now.addingTimeInterval(Self.ocspValidity))
    }
}

/// The revocation records one responder answers for, and the answers: OCSP responses and CRLs, both signed by the CA
/// that issued the certificates (RFC 6960 §4.2.2.2, RFC 5280 §5). Thread-safe: every connection of the responder asks.
package final class RevocationRegistry: Sendable {
    private struct State {
        var records: [RevocationRecord] = []
        var crlNumber = 0
    }
    private let state = NIOLockedValueBox(State())

    package init() {}

    package func register(_ record: RevocationRecord) {
        state.withLockedValue { $0.records.append(record) }
    }

    package var records: [RevocationRecord] { state.withLockedValue { $0.records } }

    /// The DER response to a DER request: `good`/`revoked` for leaves on record, `unknown` for other certificates of a
    /// known issuer, `unauthorized` when no certificate asked about is from an issuer this registry knows, and
    /// `malformedRequest` for bytes that are not a request. Never throws for bad input: a client gets OCSP's own answer.
    public func ocspResponse(to requestDER: Data, now: Date = Date()) -> Data {
        let records = self.records
        guard let request = try? OCSPRequest(der: requestDER), let ids = try? request.certificateIDs(), !ids.isEmpty else {
            return (try? OCSPResponseSigner.failure(.malformedRequest)) ?? Data()
        }
        // One signer per response: the issuer of the first certificate asked about that this registry knows.
        guard let signer = ids.lazy.compactMap({ id in records.first { id.isIssued(by: $0.issuer.certificate) } }).first?.issuer else {
            return (try? OCSPResponseSigner.failure(.unauthorized)) ?? Data()
        }
        let answers = ids.map { id -> (OCSPCertificateID, OCSPCertificateStatus) in
            guard id.isIssued(by: signer.certificate) else { return (id, .unknown) }
            let serial = id.serialHex
            let record = records.first { $0.issuer.certificate == signer.certificate && $0.leaf.serialHex == serial }
            return (id, record?.status ?? .unknown)
        }
        do {
            return try OCSPResponseSigner(issuer: signer.certificate, key: signer.privateKey)
                .sign(answers, nonceFrom: request, thisUpdate: now.addingTimeInterval(-RevocationRecord.skew),
                      nextUpdate: now.addingTimeInterval(RevocationRecord.ocspValidity))
        } catch {
            return (try? OCSPResponseSigner.failure(.internalError)) ?? Data()
        }
    }

    /// The DER CRL of `authority`, listing every revoked leaf on record that it issued; nil when no record names it.
    public func crl(of authority: BuiltinAuthority, now: Date = Date()) throws -> Data? {
        let (records, number) = state.withLockedValue { state -> ([RevocationRecord], Int) in
            state.crlNumber += 1
            return (state.records.filter { $0.authority == authority }, state.crlNumber)
        }
        guard let issuer = records.first?.issuer else { return nil }
        let entries = records.compactMap { record -> RevokedEntry? in
            guard case .revoked(let at, let reason) = record.status else { return nil }
            return RevokedEntry(serialHex: record.leaf.serialHex, revokedAt: at, reason: reason)
        }
        return try CRLSigner(issuer: issuer.certificate, key: issuer.privateKey)
            .sign(revoked: entries, number: number, thisUpdate: now.addingTimeInterval(-RevocationRecord.skew),
                  nextUpdate: now.addingTimeInterval(RevocationRecord.crlValidity))
    }
}
