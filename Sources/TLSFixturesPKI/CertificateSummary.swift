import Foundation
import TLSFixturesOpenSSL

/// A human- and machine-readable account of one certificate: what `cert show` and `ca show` print.
package struct CertificateSummary: Codable, Sendable, Equatable {
    package var subject: String
    package var issuer: String
    package var serial: String
    package var subjectAltNames: [String]?
    package var signatureAlgorithm: String
    package var key: KeyDescription
    package var notBefore: Date
    package var notAfter: Date
    package var validityDays: Int
    package var status: String
    package var extendedKeyUsage: [String]?
    package var keyUsage: String?
    package var basicConstraints: String?
    package var nameConstraints: String?
    package var spkiSHA256: String
    package var sha256Fingerprint: String

    package init(_ certificate: Certificate, now: Date = Date()) {
        let extensions = certificate.extensionTexts
        func ext(_ name: String) -> String? { extensions.first { $0.name == name }?.text }
        subject = certificate.subject
        issuer = certificate.issuer
        serial = certificate.serialHex
        subjectAltNames = certificate.subjectAltNames?.map {
            switch $0 {
            case .dns(let name): return "DNS:\(name)"
            case .ip(let address): return "IP:\(address)"
            case .other(let text): return text
            }
        }
        signatureAlgorithm = certificate.signatureAlgorithm
        key = certificate.publicKey
        notBefore = certificate.notBefore
        notAfter = certificate.notAfter
        validityDays = Int((notAfter.timeIntervalSince(notBefore) / 86_400).rounded())
        switch ValidityState(notBefore: notBefore, notAfter: notAfter, now: now) {
        case .valid: status = "valid"
        case .expired: status = "expired"
        case .notYetValid: status = "not yet valid"
        }
        extendedKeyUsage = certificate.extendedKeyUsage
        keyUsage = ext("X509v3 Key Usage")
        basicConstraints = ext("X509v3 Basic Constraints")
        nameConstraints = ext("X509v3 Name Constraints")
        spkiSHA256 = certificate.spkiSHA256
        sha256Fingerprint = certificate.sha256Fingerprint.colonHex
    }

    /// Aligned `label: value` lines.
    package var text: String {
        let formatter = ISO8601DateFormatter()
        var rows: [(String, String)] = [
            ("Subject", subject.isEmpty ? "(empty)" : subject),
            ("Issuer", issuer),
            ("Serial", serial),
            ("SANs", subjectAltNames.map { $0.count > 12 ? $0.prefix(10).joined(separator: ", ") + ", … (\($0.count) in all)" : $0.joined(separator: ", ") } ?? "(no subjectAltName extension)"),
            ("Signature", signatureAlgorithm),
            ("Key", key.description),
            ("Validity", "\(formatter.string(from: notBefore)) → \(formatter.string(from: notAfter)) (\(validityDays) days, \(status))"),
            ("EKU", extendedKeyUsage.map { $0.joined(separator: ", ") } ?? "(none: any purpose)"),
        ]
        if let keyUsage { rows.append(("Key usage", keyUsage)) }
        if let basicConstraints { rows.append(("Basic", basicConstraints)) }
        if let nameConstraints { rows.append(("Name constr.", nameConstraints)) }
        rows.append(("SPKI pin", "sha256/\(spkiSHA256)"))
        rows.append(("SHA-256", sha256Fingerprint))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }
}
