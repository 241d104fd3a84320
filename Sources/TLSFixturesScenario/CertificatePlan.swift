import Foundation
import TLSFixturesWire
import TLSFixturesPKI

/// How a scenario's certificate differs from the baseline leaf. Every field defaults to the baseline.
public struct CertificatePlan: Codable, Sendable, Hashable {
    /// The leaf's key: `rsa(bits:)` or `ec(_:)`; default RSA-2048, the baseline.
    public var key: KeySpec = .rsa(bits: 2048)
    /// Share a key with other scenarios (`pinned` and `pin-reissued` both use `pinned`). Default: the scenario's name.
    public var keyName: String? = nil
    /// `root` (the built-in CA), `self`, or another built-in authority.
    public var issuer: String = "root"

    /// The fix for a digest the plan's issuer cannot sign with (an EC issuer and md5), in the scenario file's keys: what
    /// a control API client or a scenario file's author changes (the library's own fix names its Swift API).
    package static let digestNotSignableFix = "sign with an RSA issuer (\"certificate\": {\"issuer\": \"rsa-intermediate\"}) "
        + "or choose another \"digest\""

    /// The hash the issuer signs the leaf with; default SHA-256 (`sha1`, `md5` make the weak-signature scenarios).
    public var digest: SignatureDigest = .sha256
    /// Replaces the baseline hosts (`localhost` and `NAME.fixtures.test`).
    public var hosts: [String]? = nil
    /// Added to the hosts.
    public var extraHosts: [String] = []
    /// Adds `n1.NAME.fixtures.test` … `nN.NAME.fixtures.test`: filler, for a certificate of many names. With
    /// `serve --domain`, as many fewer as keep the leaf within `CertificateProfile.maximumSubjectAltNames` (so
    /// `10000-sans` keeps exactly 10,000 names, `NAME.DOMAIN` among them).
    public var generatedHosts: Int = 0
    /// false: no subjectAltName extension.
    public var subjectAltName: Bool = true
    /// Default: `NAME.fixtures.test`, or the first of `hosts`.
    public var commonName: String? = nil
    /// true: the subject has no CN at all (SANs alone name the host).
    public var omitCommonName: Bool = false
    /// notBefore/notAfter relative to now; default 397 days from one day ago (the CA/Browser Forum limit).
    public var validity: Validity = .standardLeaf
    /// `[]` leaves the EKU extension out.
    public var extendedKeyUsage: [ExtendedKeyUsage] = [.serverAuth]
    /// nil: the baseline for the key (RSA: digitalSignature + keyEncipherment; EC: digitalSignature); `[]` omits it.
    public var keyUsage: [KeyUsage]? = nil
    /// The scenario only makes sense when the issuer carries name constraints.
    public var requiresIssuerNameConstraints: Bool = false
    /// No subject at all (an empty name): the subjectAltName extension is then critical (RFC 5280 §4.2.1.6).
    public var emptySubject: Bool = false
    /// Revocation: the leaf names an OCSP responder and a CRL, and its issuer says it is good or revoked.
    public var revocation: RevocationPlan? = nil

