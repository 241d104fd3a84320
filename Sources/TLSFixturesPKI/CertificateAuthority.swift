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
