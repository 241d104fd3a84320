import Foundation
import NIOConcurrencyHelpers
import TLSFixturesWire
import TLSFixturesOpenSSL
import TLSFixturesPKI

/// A scenario ready to serve: its TLS context and every certificate and pin a test may ask about.
public final class PreparedScenario: Sendable {
    /// The scenario it was prepared from.
    public let scenario: Scenario
    /// nil for plain HTTP.
    public let context: TLSContext?
    /// The leaf and its key, with the chain as issued; nil for plain HTTP.
    public let credential: Credential?
    /// What the server actually sends: the leaf, then `chainSent`'s extra certificates.
    public let chainSent: [Certificate]
    /// The built-in CA.
    public let caCertificate: Certificate
    /// The roots a device is assumed to trust for this scenario's expectations (the CA, plus e.g. the interception root).
    public let deviceTrustRoots: [Certificate]
    /// SPKI pins (base64 SHA-256) of the leaf, the CA, the backup key and the published `pinned` leaf.
    public let pins: FixturePins
    /// The client certificate the server accepts, for `clientAuth: required`.
    public let clientCredential: Credential?
    /// For a leaf with a revocation plan: what its issuer says of it (what the responder, the CRL and a staple say).
    package let revocation: RevocationRecord?
    /// Where the leaf says its status is published (nil without a revocation plan).
    public let revocationEndpoints: RevocationEndpoints?
    /// Suites the scenario's cipher string names that the linked OpenSSL lacks, so they are not offered.
    public var unavailableCiphers: [String] { context?.unavailableCipherNames ?? [] }
    /// Key-exchange groups the scenario names that the linked OpenSSL lacks (X25519MLKEM768 before OpenSSL 3.5).
    public var unavailableGroups: [String] { context?.unavailableGroupNames ?? [] }
    /// Domains besides `fixtures.test` the leaf also names as `NAME.DOMAIN` (`serve --domain`).
    public let domains: [String]

    init(scenario: Scenario, context: TLSContext?, credential: Credential?, chainSent: [Certificate], caCertificate: Certificate,
         deviceTrustRoots: [Certificate], pins: FixturePins, clientCredential: Credential?, domains: [String] = [],
         revocation: RevocationRecord? = nil, revocationEndpoints: RevocationEndpoints? = nil) {
        self.scenario = scenario; self.context = context; self.credential = credential; self.chainSent = chainSent
        self.caCertificate = caCertificate; self.deviceTrustRoots = deviceTrustRoots; self.pins = pins
        self.clientCredential = clientCredential; self.domains = domains
        self.revocation = revocation; self.revocationEndpoints = revocationEndpoints
    }
}

/// Where a preparation keeps the leaf it makes.
public enum PreparationStorage: Sendable, Hashable {
    /// In the store, under the scenario's name (and its domains): made once, reused by every later run, so certificate
    /// pins stay valid.
    case store
    /// In memory only, never written: a scenario that arrives through the control API must not replace, or add to,
    /// what the user's store holds. Its leaf key is new unless the plan's `keyName` names a key of the catalog's,
    /// which is read (made first if the catalog has not made it yet) and never replaced.
    case memory
}

