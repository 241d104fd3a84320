import Foundation
import TLSFixturesOpenSSL

/// A certificate with its private key and the chain that goes with it: what a server presents.
public struct Credential: Sendable {
    /// The end-entity certificate.
    public let certificate: Certificate
    /// The leaf's private key: what the server signs its handshake with.
    public let privateKey: PrivateKey
    /// The certificates between `certificate` and `root`, nearest first (intermediates). Never includes the leaf.
    public let intermediates: [Certificate]
    /// The root this chain ends in (the leaf itself when self-signed).
    public let root: Certificate

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(certificate: Certificate, privateKey: PrivateKey, intermediates: [Certificate], root: Certificate) {
        self.certificate = certificate; self.privateKey = privateKey; self.intermediates = intermediates; self.root = root
    }

    /// Leaf first, then intermediates: what a correctly configured server sends.
    public var chain: [Certificate] { [certificate] + intermediates }

    /// `chain` as concatenated PEM, leaf first: a server's certificate file.
    public var chainPEM: Data { Certificate.pem(chain) }
}

/// A CA that can sign anything, including what Apple's and swift-crypto's APIs refuse to make (SHA-1, MD5,
/// 512-bit RSA, no SAN, absurd validity).
///
/// Either persistent (from a `CertificateStore`, so apps can trust and pin it across runs) or ephemeral (in memory,
/// for tests that want no files):
///
/// ```swift
/// let ca = try CertificateAuthority.ephemeral()
/// let fixture = try await FixtureServer.start(serving: try ca.issueServerCertificate(hosts: ["localhost"]))
/// let result = try await TLSProbe(trusting: [ca.certificate]).probe(ProbeTarget(host: "localhost", port: fixture.port))
/// await fixture.stop()
/// ```
public final class CertificateAuthority: Sendable {
    /// This authority's own certificate: the issuer of what it signs.
    public let certificate: Certificate
    /// The key it signs with.
    public let privateKey: PrivateKey
    /// From this authority up to (not including) the root; empty for a root.
    public let chainToRoot: [Certificate]
    /// The self-signed root its chain ends in (itself when it is a root): what a client must trust.
    public let root: Certificate

    /// Wraps an existing certificate and key; `root` defaults to `certificate` itself (a root CA).
    public init(certificate: Certificate, privateKey: PrivateKey, chainToRoot: [Certificate] = [], root: Certificate? = nil) {
        self.certificate = certificate; self.privateKey = privateKey; self.chainToRoot = chainToRoot
        self.root = root ?? certificate
    }

    /// Days before its end from which a CA is said to be expiring: a warning while there is time to replace it.
    public static let expiryWarningDays = 30

    /// One line when this CA has expired or ends within `expiryWarningDays` (every certificate it signed then fails
    /// with "certificate has expired"), saying how to replace it; nil otherwise. `name` and `store` say which CA.
    public func expiryWarning(name: String = "the CA", store: String? = nil, now: Date = Date()) -> String? {
        let end = certificate.notAfter
        let day = ISO8601DateFormatter.string(from: end, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        let which = "\(name)" + (store.map { " in \($0)" } ?? "") + " (\(certificate.commonName ?? certificate.subject))"
        let fix = "replace it with `tls-fixtures ca init --force` (from Swift: initializeCA(ifExists: .replace)), then trust the new one where the old one was trusted"
        if end <= now {
            return "\(which) expired on \(day): clients refuse every certificate it signed (\"certificate has expired\"); \(fix)"
        }
        let remaining = end.timeIntervalSince(now) / 86_400
        guard remaining < Double(Self.expiryWarningDays) else { return nil }
        let days = Int(remaining.rounded(.down))
        return "\(which) expires on \(day), in \(days == 0 ? "less than a day" : "\(days) day\(days == 1 ? "" : "s")"): then clients refuse "
            + "every certificate it signed; \(fix)"
    }

    /// One line when this CA's key is one default OpenSSL clients refuse (RSA below `CAOptions.minimumRSABits`): every
    /// certificate it signed fails with "CA certificate key too weak"; nil otherwise. `name` and `store` say which CA.
    public func weakKeyWarning(name: String = "the CA", store: String? = nil) -> String? {
        let key = privateKey.description
        guard key.type == .rsa, key.bits < CAOptions.minimumRSABits else { return nil }
        let which = "\(name)" + (store.map { " in \($0)" } ?? "") + " (\(certificate.commonName ?? certificate.subject))"
        return "\(which) has an RSA-\(key.bits) key: default OpenSSL clients (curl, Python, Node) refuse every certificate it "
            + "signed (\"CA certificate key too weak\"); replace it with `tls-fixtures ca init --force` (from Swift: "
            + "initializeCA(ifExists: .replace)), then trust the new one where the old one was trusted"
    }

    /// Default subject for a CA made on this machine: who and where, so a device's list of trusted roots tells
    /// you which developer's CA it is.
    public static var defaultCommonName: String {
        let user = ProcessInfo.processInfo.environment["USER"] ?? ProcessInfo.processInfo.environment["LOGNAME"] ?? "user"
        return "swift-tls-fixtures CA \(user)@\(machineName)"
    }

    /// This machine's name as the kernel has it, first label only. Not `ProcessInfo.hostName`: on Darwin that asks
    /// NSHost, which resolves the machine's addresses by reverse DNS and blocks while it waits (about 35 s a process
    /// on GitHub's macOS runners), and every new store's CA would pay it.
    static var machineName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.split(separator: ".").first.map(String.init) ?? "localhost"
    }