    /// The baseline leaf; set only the fields a scenario changes.
    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case key, keyName, issuer, digest, hosts, extraHosts, generatedHosts, subjectAltName, commonName, omitCommonName
        case validity, extendedKeyUsage, keyUsage, requiresIssuerNameConstraints, emptySubject, revocation
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = CertificatePlan()
        key = try c.decodeIfPresent(KeySpec.self, forKey: .key) ?? d.key
        keyName = try c.decodeIfPresent(String.self, forKey: .keyName)
        if let keyName {
            // It becomes a file name in the store: held to the same alphabet as scenario names (no "/", no "..").
            do { try CertificateStore.validate(name: keyName) } catch {
                throw DecodingError.dataCorruptedError(forKey: .keyName, in: c, debugDescription: "\(error)")
            }
        }
        issuer = try c.decodeIfPresent(String.self, forKey: .issuer) ?? d.issuer
        if issuer != "self" && BuiltinAuthority(rawValue: issuer) == nil {
            throw DecodingError.dataCorruptedError(forKey: .issuer, in: c, debugDescription:
                "unknown issuer \"\(issuer)\": use self or one of \(BuiltinAuthority.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        digest = try c.decodeIfPresent(SignatureDigest.self, forKey: .digest) ?? d.digest
        hosts = try c.decodeIfPresent([String].self, forKey: .hosts)
        extraHosts = try c.decodeIfPresent([String].self, forKey: .extraHosts) ?? []
        generatedHosts = try c.decodeIfPresent(Int.self, forKey: .generatedHosts) ?? 0
        if generatedHosts < 0 {
            throw DecodingError.dataCorruptedError(forKey: .generatedHosts, in: c, debugDescription: "generatedHosts cannot be negative")
        }
        // One limit for listed and generated names together, the same as for every certificate (`cert issue` too).
        let listed = (hosts?.count ?? CertificatePlan.baselineHosts(scenarioName: "").count) + extraHosts.count
        let (total, overflow) = listed.addingReportingOverflow(generatedHosts)
        do { try CertificateProfile.checkNameCount(overflow ? generatedHosts : total) } catch {
            throw DecodingError.dataCorruptedError(forKey: generatedHosts > 0 ? .generatedHosts : (hosts != nil ? .hosts : .extraHosts),
                                                   in: c, debugDescription: "\(error); hosts, extraHosts and generatedHosts count together")
        }
        subjectAltName = try c.decodeIfPresent(Bool.self, forKey: .subjectAltName) ?? true
        commonName = try c.decodeIfPresent(String.self, forKey: .commonName)
        omitCommonName = try c.decodeIfPresent(Bool.self, forKey: .omitCommonName) ?? false
        validity = try c.decodeIfPresent(Validity.self, forKey: .validity) ?? d.validity
        do { try validity.check() } catch {
            throw DecodingError.dataCorruptedError(forKey: .validity, in: c, debugDescription: "\(error)")
        }
        extendedKeyUsage = try c.decodeIfPresent([ExtendedKeyUsage].self, forKey: .extendedKeyUsage) ?? d.extendedKeyUsage
        keyUsage = try c.decodeIfPresent([KeyUsage].self, forKey: .keyUsage)
        requiresIssuerNameConstraints = try c.decodeIfPresent(Bool.self, forKey: .requiresIssuerNameConstraints) ?? false
        emptySubject = try c.decodeIfPresent(Bool.self, forKey: .emptySubject) ?? false
        if emptySubject && !subjectAltName {
            throw DecodingError.dataCorruptedError(forKey: .emptySubject, in: c, debugDescription:
                "a certificate with neither a subject nor a subjectAltName names nothing: keep the SAN")
        }
        revocation = try c.decodeIfPresent(RevocationPlan.self, forKey: .revocation)
        for host in (hosts ?? []) + extraHosts {
            do { _ = try SubjectAltName(host: host) } catch {
                throw DecodingError.dataCorruptedError(forKey: hosts?.contains(host) == true ? .hosts : .extraHosts, in: c, debugDescription: "\(error)")
            }
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let d = CertificatePlan()
        if key != d.key { try c.encode(key, forKey: .key) }
        try c.encodeIfPresent(keyName, forKey: .keyName)
        if issuer != d.issuer { try c.encode(issuer, forKey: .issuer) }
        if digest != d.digest { try c.encode(digest, forKey: .digest) }
        try c.encodeIfPresent(hosts, forKey: .hosts)
        if !extraHosts.isEmpty { try c.encode(extraHosts, forKey: .extraHosts) }
        if generatedHosts != 0 { try c.encode(generatedHosts, forKey: .generatedHosts) }
        if !subjectAltName { try c.encode(false, forKey: .subjectAltName) }
        try c.encodeIfPresent(commonName, forKey: .commonName)
        if omitCommonName { try c.encode(true, forKey: .omitCommonName) }
        if validity != d.validity { try c.encode(validity, forKey: .validity) }
        if extendedKeyUsage != d.extendedKeyUsage { try c.encode(extendedKeyUsage, forKey: .extendedKeyUsage) }
        try c.encodeIfPresent(keyUsage, forKey: .keyUsage)
        if requiresIssuerNameConstraints { try c.encode(true, forKey: .requiresIssuerNameConstraints) }
        if emptySubject { try c.encode(true, forKey: .emptySubject) }
        try c.encodeIfPresent(revocation, forKey: .revocation)
    }

    /// The leaf's issuer as the store knows it.
    public var leafIssuer: LeafIssuer {
        issuer == "self" ? .selfSigned : .authority(BuiltinAuthority(rawValue: issuer) ?? .root)
    }

    /// The baseline leaf's names: DNS names only. An IP address in a leaf fails every chain in BoringSSL (swift-nio-ssl,
    /// AsyncHTTPClient, Chrome), which cannot evaluate the CA's iPAddress constraints; `ip-san` is the scenario that
    /// names addresses, and says which clients refuse it.
    /// With `domains` (`serve --domain`), also `NAME.DOMAIN` for each.
    public static func baselineHosts(scenarioName name: String, domains: [String] = []) -> [String] {
        ["localhost", "\(name).\(Scenario.fixturesDomain)"] + domains.map { "\(name).\($0)" }
    }

    /// The profile for scenario `name`, with the baseline filled in. A revocation plan's URLs point at `endpoints`.
    /// `domains` add `NAME.DOMAIN` to the baseline hosts only: a scenario that names its own hosts (`wrong-host`) keeps
    /// exactly them, or it would stop being wrong.
    ///
    /// The domains' names go in before the generated filler: when they would take the leaf past the limit, the filler
    /// gives way (a scenario of many names is about its size, which stays; the names a domain adds are what the user
    /// connects by). Throws `ScenarioError.domainNamesDoNotFit`, naming the scenario, when the listed names and the
    /// domains' alone are too many.
    public func profile(scenarioName name: String, domains: [String] = [],
                        revocationEndpoints endpoints: RevocationEndpoints = .serveDefault) throws -> CertificateProfile {
        let qualified = "\(name).\(Scenario.fixturesDomain)"
        var allHosts = hosts ?? CertificatePlan.baselineHosts(scenarioName: name, domains: domains)
        allHosts += extraHosts
        let limit = CertificateProfile.maximumSubjectAltNames
        let domainNames = hosts == nil ? domains.count : 0
        var generated = generatedHosts
        if domainNames > 0 {
            guard allHosts.count <= limit else {
                throw ScenarioError.domainNamesDoNotFit(scenario: name, names: allHosts.count + generatedHosts,
                                                        domains: domains)
            }
            generated = min(generatedHosts, limit - allHosts.count)
        }
        try CertificateProfile.checkNameCount(allHosts.count + generated)
        if generated > 0 { allHosts += (1...generated).map { "n\($0).\(qualified)" } }
        let names = try allHosts.map(SubjectAltName.init(host:))
        let cn: String? = omitCommonName ? nil : (commonName ?? (hosts == nil ? qualified : allHosts.first))
        let subject = emptySubject ? Subject(commonName: nil) : Subject(commonName: cn, organization: "swift-tls-fixtures", organizationalUnit: name)
        var statusSources: CertificateStatusSources? = nil
        if let revocation, case .authority(let authority) = leafIssuer {
            statusSources = revocation.statusSources(endpoints: endpoints, issuer: authority)
        }
        return CertificateProfile(
            subject: subject, subjectAltNames: subjectAltName ? names : nil, validity: validity, digest: digest,
            extendedKeyUsage: extendedKeyUsage.isEmpty ? nil : extendedKeyUsage, keyUsage: keyUsage, statusSources: statusSources)
    }
}

/// How a leaf takes part in revocation: what its issuer says of it, and where the leaf says to ask.
public struct RevocationPlan: Codable, Sendable, Hashable {
    /// What every revocation source says of the leaf.
    public enum Status: String, Codable, Sendable, Hashable { case good, revoked }

    /// What the authorityInfoAccess extension's OCSP URL points at.
    public enum OCSPPointer: String, Codable, Sendable, Hashable {
        /// The responder the kit runs beside the fixture.
        case responder
        /// A port that refuses connections (bound, never listening).
        case unreachable
        /// No OCSP URL at all.
        case none
    }

    /// The issuer's record: the OCSP responder, the CRL and a staple all say this.
    public var status: Status = .good
    /// Where the leaf's OCSP URL points; default the kit's responder.
    public var ocsp: OCSPPointer = .responder
    /// A CRL distribution point naming the issuer's CRL on the responder.
    public var crl: Bool = true
    /// The TLS Feature extension with status_request (RFC 7633, "OCSP must-staple").
    public var mustStaple: Bool = false

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(status: Status = .good, ocsp: OCSPPointer = .responder, crl: Bool = true, mustStaple: Bool = false) {
        self.status = status; self.ocsp = ocsp; self.crl = crl; self.mustStaple = mustStaple
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case status, ocsp, crl, mustStaple }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decodeIfPresent(Status.self, forKey: .status) ?? .good
        ocsp = try c.decodeIfPresent(OCSPPointer.self, forKey: .ocsp) ?? .responder
        crl = try c.decodeIfPresent(Bool.self, forKey: .crl) ?? true
        mustStaple = try c.decodeIfPresent(Bool.self, forKey: .mustStaple) ?? false
    }

    /// Which services a fixture with this plan needs running.
    public var needsResponder: Bool { ocsp == .responder || crl }
    /// True when the OCSP URL must point at a port that refuses connections (`ocsp-unreachable`).
    public var needsRefusingPort: Bool { ocsp == .unreachable }

    func statusSources(endpoints: RevocationEndpoints, issuer: BuiltinAuthority) -> CertificateStatusSources {
        let ocspURL: String? = switch ocsp {
        case .responder: endpoints.ocspURL
        case .unreachable: endpoints.unreachableOCSPURL
        case .none: nil
        }
        return CertificateStatusSources(ocspURL: ocspURL, crlURL: crl ? endpoints.crlURL(for: issuer) : nil, mustStaple: mustStaple)
    }
}

/// What standard clients make of a scenario, as data in its file (the catalog's columns 4–5 and more).
public struct Expectations: Codable, Sendable, Hashable {
    /// OpenSSL's verify result for host `localhost` against the built-in CA, as a default OpenSSL 3 client judges it
    /// (security level 2, purpose sslserver): `ok` or OpenSSL's own text, e.g. `hostname mismatch`.
    public var verify: String?
    /// Apple's loader under a default ATS policy, connecting to `NAME.fixtures.test` with the built-in CA trusted.
    public var ats: ATSExpectation
    /// The smallest change to `NSAppTransportSecurity` that admits it.
    public var atsFix: ATSFix?
    /// Extra roots the device is assumed to trust (`interception-root` for `pin-mitm`: a proxy's CA the user installed).
    public var trustedRoots: [String]?
    /// For pinning scenarios: which of the published pins match (leaf SPKI, CA SPKI, the `pinned` certificate).
    public var pins: PinExpectation?
    /// Anything a user must know to read the verdicts right.
    public var note: String?
    /// For scenarios whose leaf names revocation sources: what OCSP, the CRL and a staple say, and what Apple does.
    public var revocation: RevocationExpectation?
    /// Clients of the client matrix whose verdict differs from `verify`'s (docs/CLIENTS.md); every client not listed
    /// accepts when `verify` is `ok` and rejects otherwise. `[]` says the matrix was run and every client agrees; nil,
    /// that nobody has looked. A test holds these to what the clients really do, and requires them of every built-in
    /// scenario the matrix can serve (`make matrix` fails, naming the scenario, while one has none).
    public var clients: [ClientDifference]?
    /// What a client sees in the handshake (protocol, suite, key exchange, the leaf and the chain), where it differs
    /// from the baseline; nil for a TLS scenario is the baseline. The test suite holds the server to it.
    public var handshake: Handshake?
    /// What a client refusing the scenario for its own reason shows: the alert that ends the handshake and Apple's
    /// error code. `FixtureServer.expectRefused` checks a refusal against it; nil where clients accept the scenario.
    public var refusal: RefusalExpectation?
    /// What an Android app does, where that differs from iOS or from `verify` (cleartext, user-installed CAs, TLS
    /// versions no config key lowers); nil where Android agrees with `verify`. docs/android.md says which app.
    public var android: AndroidExpectation?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(verify: String?, ats: ATSExpectation, atsFix: ATSFix? = nil, trustedRoots: [String]? = nil,
                pins: PinExpectation? = nil, note: String? = nil, revocation: RevocationExpectation? = nil,
                clients: [ClientDifference]? = nil, handshake: Handshake? = nil, refusal: RefusalExpectation? = nil,
                android: AndroidExpectation? = nil) {
        self.verify = verify; self.ats = ats; self.atsFix = atsFix; self.trustedRoots = trustedRoots
        self.pins = pins; self.note = note; self.revocation = revocation; self.clients = clients
        self.handshake = handshake; self.refusal = refusal; self.android = android
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case verify, ats, atsFix, trustedRoots, pins, note, revocation, clients, handshake, refusal, android
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        verify = try c.decodeIfPresent(String.self, forKey: .verify)
        ats = try c.decode(ATSExpectation.self, forKey: .ats)
        atsFix = try c.decodeIfPresent(ATSFix.self, forKey: .atsFix)
        trustedRoots = try c.decodeIfPresent([String].self, forKey: .trustedRoots)
        for root in trustedRoots ?? [] where BuiltinAuthority(rawValue: root)?.isRoot != true {
            throw DecodingError.dataCorruptedError(forKey: .trustedRoots, in: c, debugDescription: "\"\(root)\" is not a built-in root")
        }
        pins = try c.decodeIfPresent(PinExpectation.self, forKey: .pins)
        note = try c.decodeIfPresent(String.self, forKey: .note)
        revocation = try c.decodeIfPresent(RevocationExpectation.self, forKey: .revocation)
        clients = try c.decodeIfPresent([ClientDifference].self, forKey: .clients)
        handshake = try c.decodeIfPresent(Handshake.self, forKey: .handshake)
        refusal = try c.decodeIfPresent(RefusalExpectation.self, forKey: .refusal)
        android = try c.decodeIfPresent(AndroidExpectation.self, forKey: .android)
        try validateClients(codingPath: decoder.codingPath)
    }
}

/// What revocation-aware clients find, as data in the scenario file.
public struct RevocationExpectation: Codable, Sendable, Hashable {
    /// `openssl ocsp -issuer CA -url URL` against the leaf's OCSP URL: `good`, `revoked`, `refused` (the URL refuses
    /// connections) or `none` (the leaf names no OCSP URL).
    public var ocsp: String
    /// `openssl verify -crl_check` with the CRL from the leaf's distribution point: `ok`, `certificate revoked`, or
    /// `none` (no distribution point).
    public var crl: String
    /// What `openssl s_client -status` shows stapled: `good`, `revoked` or `none`.
    public var staple: String
    /// What Apple's loader does by default (URLSession, default trust evaluation), and why, with the source.
    public var apple: String
    /// What it does when the app adds a revocation policy (`SecPolicyCreateRevocation`, Alamofire's
    /// `RevocationTrustEvaluator`).
    public var appleWithRevocationPolicy: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(ocsp: String, crl: String, staple: String, apple: String, appleWithRevocationPolicy: String) {
        self.ocsp = ocsp; self.crl = crl; self.staple = staple; self.apple = apple
        self.appleWithRevocationPolicy = appleWithRevocationPolicy
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case ocsp, crl, staple, apple, appleWithRevocationPolicy }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func one(_ key: CodingKeys, of allowed: [String]) throws -> String {
            let value = try c.decode(String.self, forKey: key)
            guard allowed.contains(value) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription:
                    "\"\(value)\" is not one of \(allowed.joined(separator: ", "))")
            }
            return value
        }
        ocsp = try one(.ocsp, of: ["good", "revoked", "refused", "none"])
        crl = try one(.crl, of: ["ok", "certificate revoked", "none"])
        staple = try one(.staple, of: ["good", "revoked", "none"])
        apple = try c.decode(String.self, forKey: .apple)
        appleWithRevocationPolicy = try c.decode(String.self, forKey: .appleWithRevocationPolicy)
    }
}

