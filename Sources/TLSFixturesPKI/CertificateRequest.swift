import Foundation
import TLSFixturesOpenSSL

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
    public var organization: String? = "swift-tls-fixtures" {
        didSet { organizationSetExplicitly = true }
    }
    /// Whether `organization` was set, so a CSR's own O replaces only the default.
    private var organizationSetExplicitly = false
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
    /// A CA of the user's own to sign with instead of `issuer` (one made with `isCA`, or from files); nil uses `issuer`.
    public var issuerAuthority: CertificateAuthority? = nil
    /// A key of the user's own for the certificate instead of one the store makes and keeps; nil uses the store's.
    public var privateKey: PrivateKey? = nil
    /// Email addresses for the subjectAltName (rfc822Name), after the hosts.
    public var emails: [String] = []
    /// URIs for the subjectAltName (uniformResourceIdentifier: SPIFFE IDs, URLs), after the emails.
    public var uris: [String] = []
    /// The OU attribute; nil leaves it out.
    public var organizationalUnit: String? = nil
    /// The C attribute (two capital letters); nil leaves it out.
    public var country: String? = nil
    /// The ST attribute; nil leaves it out.
    public var state: String? = nil
    /// The L attribute; nil leaves it out.
    public var locality: String? = nil
    /// The serial number (big-endian bytes, positive, at most 20 octets); nil draws a random one.
    public var serial: [UInt8]? = nil
    /// Where the certificate says its status is published (OCSP, CRL, caIssuers) and whether it must be stapled.
    public var statusSources: CertificateStatusSources? = nil

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(name: String) { self.name = name }

    /// The profile this request describes, validated.
    public func profile() throws -> CertificateProfile {
        try CertificateStore.validate(name: name)
        if hosts.isEmpty && emails.isEmpty && uris.isEmpty && !omitSubjectAltNames && namesAServer {
            throw PKIError(code: .missingHost, reason: "a server certificate needs a name to be verified against",
                           fix: "add at least one host (DNS name or IP address), or set omitSubjectAltNames for a certificate without subjectAltName")
        }
        try validity.check()
        try CertificateProfile.checkNameCount(hosts.count + emails.count + uris.count)
        let hostNames = try hosts.map(SubjectAltName.init(host:))
        let names = hostNames + (try emails.map(SubjectAltName.init(email:))) + (try uris.map(SubjectAltName.init(uri:)))
        // A client or CA certificate with no host is named by its store name: its subject is who it is.
        let cn: String? = omitCommonName ? nil : (commonName ?? hostNames.first?.value ?? name)
        let subject = Subject(commonName: cn, organization: organization, organizationalUnit: organizationalUnit,
                              country: country, state: state, locality: locality)
        try subject.check()
        var profile = CertificateProfile(
            subject: subject,
            subjectAltNames: omitSubjectAltNames || names.isEmpty ? nil : names,
            validity: validity, digest: digest, extendedKeyUsage: extendedKeyUsage, keyUsage: keyUsage,
            basicConstraints: BasicConstraints(isCA: isCA, pathLength: isCA ? pathLength : nil),
            statusSources: statusSources, serial: serial)
        if let statusSources { _ = try statusSources.extensionLines() }
        if let serial { try CertificateProfile.checkSerial(serial) }
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

    /// What a user should know about `leaf` as issued by `signer` (nil: self-signed), one line each: names outside the
    /// issuer's name constraints, IP addresses under a name-constrained CA (BoringSSL refuses those chains), an
    /// issuer that is expired or not yet valid (the leaf's own dates say "valid"), and a leaf that outlives its issuer.
    /// Issued all the same: each is a legitimate fixture, but none should be a surprise.
    package func warnings(leaf: Certificate, signer: CertificateAuthority?, now: Date = Date()) -> [String] {
        guard let signer else { return [] }
        // The names as issued: a CSR's come from the CSR, not from `hosts`.
        var issued = self
        issued.hosts = (leaf.dnsNames ?? []) + leaf.ipAddresses
        issued.omitSubjectAltNames = false
        var lines = issued.nameConstraintViolations(issuer: signer).map {
            "\($0); use a name under one of them, or issue from a CA made with `ca init --no-name-constraints`"
        }
        let chain = [signer.certificate] + signer.chainToRoot + [signer.root]
        let addresses = leaf.ipAddresses
        if !addresses.isEmpty, let constrained = chain.first(where: { $0.nameConstraintEntries != nil }) {
            let name = constrained.commonName ?? constrained.subject
            lines.append("\(addresses.joined(separator: ", ")) under the name-constrained \(name): BoringSSL-based clients "
                + "(swift-nio-ssl, AsyncHTTPClient, Chrome) refuse the chain, as they cannot evaluate IP address "
                + "constraints; OpenSSL, Apple and the others accept it. Connect by name (localhost) for those")
        }
        let issuer = signer.certificate.commonName ?? signer.certificate.subject
        let day = { (date: Date) in
            ISO8601DateFormatter.string(from: date, timeZone: TimeZone(identifier: "UTC")!,
                                        formatOptions: [.withFullDate])
        }
        // The store's own authorities are warned about as they are read (and an intermediate past its end is re-made);
        // a CA of the user's own only here.
        let issuerEnd = day(signer.certificate.notAfter)
        let outlives = "this certificate ends on \(day(leaf.notAfter)), after its issuer \(issuer) (\(issuerEnd)): "
            + "from then on clients refuse it as its issuer has expired; give fewer days to end with it"
        if issuerAuthority == nil {
            if leaf.notAfter > signer.certificate.notAfter, signer.certificate.notAfter > now {
                lines.append(outlives)
            }
        } else if signer.certificate.notAfter < now {
            lines.append("the issuer \(issuer) expired on \(issuerEnd): clients refuse this certificate "
                + "(\"certificate has expired\", for the issuer) although its own dates are valid")
        } else if signer.certificate.notBefore > now {
            lines.append("the issuer \(issuer) is not valid before \(day(signer.certificate.notBefore)): clients "
                + "refuse this certificate until then")
        } else if leaf.notAfter > signer.certificate.notAfter {
            lines.append(outlives)
        }
        return lines
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
    /// Issues (or reuses, when nothing changed) the certificate a request describes. Everything is checked before
    /// anything is made (`check`), so a refused request writes nothing: no key, no authority, no certificate.
    public func issue(_ request: CertificateRequest) throws -> Credential {
        let profile = try check(request)
        let keyName = request.keyName ?? request.name
        let signer: CertificateAuthority?
        if let own = request.issuerAuthority {
            signer = own
        } else if case .authority(let id) = request.issuer {
            signer = try authority(id)
        } else {
            signer = nil
        }
        guard let key = request.privateKey else {
            let key = try self.key(named: keyName, spec: request.key)
            return try credential(named: request.name, profile: profile, key: key,
                                  keyFile: keyPath(name: keyName, spec: request.key).lastPathComponent, signer: signer,
                                  refusingConcurrentChange: true)
        }
        return try credential(named: request.name, profile: profile, key: key, keyFile: "(the caller's own key)",
                              signer: signer, refusingConcurrentChange: true)
    }

    /// What `issue(request)` refuses, found by reading only: the name (`CertificateStore.reservedNames`), the profile,
    /// a digest its signer's key cannot sign with, a key of the store's authorities (`requireNotAuthorityKey`), a key
    /// to reuse (`keyName`) that does not exist, and a missing CA the store had (`caMissing`). Returns the profile.
    package func check(_ request: CertificateRequest) throws -> CertificateProfile {
        try CertificateStore.requireUnreserved(request.name)
        let profile = try request.profile()
        if let keyName = request.keyName, keyName != request.name {
            try CertificateStore.validate(name: keyName)
            if try existingKey(named: keyName, spec: request.key) == nil {
                let others = storedKeySpecs(named: keyName).map { keyPath(name: keyName, spec: $0).lastPathComponent }
                let found = others.isEmpty ? "" : " (\(others.joined(separator: ", ")) is there: give its type as the "
                    + "key)"
                throw PKIError(code: .noSuchKey, subject: keyName,
                               reason: "there is no \(request.key) key named \"\(keyName)\" in "
                                  + "\(keysDirectory.path)\(found)",
                               fix: "name a key the store has, or leave keyName out for a key of the certificate's own")
            }
        }
        if let key = request.privateKey { try requireNotAuthorityKey(spki: try key.spkiSHA256) }
        if let key = try request.keyName.flatMap({ try existingKey(named: $0, spec: request.key) }) {
            try requireNotAuthorityKey(spki: try key.spkiSHA256)
        }
        // The signer as it is, or as it would be made: its key type decides which digests it can sign with.
        let signerKey: SigningKeyKind
        if let own = request.issuerAuthority {
            signerKey = SigningKeyKind(own.privateKey)
        } else if case .authority(let id) = request.issuer {
            if let existing = try existingAuthority(id) {
                signerKey = SigningKeyKind(existing.privateKey)
            } else {
                signerKey = SigningKeyKind(id == .root ? CAOptions().key : id.keySpec)
            }
        } else {
            signerKey = request.privateKey.map(SigningKeyKind.init) ?? SigningKeyKind(request.key)
        }
        try profile.checkSignable(by: signerKey)
        return profile
    }

    /// What `issue(request)` would return without writing anything — the stored certificate, unchanged — or nil when
    /// it would make something (a key, an authority, a certificate). Reads only: a command checks its other outputs
    /// against this before the store changes.
    package func reusable(_ request: CertificateRequest) throws -> Credential? {
        let profile = try request.profile()
        let signer: CertificateAuthority?
        if let own = request.issuerAuthority {
            signer = own
        } else if case .authority(let id) = request.issuer {
            guard let existing = try existingAuthority(id) else { return nil }
            signer = existing
        } else {
            signer = nil
        }
        return try reusableCredential(named: request.name, profile: profile, keyName: request.keyName ?? request.name,
                                      keySpec: request.key, key: request.privateKey, signer: signer)
    }
}

extension CertificateRequest {
    /// Signs a certificate signing request (PKCS#10) as this request describes it, with `issuerAuthority` or the
    /// built-in `issuer` from `store`: the CSR gives the key, and its subject and requested names unless this request
    /// sets them (`hosts`, `emails`, `uris`, `commonName`, the subject fields). Returns the chain, leaf first. Nothing is
    /// kept in the store: the store keeps certificates with their keys, and this key is the requester's.
    package func sign(_ csr: CertificateSigningRequest, store: CertificateStore) throws -> [Certificate] {
        try store.requireNotAuthorityKey(spki: try csr.publicKey.spkiSHA256)
        let signer: CertificateAuthority
        if let own = issuerAuthority {
            signer = own
        } else if case .authority(let id) = issuer {
            signer = try store.authority(id)
        } else {
            throw PKIError(code: .notAnAuthority, reason: "a certificate for a CSR cannot be self-signed: its private key is with the requester",
                           fix: "sign it with a CA (issuer: a built-in authority, or issuerAuthority)")
        }
        var request = self
        let requested = Subject(entries: csr.subject)
        if hosts.isEmpty && emails.isEmpty && uris.isEmpty {
            for name in csr.requestedSubjectAltNames {
                if name.hasPrefix("DNS:") || name.hasPrefix("IP:") {
                    request.hosts.append(String(name.drop { $0 != ":" }.dropFirst()))
                } else if name.hasPrefix("email:") {
                    request.emails.append(String(name.dropFirst(6)))
                } else if name.hasPrefix("URI:") {
                    request.uris.append(String(name.dropFirst(4)))
                } else {
                    throw PKIError(code: .invalidRequest, subject: name, reason: "the CSR asks for a subjectAltName of a kind the kit does not write (\(name))",
                                   fix: "name the certificate's hosts yourself (hosts, emails, uris)")
                }
            }
        }
        if commonName == nil && !omitCommonName { request.commonName = requested.commonName }
        var profile = try request.profile()
        // The CSR's own subject fields stand where the request leaves them unset.
        profile.subject.organization = organizationSetExplicitly ? organization : (requested.organization ?? organization)
        profile.subject.organizationalUnit = organizationalUnit ?? requested.organizationalUnit
        profile.subject.country = country ?? requested.country
        profile.subject.state = state ?? requested.state
        profile.subject.locality = locality ?? requested.locality
        profile.subject.otherAttributes = requested.otherAttributes
        try profile.subject.check()
        let certificate = try profile.sign(subjectPublicKey: csr.publicKey, issuer: (signer.certificate, signer.privateKey))
        return [certificate] + signer.chainToRoot
    }
}
