import Foundation

/// A certificate order in the words a person types (`--host`, `--key rsa:1024`, `--digest sha1`, `--eku none`):
/// the `cert issue` command and scripts build one, the store fills it. Parsing lives here, not in the CLI, so
/// the rules are the library's and are tested once.
public struct CertificateRequest: Sendable {
    /// The file name in the store (`certs/NAME.pem`, `keys/NAME.key`): letters, digits, `-`, `_` and `.`.
    public var name: String
    /// DNS names and IP addresses for the subjectAltName, in order; empty for a client certificate.
    public var hosts: [String] = []
    /// nil: the first host. Use `omitCommonName` for no CN and `""` for an empty one.
    public var commonName: String? = nil
    /// true: no CN in the subject at all.
    public var omitCommonName = false
    /// The O attribute; nil leaves it out.
    public var organization: String? = "swift-tls-fixtures"
    /// The key to generate (or `rsa:1024`, `ec:p384`, … as typed); default P-256.
    public var key: KeySpec = .ec(.p256)
    /// Reuse another certificate's key (re-issue on the same key: SPKI pins keep matching).
    public var keyName: String? = nil
    /// The hash the issuer signs with; default SHA-256.
    public var digest: SignatureDigest = .sha256
    /// Default 397 days from one day ago.
    public var validity: Validity = .standardLeaf
    /// Default serverAuth; `[]` for none in the extension, nil leaves the extension out.
    public var extendedKeyUsage: [ExtendedKeyUsage]? = [.serverAuth]
    /// nil: the usual bits for the key type and role.
    public var keyUsage: [KeyUsage]? = nil
    /// true issues a CA certificate (basicConstraints CA:TRUE, keyCertSign).
    public var isCA = false
    /// For a CA: how many CAs may follow below it; nil for no limit.
    public var pathLength: Int? = nil
    /// For a CA: name-constraint subtrees it may sign for (DNS names or CIDR blocks).
    public var permitted: [String] = []
    /// For a CA: name-constraint subtrees it must not sign for.
    public var excluded: [String] = []
    /// true: no subjectAltName extension (the `no-san` shape; `hosts` then only feed the CN).
    public var omitSubjectAltNames = false
    /// Who signs it: a built-in authority (default the root) or the certificate itself.
    public var issuer: LeafIssuer = .authority(.root)

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(name: String) { self.name = name }

    /// The profile this request describes, validated.
    public func profile() throws -> CertificateProfile {
        try CertificateStore.validate(name: name)
        if hosts.isEmpty && !omitSubjectAltNames && namesAServer {
            throw PKIError(code: .missingHost, reason: "a server certificate needs a name to be verified against",
                           fix: "add at least one host (DNS name or IP address), or set omitSubjectAltNames for a certificate without subjectAltName")
        }
        try CertificateProfile.checkNameCount(hosts.count)
        try validity.check()
        let names = try hosts.map(SubjectAltName.init(host:))
        // A client or CA certificate with no host is named by its store name: its subject is who it is.
        let cn: String? = omitCommonName ? nil : (commonName ?? names.first?.value ?? name)
        var profile = CertificateProfile(
            subject: Subject(commonName: cn, organization: organization),
            subjectAltNames: omitSubjectAltNames || names.isEmpty ? nil : names,
            validity: validity, digest: digest, extendedKeyUsage: extendedKeyUsage, keyUsage: keyUsage,
            basicConstraints: BasicConstraints(isCA: isCA, pathLength: isCA ? pathLength : nil))
        if !permitted.isEmpty || !excluded.isEmpty {
            guard isCA else {
                throw PKIError(code: .requiresCA, reason: "name constraints (permitted, excluded) belong on a CA certificate", fix: "set isCA")
            }
            profile.nameConstraints = NameConstraints(permitted: permitted, excluded: excluded)
            _ = try profile.nameConstraints?.configText()
        }
        if pathLength != nil && !isCA {
            throw PKIError(code: .requiresCA, reason: "a path length (pathLength) applies to CA certificates", fix: "set isCA")
        }
        return profile
    }