// MARK: - Strict decoding

struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { self.stringValue = "\(intValue)"; self.intValue = intValue }
}

extension Decoder {
    /// JSONDecoder ignores unknown keys; a scenario file with a typo (`"cipher"` for `"ciphers"`) must fail instead.
    func rejectUnknownKeys<K: CodingKey & CaseIterable>(_ known: K.Type) throws {
        let container = try self.container(keyedBy: AnyCodingKey.self)
        let allowed = Set(K.allCases.map(\.stringValue))
        if let unknown = container.allKeys.first(where: { !allowed.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath + [unknown],
                debugDescription: "unknown key \"\(unknown.stringValue)\" (known: \(allowed.sorted().joined(separator: ", ")))"))
        }
    }
}

extension DecodingError {
    /// `at tls.minVersion: …` — one line naming where and what.
    var oneLine: String {
        func path(_ codingPath: [CodingKey]) -> String {
            let text = codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
                .replacingOccurrences(of: ".[", with: "[")
            return text.isEmpty ? "" : "at \(text): "
        }
        switch self {
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError as NSError?, context.codingPath.isEmpty {
                return "not valid JSON (\(underlying.userInfo[NSDebugDescriptionErrorKey] ?? underlying.localizedDescription))"
            }
            return path(context.codingPath) + context.debugDescription
        case .keyNotFound(let key, let context):
            return path(context.codingPath) + "missing required key \"\(key.stringValue)\""
        case .typeMismatch(let type, let context):
            // Foundation says "Expected to decode Dictionary<String, Any> but found an array instead."
            var found = ""
            if let range = context.debugDescription.range(of: "but found "), let end = context.debugDescription.range(of: " instead") {
                found = ", found " + context.debugDescription[range.upperBound..<end.lowerBound]
            }
            return path(context.codingPath) + "expected \(Self.typeName(type))\(found)"
        case .valueNotFound(let type, let context):
            return path(context.codingPath) + "expected \(Self.typeName(type)), found null"
        @unknown default:
            return "\(self)"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "a number"
        case is Bool.Type: return "true or false"
        case is [String].Type, is [Any].Type: return "a list"
        case is [String: Any].Type: return "an object ({…})"
        default:
            let name = "\(type)"
            if name.hasPrefix("Dictionary<") { return "an object ({…})" }
            if name.hasPrefix("Array<") { return "a list" }
            return name
        }
    }
}
