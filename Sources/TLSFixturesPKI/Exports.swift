import Foundation
import TLSFixturesWire
import TLSFixturesOpenSSL

/// File formats iOS and macOS tooling consume.
package enum ExportFormat: String, CaseIterable, Sendable, Codable {
    /// Base64 with BEGIN/END lines: `openssl`, curl, Python, Android.
    case pem
    /// Raw DER, conventionally `.cer`: what Xcode bundles for AFNetworking/Alamofire certificate pinning, and what
    /// Safari and the Settings app install as a profile.
    case der
    /// PKCS#12, conventionally `.p12`, protected with `PKCS12Export.defaultPassword`.
    case p12

    package var fileExtension: String {
        switch self {
        case .pem: return "pem"
        case .der: return "cer"
        case .p12: return "p12"
        }
    }
}


extension Credential {
    /// The identity as a PKCS#12 archive: this certificate, its private key and its intermediates, protected with
    /// `password` — what `SecPKCS12Import` turns into a `SecIdentity` for a `URLSession` client-certificate challenge,
    /// and what curl takes with `--cert-type P12`. The one place a `.p12` with a key is made (`cert issue --out-dir`,
    /// `pins` for a client-certificate scenario and the control API all use it).
    public func pkcs12(friendlyName: String = "swift-tls-fixtures client", password: String = PKCS12Export.defaultPassword) throws -> Data {
        try PKCS12Export.archive(certificate: certificate, key: privateKey, chain: intermediates, friendlyName: friendlyName, password: password)
    }
}

extension Certificate {
    /// The certificate in `format`. PKCS#12 carries only the certificate here (installing a CA's key on a device
    /// would defeat its name constraints); use `PKCS12Export.archive` to include a key on purpose.
    package func exported(as format: ExportFormat) throws -> Data {
        switch format {
        case .pem: return pem
        case .der: return der
        case .p12: return try PKCS12Export.archive(certificate: self, key: nil, friendlyName: commonName ?? subject)
        }
    }
}

/// Writes exported material into a folder of the user's, never replacing a different file without `force`.
package enum ExportWriter {
    package struct Written: Sendable, Codable, Equatable {
        package var path: String
        package var kind: String
    }

    /// `NAME.pem` (chain as served), `NAME.key` (0600), `NAME.cer` (DER leaf), `NAME.p12` (leaf + key + chain).
    public static func write(_ credential: Credential, name: String, to directory: URL, force: Bool) throws -> [Written] {
        try FileSystem.createMissingDirectory(directory, mode: 0o755)
        let files: [(String, Data, mode_t, String)] = [
            ("\(name).pem", credential.chainPEM, 0o644, "certificate chain (PEM)"),
            ("\(name).key", try credential.privateKey.pem, 0o600, "private key (PEM, PKCS#8)"),
            ("\(name).cer", credential.certificate.der, 0o644, "certificate (DER)"),
            ("\(name).p12", try credential.pkcs12(friendlyName: name), 0o600,
             "PKCS#12 (password \"\(PKCS12Export.defaultPassword)\")"),
        ]
        // Check everything before writing anything, so a refusal leaves the folder as it was.
        var unchanged = true
        for (file, data, _, _) in files where !file.hasSuffix(".p12") {
            let url = directory.appendingPathComponent(file)
            guard let existing = try FileSystem.read(url) else { unchanged = false; continue }
            if existing != data {
                unchanged = false
                if !force {
                    throw PKIError.fileExists(url.path)
                }
            }
        }
        let p12 = directory.appendingPathComponent("\(name).p12")
        if !unchanged && !force && FileSystem.exists(p12) {
            throw PKIError.fileExists(p12.path, "exists and belongs to other material")
        }
        return try files.map { file, data, mode, kind in
            let url = directory.appendingPathComponent(file)
            // A .p12 embeds random salts, so it differs on every write even for the same material: keep it when
            // nothing else changed.
            if url == p12 && unchanged && FileSystem.exists(url) && !force { return Written(path: url.path, kind: kind + ", unchanged") }
            try FileSystem.writeAtomically(data, to: url, mode: mode)
            return Written(path: url.path, kind: kind)
        }
    }

    /// One certificate in one format.
    public static func write(_ data: Data, to url: URL, force: Bool) throws {
        if !force, let existing = try FileSystem.read(url), existing != data {
            throw PKIError.fileExists(url.path)
        }
        try FileSystem.createMissingDirectory(url.deletingLastPathComponent(), mode: 0o755)
        try FileSystem.writeAtomically(data, to: url, mode: 0o644)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
