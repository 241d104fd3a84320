import Foundation
import TLSFixturesOpenSSL

/// What `cert show` reads, found by its content whatever its name: certificates (PEM or DER, a chain), a PKCS#12
/// archive (opened with the password given, else the kit's, mkcert's `changeit` or none), or a certificate signing
/// request (PEM or DER) — what `step certificate inspect` and `openssl x509`/`pkcs12`/`req` each read.
package enum InspectedFile {
    /// Certificates, the first one the subject (a `.p12`'s own certificate, or a chain's leaf).
    case certificates([Certificate], fromPKCS12: Bool)
    /// A certificate signing request, its signature checked.
    case request(CertificateSigningRequest)

    /// The passwords a `.p12` is tried with when none is given.
    package static let usualPasswords = [PKCS12Export.defaultPassword, "changeit", ""]

    /// Reads `data` (a file's or standard input's bytes). Throws `invalidRequest` saying what it is not.
    package static func read(_ data: Data, password: String? = nil) throws -> InspectedFile {
        let text = String(decoding: data.prefix(4096), as: UTF8.self)
        if text.contains("-----BEGIN CERTIFICATE REQUEST-----")
            || text.contains("-----BEGIN NEW CERTIFICATE REQUEST-----") {
            return .request(try CertificateSigningRequest(data))
        }
        if let certificates = try? Certificate.read(data), !certificates.isEmpty {
            return .certificates(certificates, fromPKCS12: false)
        }
        for candidate in password.map({ [$0] }) ?? usualPasswords {
            if let opened = PKCS12Export.opened(data, password: candidate) {
                return .certificates(opened.chain, fromPKCS12: true)
            }
        }
        if let request = try? CertificateSigningRequest(data) { return .request(request) }
        let usual = usualPasswords.map { "\"\($0)\"" }.joined(separator: ", ")
        let tried = password == nil ? "any of the passwords \(usual)" : "the password given"
        throw PKIError(code: .invalidRequest,
                       reason: "not a certificate (PEM or DER), a certificate signing request, nor a PKCS#12 archive "
                          + "\(tried) opens",
                       fix: "give a .pem, .crt, .cer, .csr or .p12 (with its password)")
    }
}

/// A certificate signing request as `cert show` prints it.
package struct RequestSummary: Encodable, Sendable {
    package var subject: String
    package var requestedSubjectAltNames: [String]
    package var key: KeyDescription
    package var spkiSHA256: String

    package init(_ request: CertificateSigningRequest) throws {
        subject = request.subject.map { "\($0.field)=\($0.value)" }.joined(separator: ",")
        requestedSubjectAltNames = request.requestedSubjectAltNames
        key = request.keyDescription
        spkiSHA256 = try request.publicKey.spkiSHA256
    }

    package var text: String {
        let rows = [("Request for", subject.isEmpty ? "(empty subject)" : subject),
                    ("SANs", requestedSubjectAltNames.isEmpty ? "(none asked for)"
                        : requestedSubjectAltNames.joined(separator: ", ")),
                    ("Key", "\(key)"), ("SPKI pin", "sha256/\(spkiSHA256)")]
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }
}

extension CertificateRequest {
    /// A certificate signing request for `key` naming what this request names (its subject, hosts, emails and URIs),
    /// as `openssl req -new`, `step certificate create --csr` or mkcert's users make one to be signed elsewhere. PEM.
    package func signingRequest(key: PrivateKey) throws -> Data {
        let profile = try self.profile()
        let names = profile.subjectAltNames.map { $0.map(\.configText).joined(separator: ",") }
        return try CertificateSigningRequest.make(key: key, subject: profile.subject.entries, subjectAltName: names)
    }
}