    /// Whether the certificate is for a server, so it must name one: not a CA, and an EKU that includes serverAuth (or
    /// none at all, which permits every purpose). A client certificate (`--eku clientAuth`) is identified by its
    /// subject; mTLS servers never match it against a host name.
    public var namesAServer: Bool {
        !isCA && (extendedKeyUsage?.contains(.serverAuth) ?? true)
    }

    /// The hosts that `issuer`'s name constraints (or those of a CA above it) do not permit: clients that enforce them
    /// (every stack but Java's) refuse such a certificate although it is issued. Empty when every host is inside, when
    /// nothing is constrained, and for a self-signed certificate (no issuer).
    public func nameConstraintViolations(issuer authority: CertificateAuthority?) -> [NameConstraintViolation] {
        guard let authority, !omitSubjectAltNames else { return [] }
        let names = hosts.compactMap { try? SubjectAltName(host: $0) }
        var violations: [NameConstraintViolation] = []
        for constrained in [authority.certificate] + authority.chainToRoot + [authority.root] {
            guard let entries = constrained.nameConstraintEntries else { continue }
            let constraints = NameConstraints(permitted: entries.permitted, excluded: entries.excluded)
            for name in names where !constraints.permits(name) && !violations.contains(where: { $0.host == name.value }) {
                violations.append(NameConstraintViolation(host: name.value, authority: constrained.commonName ?? constrained.subject,
                                                          constraints: constraints))
            }
        }
        return violations
    }

    /// Parses repeated or comma-separated `--eku` values; `none` leaves the extension out, `both` is server + client.
    public static func parseExtendedKeyUsage(_ values: [String]) throws -> [ExtendedKeyUsage]? {
        let items = values.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if items.map({ $0.lowercased() }) == ["none"] { return nil }
        return try items.flatMap { item -> [ExtendedKeyUsage] in
            switch item.lowercased() {
            case "both": return [.serverAuth, .clientAuth]
            case "server", "serverauth": return [.serverAuth]
            case "client", "clientauth": return [.clientAuth]
            default:
                guard let usage = ExtendedKeyUsage.allCases.first(where: { $0.rawValue.lowercased() == item.lowercased() }) else {
                    throw PKIError(code: .invalidUsage, subject: item, reason: "unknown extended key usage \"\(item)\"",
                                   fix: "use \(ExtendedKeyUsage.allCases.map(\.rawValue).joined(separator: ", ")), both, or none")
                }
                return [usage]
            }
        }
    }

    package static func parseKeyUsage(_ values: [String]) throws -> [KeyUsage]? {
        let items = values.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if items.isEmpty { return nil }
        if items.map({ $0.lowercased() }) == ["none"] { return [] }
        return try items.map { item in
            guard let usage = KeyUsage.allCases.first(where: { $0.rawValue.lowercased() == item.lowercased() }) else {
                throw PKIError(code: .invalidUsage, subject: item, reason: "unknown key usage \"\(item)\"",
                               fix: "use \(KeyUsage.allCases.map(\.rawValue).joined(separator: ", ")), or none")
            }
            return usage
        }
    }

    package static func parseIssuer(_ text: String) throws -> LeafIssuer {
        if text == "self" { return .selfSigned }
        guard let authority = BuiltinAuthority(rawValue: text) else {
            throw PKIError(code: .invalidIssuer, subject: text, reason: "unknown issuer \"\(text)\"",
                           fix: "use self or one of \(BuiltinAuthority.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return .authority(authority)
    }
}

/// A host a certificate names that its issuing CA's name constraints do not permit.
public struct NameConstraintViolation: Sendable, Equatable, CustomStringConvertible {
    /// The host the certificate names.
    public var host: String
    /// The constrained CA's common name (or subject).
    public var authority: String
    /// The CA's constraints that leave it out.
    public var constraints: NameConstraints

    public var description: String {
        let permitted = constraints.permitted.isEmpty ? "" : " (permitted: \(constraints.permitted.joined(separator: ", ")))"
        return "\(host) is outside the name constraints of \(authority)\(permitted): clients that enforce them will refuse the certificate"
    }
}

extension CertificateStore {
    /// Issues (or reuses, when nothing changed) the certificate a request describes.
    public func issue(_ request: CertificateRequest) throws -> Credential {
        try credential(named: request.name, profile: try request.profile(), keyName: request.keyName ?? request.name,
                       keySpec: request.key, issuer: request.issuer)
    }
}
