import Foundation
import TLSFixturesOpenSSL

/// A human- and machine-readable account of one certificate: what `cert show`, `cert issue` and `ca show` print.
///
/// Its JSON is the one certificate shape of the CLI (docs/cli.md, "JSON output"): values, never display strings —
/// lists of names, booleans, numbers, dates in ISO 8601, fingerprints and pins in the probe's formats (SHA-256 as
/// lowercase hex without colons, SPKI pins as base64).
package struct CertificateSummary: Codable, Sendable, Equatable {
    package var subject: String
    package var issuer: String
    /// Lowercase hex.
    package var serial: String
    /// `DNS:…`, `IP:…`, `email:…`, `URI:…`; nil when there is no subjectAltName extension.
    package var subjectAltNames: [String]?
    package var signatureAlgorithm: String
    package var key: KeyDescription
    package var notBefore: Date
    package var notAfter: Date
    package var validityDays: Int
    /// `valid`, `expired` or `not-yet-valid`, as of when it was read.
    package var status: String
    /// Short names (`serverAuth`); nil when there is no extendedKeyUsage extension (any purpose).
    package var extendedKeyUsage: [String]?
    /// RFC 5280 names (`digitalSignature`); nil when there is no keyUsage extension.
    package var keyUsage: [String]?
    /// nil when there is no basicConstraints extension.
    package var basicConstraints: Basic?
    /// nil when there is no nameConstraints extension; entries as `NameConstraints` writes them (`test`, `127.0.0.0/8`).
    package var nameConstraints: Constraints?
    /// Base64 SHA-256 of the SubjectPublicKeyInfo (`sha256/` + this is the pin).
    package var spkiSHA256: String
    /// SHA-256 of the DER certificate, lowercase hex (as `probe --json` gives it).
    package var sha256Fingerprint: String

    package struct Basic: Codable, Sendable, Equatable {
        package var ca: Bool
        package var pathLength: Int?

        package func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(ca, forKey: .ca)
            try container.encode(pathLength, forKey: .pathLength)
        }
    }

    package struct Constraints: Codable, Sendable, Equatable {
        package var permitted: [String]
        package var excluded: [String]
    }

    package init(_ certificate: Certificate, now: Date = Date()) {
        subject = certificate.subject
        issuer = certificate.issuer
        serial = certificate.serialHex.lowercased()
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
        case .notYetValid: status = "not-yet-valid"
        }
        extendedKeyUsage = certificate.extendedKeyUsage
        keyUsage = certificate.keyUsage
        basicConstraints = certificate.hasBasicConstraints ? Basic(ca: certificate.isCA, pathLength: certificate.pathLength) : nil
        nameConstraints = certificate.nameConstraintEntries.map { Constraints(permitted: $0.permitted, excluded: $0.excluded) }
        spkiSHA256 = certificate.spkiSHA256
        sha256Fingerprint = certificate.sha256Fingerprint.hexString
    }

    /// Every key, an absent value as `null`: the documented shape has the same keys for every certificate.
    package func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(subject, forKey: .subject)
        try c.encode(issuer, forKey: .issuer)
        try c.encode(serial, forKey: .serial)
        try c.encode(subjectAltNames, forKey: .subjectAltNames)
        try c.encode(signatureAlgorithm, forKey: .signatureAlgorithm)
        try c.encode(key, forKey: .key)
        try c.encode(notBefore, forKey: .notBefore)
        try c.encode(notAfter, forKey: .notAfter)
        try c.encode(validityDays, forKey: .validityDays)
        try c.encode(status, forKey: .status)
        try c.encode(extendedKeyUsage, forKey: .extendedKeyUsage)
        try c.encode(keyUsage, forKey: .keyUsage)
        try c.encode(basicConstraints, forKey: .basicConstraints)
        try c.encode(nameConstraints, forKey: .nameConstraints)
        try c.encode(spkiSHA256, forKey: .spkiSHA256)
        try c.encode(sha256Fingerprint, forKey: .sha256Fingerprint)
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
            ("Validity", "\(formatter.string(from: notBefore)) → \(formatter.string(from: notAfter)) (\(validityDays) days, "
                + "\(status.replacingOccurrences(of: "-", with: " ")))"),
            ("EKU", extendedKeyUsage.map { $0.joined(separator: ", ") } ?? "(none: any purpose)"),
        ]
        if let keyUsage { rows.append(("Key usage", keyUsage.isEmpty ? "(none)" : keyUsage.joined(separator: ", "))) }
        if let basicConstraints {
            rows.append(("Basic", basicConstraints.ca ? "CA" + (basicConstraints.pathLength.map { ", path length \($0)" } ?? "") : "not a CA"))
        }
        if let nameConstraints {
            let parts = [nameConstraints.permitted.isEmpty ? nil : "permitted " + nameConstraints.permitted.joined(separator: ", "),
                         nameConstraints.excluded.isEmpty ? nil : "excluded " + nameConstraints.excluded.joined(separator: ", ")]
            rows.append(("Name constr.", parts.compactMap { $0 }.joined(separator: "; ")))
        }
        rows.append(("SPKI pin", "sha256/\(spkiSHA256)"))
        rows.append(("SHA-256", sha256Fingerprint))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }
}