    /// A fresh root held only in memory. Name-constrained to loopback and reserved test names unless told otherwise.
    public static func ephemeral(key: KeySpec = .ec(.p256), commonName: String = "swift-tls-fixtures ephemeral CA",
                                 nameConstraints: NameConstraints? = .localDevelopment, days: Int = 3650) throws -> CertificateAuthority {
        let privateKey = try key.generate()
        let profile = CertificateProfile.authority(commonName: commonName, days: days, nameConstraints: nameConstraints)
        return CertificateAuthority(certificate: try profile.sign(subjectKey: privateKey, issuer: nil), privateKey: privateKey)
    }

    /// A subordinate CA signed by this one (`pathLength` 0 unless told otherwise).
    public func intermediate(commonName: String, key: KeySpec = .ec(.p256), digest: SignatureDigest = .sha256,
                             pathLength: Int? = 0, nameConstraints: NameConstraints? = nil, keyToUse: PrivateKey? = nil) throws -> CertificateAuthority {
        let subjectKey = try keyToUse ?? key.generate()
        var profile = CertificateProfile.authority(commonName: commonName, pathLength: pathLength, digest: digest,
                                                   nameConstraints: nameConstraints)
        profile.validity = .days(3650)
        let issued = try issue(profile, key: subjectKey)
        return CertificateAuthority(certificate: issued.certificate, privateKey: subjectKey,
                                    chainToRoot: [issued.certificate] + chainToRoot, root: root)
    }

    /// Signs `profile` for `key`.
    public func issue(_ profile: CertificateProfile, key: PrivateKey) throws -> Credential {
        let certificate = try profile.sign(subjectKey: key, issuer: (self.certificate, privateKey))
        return Credential(certificate: certificate, privateKey: key, intermediates: chainToRoot, root: root)
    }

    /// Signs `profile` for a new key of kind `keySpec`.
    public func issue(_ profile: CertificateProfile, keySpec: KeySpec = .ec(.p256)) throws -> Credential {
        try issue(profile, key: try keySpec.generate())
    }

    /// trustme's one-liner: a server certificate for `hosts` (DNS names and IP addresses).
    ///
    /// The default names `localhost` only. Add `127.0.0.1` or `::1` when a client connects by address, knowing that
    /// BoringSSL-based clients (swift-nio-ssl, AsyncHTTPClient, Chrome) then refuse the chain of a name-constrained CA:
    /// they cannot evaluate iPAddress constraints (see `NameConstraints.localDevelopment`).
    public func issueServerCertificate(hosts: [String] = ["localhost"], keySpec: KeySpec = .ec(.p256)) throws -> Credential {
        try issue(try CertificateProfile.server(hosts: hosts), keySpec: keySpec)
    }

    /// A client certificate for mutual-TLS tests.
    public func issueClientCertificate(commonName: String = "swift-tls-fixtures client", keySpec: KeySpec = .ec(.p256)) throws -> Credential {
        try issue(.client(commonName: commonName), keySpec: keySpec)
    }

    /// A self-signed certificate: the "no CA at all" case.
    public static func selfSigned(_ profile: CertificateProfile, key: PrivateKey) throws -> Credential {
        let certificate = try profile.sign(subjectKey: key, issuer: nil)
        return Credential(certificate: certificate, privateKey: key, intermediates: [], root: certificate)
    }
}

extension CertificateAuthority {
    /// A CA of the user's own: its certificate first, then the certificates above it (as a server would send them), and
    /// its private key. Throws `notAnAuthority` unless the first is a CA certificate (basicConstraints CA:TRUE) of
    /// that key. The root is the chain's self-signed last certificate, or `root` when given (the store's, say).
    public convenience init(chain: [Certificate], privateKey: PrivateKey, root: Certificate? = nil) throws {
        guard let certificate = chain.first else {
            throw PKIError(code: .notAnAuthority, reason: "no certificate was given for the issuer", fix: "give its PEM file")
        }
        guard certificate.isCA else {
            throw PKIError(code: .notAnAuthority, subject: certificate.subject,
                           reason: "\(certificate.subject) is not a CA certificate (no basicConstraints CA:TRUE), so nothing it signs verifies",
                           fix: "sign with a CA: make one with CertificateRequest.isCA (`cert issue --ca`) or `ca init`")
        }
        guard privateKey.matches(certificate) else {
            throw PKIError(code: .notAnAuthority, subject: certificate.subject,
                           reason: "the key given is not the private key of \(certificate.subject)", fix: "give the key that goes with it")
        }
        let selfSignedRoot = chain.last.flatMap { $0.isSelfSigned ? $0 : nil }
        let above = Array(chain.dropFirst().filter { $0 != selfSignedRoot })
        let anchor = root ?? selfSignedRoot ?? chain.last!
        self.init(certificate: certificate, privateKey: privateKey,
                  chainToRoot: certificate == anchor ? [] : [certificate] + above, root: anchor)
    }
}