/// A scenario the linked OpenSSL (or this store's CA) cannot serve, with the reason. Never served as something else.
public struct ScenarioUnsupported: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<ScenarioUnsupported>`: new ones may be added, none
    /// changes meaning.
    public typealias Code = ErrorCode<ScenarioUnsupported>

    /// What kind of failure this is.
    public let code: Code
    /// The scenario's name.
    public let scenario: String
    /// Why, without the scenario's name: "unsupported by the linked OpenSSL (OpenSSL 3.0.13 …): no cipher match".
    public let why: String
    /// What serves it anyway, when something can (`make legacy-openssl` for SSLv3, RC4 and 3DES).
    public let fix: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, scenario: String, why: String, fix: String? = nil) {
        self.code = code; self.scenario = scenario; self.why = why; self.fix = fix
    }

    /// "scenario NAME is …", one line.
    public var reason: String { "scenario \(scenario) is \(why)" }

    /// The why and the fix without the name, for lists that show the name already ("rc4: unsupported by …").
    public var detail: String { fix.map { "\(why); \($0)" } ?? why }

    /// The linked OpenSSL cannot serve `settings`: its reason, plus how to get an OpenSSL that can when that is the
    /// legacy build (SSLv3, RC4, 3DES are compiled out of Debian's and Homebrew's OpenSSL 3).
    init(scenario: String, settings: TLSSettings, unsupported: UnsupportedByOpenSSL) {
        let legacy = settings.minVersion == .ssl3 || ["RC4", "DES-CBC3", "3DES"].contains { (settings.ciphers ?? "").contains($0) }
        self.init(code: .linkedOpenSSL, scenario: scenario, why: unsupported.reason, fix: legacy ? Self.legacyInstruction : nil)
    }

    /// One sentence: what serves the legacy scenarios anyway.
    public static let legacyInstruction = "to serve it, run `make legacy-openssl` in a swift-tls-fixtures checkout: it builds "
        + "OpenSSL with enable-ssl3 enable-ssl3-method enable-weak-ssl-ciphers and a helper `serve` runs for such scenarios"
}

/// The codes of `ScenarioUnsupported`.
extension ErrorCode where Owner == ScenarioUnsupported {
    /// The linked OpenSSL lacks what the scenario's TLS settings need (SSLv3, RC4, 3DES on Debian's and Homebrew's).
    public static var linkedOpenSSL: Self { Self("linkedOpenSSL") }
    /// The store's CA cannot make what the scenario needs (it has no name constraints to violate).
    public static var storeCA: Self { Self("storeCA") }
    /// A scenario without TLS asked to serve a credential.
    public static var cleartext: Self { Self("cleartext") }
    /// Served from your own credential, a scenario that needs the store's material (a client CA, DH parameters).
    public static var needsStore: Self { Self("needsStore") }
}

extension CertificateStore {
    private static let prepared = NIOLockedValueBox([PreparationKey: PreparedScenario]())

    /// The root is part of the key: after `ca init --force` (or another `CertificateStore` on the same folder replacing
    /// it) a preparation made under the old CA must not be served any more.
    private struct PreparationKey: Hashable {
        var store: String
        var root: Data
        var scenario: Scenario
        var domains: [String]
        /// Only for scenarios with a revocation plan (their leaf names these URLs); nil otherwise.
        var endpoints: RevocationEndpoints?
    }

    /// What preparing `scenario` on this store costs, roughly in bits of RSA key to generate: nothing for a key the
    /// store has, little for an EC key; a DH group made to measure, an intermediate CA or a root not made yet adds its
    /// bits (named groups cost nothing). Prepared in memory, a key without a `keyName` is made every time.
    package func preparationCost(_ scenario: Scenario, storage: PreparationStorage = .store) -> Int {
        // What the linked OpenSSL cannot serve is refused before any key is made: it costs nothing.
        if let plan = scenario.tls, (try? TLSContext.checkSupport(Self.supportSettings(plan))) == nil { return 0 }
        var cost = 0
        if let plan = scenario.certificate,
            (storage == .memory && plan.keyName == nil) || !hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
        {
            if case .rsa(let bits) = plan.key { cost += bits } else { cost += 1 }
        }
        if case .bits(let bits)? = scenario.tls?.dh, !hasDHParameters(bits: bits) { cost += bits }
        // Roots are EC keys (next to nothing); an intermediate is an RSA-2048 key.
        if !FileManager.default.fileExists(atPath: certificatePath(.root).path) { cost += 1 }
        // The pins every preparation publishes: the backup key (EC) and the pinned leaf's.
        if !hasKey(named: Self.backupKeyName, spec: .ec(.p256)) { cost += 1 }
        if !hasKey(named: Self.pinnedKeyName, spec: CertificatePlan().key) {
            if case .rsa(let bits) = CertificatePlan().key { cost += bits } else { cost += 1 }
        }
        if let issuer = scenario.certificate.flatMap({ BuiltinAuthority(rawValue: $0.issuer) }), !issuer.isRoot,
            !FileManager.default.fileExists(atPath: certificatePath(issuer).path)
        {
            cost += 2048
        }
        return cost
    }

    /// Whether preparing `scenario` here generates nothing: every key, group and authority exists, so it only reads
    /// the store and signs a leaf at most, which is not CPU-bound work (`BlockingWork.Lane.nothingToMake`).
    package func makesNothing(preparing scenario: Scenario, storage: PreparationStorage = .store) -> Bool {
        preparationCost(scenario, storage: storage) == 0
    }

    /// What makes preparing `scenario` on this store slow, if anything: an RSA key of 4096 bits or more, or a DH group
    /// of 2048 bits or more that has to be generated (not a named group, not made yet): seconds to a minute each.
    /// Prepared in memory (an inline scenario), a key of its own is made every time: only a `keyName` is looked up.
    package func slowWork(preparing scenario: Scenario, storage: PreparationStorage = .store) -> String? {
        if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
            (storage == .memory && plan.keyName == nil) || !hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
        {
            return "the \(plan.key) key"
        }
        if case .bits(let bits)? = scenario.tls?.dh, bits >= 2048, !hasDHParameters(bits: bits) {
            return "a \(bits)-bit DH group"
        }
        return nil
    }

    /// Everything needed to serve `scenario`, from this store: certificates are generated on first use and reused after;
    /// within a process the whole preparation is done once per scenario. `domains` adds `NAME.DOMAIN` to a leaf that
    /// names the baseline hosts (`serve --domain`); such a leaf is kept apart from the plain one (`certificateName`),
    /// on the same key, so switching domains back and forth re-issues nothing and key pins stay valid. A leaf with a
    /// revocation plan names the OCSP responder and CRL at `revocationEndpoints` (by default where `serve` publishes
    /// them for port base 9800); only that default preparation is kept, since any other names one in-process fixture's
    /// own responder.
    public func prepare(_ scenario: Scenario, domains: [String] = [], storage: PreparationStorage = .store,
                        revocationEndpoints: RevocationEndpoints = .serveDefault) throws -> PreparedScenario {
        let endpoints = scenario.needsRevocationServices ? revocationEndpoints : nil
        guard storage == .store else {
            return try makePrepared(scenario, domains: domains, storage: storage, endpoints: endpoints ?? revocationEndpoints)
        }
        let key = PreparationKey(store: directory.path, root: try ca().certificate.sha256Fingerprint, scenario: scenario,
                                 domains: domains, endpoints: endpoints)
        if let cached = Self.prepared.withLockedValue({ $0[key] }) { return cached }
        let made = try makePrepared(scenario, domains: domains, storage: storage, endpoints: endpoints ?? revocationEndpoints)
        // An in-process revocation fixture names a responder on ports the system picked for it alone: its preparation is
        // never asked for again, so it is not kept (a process starting thousands would otherwise keep them all).
        if endpoints == nil || endpoints == .serveDefault {
            Self.prepared.withLockedValue { $0[key] = made }
        }
        return made
    }

    /// The store's name for a scenario's leaf: the scenario's name, plus a digest of the domains when there are any.
    public static func certificateName(scenario: String, domains: [String]) -> String {
        guard !domains.isEmpty else { return scenario }
        let digest = Digest.sha256(Data(domains.map { $0.lowercased() }.sorted().joined(separator: ",").utf8)).hexString
        return "\(scenario).domains-\(digest.prefix(8))"
    }

    private func makePrepared(_ scenario: Scenario, domains: [String], storage: PreparationStorage,
                              endpoints: RevocationEndpoints) throws -> PreparedScenario {
        if let plan = scenario.tls {
            let settings = Self.supportSettings(plan)
            do {
                // Before any key is generated: an unsupported scenario costs nothing.
                try TLSContext.checkSupport(settings)
            } catch let unsupported as UnsupportedByOpenSSL {
                throw ScenarioUnsupported(scenario: scenario.name, settings: settings, unsupported: unsupported)
            }
        }
        let ca = try self.ca()
        let extraRoots = try (scenario.expect.trustedRoots ?? []).compactMap(BuiltinAuthority.init(rawValue:)).map { try authority($0).certificate }
        let pins = FixturePins(leaf: nil, ca: ca.certificate.spkiSHA256,
                               backup: try key(named: Self.backupKeyName, spec: .ec(.p256)).spkiSHA256,
                               pinnedLeaf: try key(named: Self.pinnedKeyName, spec: CertificatePlan().key).spkiSHA256)
        guard let plan = scenario.tls, let certificatePlan = scenario.certificate else {
            return PreparedScenario(scenario: scenario, context: nil, credential: nil, chainSent: [], caCertificate: ca.certificate,
                                    deviceTrustRoots: [ca.certificate] + extraRoots, pins: pins, clientCredential: nil, domains: domains)
        }
        if certificatePlan.requiresIssuerNameConstraints, case .authority(let id) = certificatePlan.leafIssuer,
           !(try authority(id)).root.hasNameConstraints {
            throw ScenarioUnsupported(code: .storeCA, scenario: scenario.name,
                                      why: "not available with this store's CA: it was created without name constraints, so "
                                        + "nothing can violate them")
        }
        let profile = try certificatePlan.profile(scenarioName: scenario.name, domains: domains, revocationEndpoints: endpoints)
        let credential: Credential
        switch storage {
        case .store:
            credential = try self.credential(
                named: Self.certificateName(scenario: scenario.name, domains: domains), profile: profile,
                keyName: certificatePlan.keyName ?? scenario.name, keySpec: certificatePlan.key, issuer: certificatePlan.leafIssuer)
        case .memory:
            credential = try memoryCredential(profile: profile, plan: certificatePlan)
        }
        let extra: [Certificate]
        let root = credential.root == credential.certificate ? [] : [credential.root]
        switch plan.sendChain {
        case .full: extra = credential.intermediates
        case .leafOnly: extra = []
        case .withRoot: extra = credential.intermediates + root
        case .reversed: extra = (credential.intermediates + root).reversed()
        }
        var revocation: RevocationRecord? = nil
        if let revocationPlan = certificatePlan.revocation, case .authority(let authority) = certificatePlan.leafIssuer {
            revocation = RevocationRecord(authority: authority, issuer: try self.authority(authority), leaf: credential.certificate,
                                          revoked: revocationPlan.status == .revoked)
        }
        var clientCredential: Credential? = nil
        var clientRoots: [Certificate]? = nil
        if plan.clientAuth == .required {
            clientCredential = try self.clientCredential()
            clientRoots = [try authority(.clientCA).certificate]
        }
        let settings = TLSSettings(
            minVersion: plan.minVersion, maxVersion: plan.maxVersion, ciphers: plan.ciphers, tls13Suites: plan.tls13Suites,
            securityLevel: plan.securityLevel, groups: plan.groups, dhParameters: try dhChoice(plan.dh),
            serverPreference: plan.serverPreference)
        let context: TLSContext
        do {
            context = try TLSContext.server(settings: settings, certificate: credential.certificate, key: credential.privateKey,
                                            chain: extra, clientCARoots: clientRoots)
        } catch let unsupported as UnsupportedByOpenSSL {
            throw ScenarioUnsupported(scenario: scenario.name, settings: settings, unsupported: unsupported)
        }
        if plan.stapleOCSP, let record = revocation {
            context.staple(OCSPStapler { try record.ocspResponse() })
        }
        var fixturePins = pins
        fixturePins.leaf = credential.certificate.spkiSHA256
        return PreparedScenario(scenario: scenario, context: context, credential: credential, chainSent: [credential.certificate] + extra,
                                caCertificate: ca.certificate, deviceTrustRoots: [ca.certificate] + extraRoots,
                                pins: fixturePins, clientCredential: clientCredential, domains: domains, revocation: revocation,
                                revocationEndpoints: revocation == nil ? nil : endpoints)
    }

    private func dhChoice(_ plan: DHPlan) throws -> DHParameterChoice {
        switch plan {
        case .none: return .none
        case .automatic: return .automatic
        case .bits(let bits): return .explicit(try dhParameters(bits: bits))
        }
    }

    /// A leaf made and kept in memory (`PreparationStorage.memory`): signed by the plan's issuer, on a new key or on the
    /// catalog key the plan names.
    private func memoryCredential(profile: CertificateProfile, plan: CertificatePlan) throws -> Credential {
        let key = try plan.keyName.map { try self.key(named: $0, spec: plan.key) } ?? plan.key.generate()
        switch plan.leafIssuer {
        case .authority(let id): return try authority(id).issue(profile, key: key)
        case .selfSigned: return try CertificateAuthority.selfSigned(profile, key: key)
        }
    }

    /// The client certificate the built-in client CA issues (EKU clientAuth), for mutual-TLS scenarios.
    public func clientCredential() throws -> Credential {
        try credential(named: Self.clientName, profile: .client(commonName: "swift-tls-fixtures client"), keyName: Self.clientName,
                       keySpec: Self.clientKeySpec, issuer: .authority(.clientCA))
    }

    private static let clientName = "client"
    private static let clientKeySpec = KeySpec.ec(.p256)
    /// The settings `TLSContext.checkSupport` judges a scenario's TLS plan by, before anything is made.
    private static func supportSettings(_ plan: TLSPlan) -> TLSSettings {
        TLSSettings(
            minVersion: plan.minVersion, maxVersion: plan.maxVersion, ciphers: plan.ciphers, tls13Suites: plan.tls13Suites,
            securityLevel: plan.securityLevel, groups: plan.groups, dhParameters: .none, serverPreference: plan.serverPreference)
    }

    private static let backupKeyName = "backup"
    private static let pinnedKeyName = "pinned"

    /// The names the store keeps for itself besides the scenarios' own, each with what it is: a certificate or key
    /// issued by name (`cert issue --name`) under one of them would replace it, or hand it out.
    package static let ownNames: [String: String] = [
        clientName: "the client identity client-cert-required accepts",
        backupKeyName: "the published backup pin's key, which no server may use",
        pinnedKeyName: "the key the published pinned leaf pin names",
    ]

    /// The files `clientCredential()` is kept in: its certificate chain (PEM) and its private key (PEM, 0600) — what
    /// `curl --cert … --key …` and `probe --client-cert … --client-key …` take.
    public var clientCredentialFiles: (certificate: URL, key: URL) {
        (leafPath(Self.clientName), keyPath(name: Self.clientName, spec: Self.clientKeySpec))
    }
}

extension PreparedScenario {
    /// A scenario's TLS settings (`ats-compliant`'s unless you pass another) serving a certificate of your own, with no
    /// store and no files — what a `CertificateAuthority.ephemeral()` test serves:
    ///
    /// ```swift
    /// let ca = try CertificateAuthority.ephemeral()
    /// let fixture = try await FixtureServer.start(serving: try ca.issueServerCertificate())
    /// ```
    ///
    /// The server sends the credential's leaf and intermediates. `caCertificate` and `deviceTrustRoots` are the
    /// credential's root; the pins are its leaf (`leaf` and `pinnedLeaf`), its root (`ca`) and a fresh key no server
    /// uses (`backup`). Scenarios that need the store's material — a client CA (`clientAuth: required`) or generated
    /// DH parameters — are refused with the reason; serve those from a `CertificateStore`.
    public static func serving(_ credential: Credential, scenario: Scenario? = nil) throws -> PreparedScenario {
        let scenario = try scenario ?? ScenarioCatalog.builtIn.scenario(named: "ats-compliant")
        guard let plan = scenario.tls else {
            throw ScenarioUnsupported(code: .cleartext, scenario: scenario.name, why: "plain HTTP: there is no certificate to serve")
        }
        guard plan.clientAuth == .none else {
            throw ScenarioUnsupported(code: .needsStore, scenario: scenario.name,
                                      why: "not available with your own credential: it needs the store's client CA",
                                      fix: "use FixtureServer.start(_:store:)")
        }
        let dh: DHParameterChoice
        switch plan.dh {
        case .none: dh = .none
        case .automatic: dh = .automatic
        case .bits:
            throw ScenarioUnsupported(code: .needsStore, scenario: scenario.name,
                                      why: "not available with your own credential: its DH parameters come from the store",
                                      fix: "use FixtureServer.start(_:store:)")
        }
        let settings = TLSSettings(
            minVersion: plan.minVersion, maxVersion: plan.maxVersion, ciphers: plan.ciphers, tls13Suites: plan.tls13Suites,
            securityLevel: plan.securityLevel, groups: plan.groups, dhParameters: dh)
        let context: TLSContext
        do {
            context = try TLSContext.server(settings: settings, certificate: credential.certificate, key: credential.privateKey,
                                            chain: credential.intermediates)
        } catch let unsupported as UnsupportedByOpenSSL {
            throw ScenarioUnsupported(code: .linkedOpenSSL, scenario: scenario.name, why: unsupported.reason)
        }
        let leafPin = credential.certificate.spkiSHA256
        let pins = FixturePins(leaf: leafPin, ca: credential.root.spkiSHA256, backup: try KeySpec.ec(.p256).generate().spkiSHA256,
                               pinnedLeaf: leafPin)
        return PreparedScenario(scenario: scenario, context: context, credential: credential,
                                chainSent: [credential.certificate] + credential.intermediates, caCertificate: credential.root,
                                deviceTrustRoots: [credential.root], pins: pins, clientCredential: nil, domains: [])
    }
}
