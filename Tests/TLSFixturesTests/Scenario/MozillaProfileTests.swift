import Foundation
import Testing
@testable import TLSFixtures

/// One of Mozilla's server-side TLS configurations as its guidelines JSON states it: the fields are transcribed by hand
/// from the address in `source` (the JSON's own `href`), never from the scenario files, so the test compares the
/// fixture with Mozilla's document and not with itself. Names are the JSON's.
struct MozillaGuideline: Sendable {
    var source: String
    var configuration: String
    /// `tls_versions` (`TLSv1` is TLS 1.0).
    var tlsVersions: [String]
    /// `ciphers.iana`: the TLS 1.0–1.2 suites, in Mozilla's order.
    var ciphers: [String]
    /// `ciphersuites`: the TLS 1.3 suites.
    var ciphersuites: [String]
    /// `tls_curves`, in Mozilla's order.
    var tlsCurves: [String]
    var dhParamSize: Int?
    var certificateTypes: [String]
    var certificateCurves: [String]
    var certificateSignatures: [String]
    var rsaKeySize: Int?
    var maximumCertificateLifespan: Int
    var recommendedCertificateLifespan: Int
    var ocspStaple: Bool
    var serverPreferredOrder: Bool

    static let v60 = "https://ssl-config.mozilla.org/guidelines/6.0.json"
    static let v58 = "https://ssl-config.mozilla.org/guidelines/5.8.json"
    static let tls13 = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
    static let curves = ["X25519MLKEM768", "X25519", "prime256v1", "secp384r1"]
    static let ecdheAEAD = ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"]

    /// https://ssl-config.mozilla.org/guidelines/6.0.json, `configurations.modern`.
    static let modern = MozillaGuideline(
        source: v60, configuration: "modern", tlsVersions: ["TLSv1.3"], ciphers: [], ciphersuites: tls13,
        tlsCurves: curves, dhParamSize: nil, certificateTypes: ["ecdsa"], certificateCurves: ["prime256v1", "secp384r1"],
        certificateSignatures: ["ecdsa-with-SHA256", "ecdsa-with-SHA384", "ecdsa-with-SHA512"], rsaKeySize: nil,
        maximumCertificateLifespan: 90, recommendedCertificateLifespan: 90, ocspStaple: true, serverPreferredOrder: false)

    /// https://ssl-config.mozilla.org/guidelines/6.0.json, `configurations.intermediate`.
    static let intermediate = MozillaGuideline(
        source: v60, configuration: "intermediate", tlsVersions: ["TLSv1.2", "TLSv1.3"], ciphers: ecdheAEAD,
        ciphersuites: tls13, tlsCurves: curves, dhParamSize: 2048, certificateTypes: ["ecdsa", "rsa"],
        certificateCurves: ["prime256v1", "secp384r1"],
        certificateSignatures: ["sha256WithRSAEncryption", "ecdsa-with-SHA256", "ecdsa-with-SHA384", "ecdsa-with-SHA512"],
        rsaKeySize: 2048, maximumCertificateLifespan: 366, recommendedCertificateLifespan: 90, ocspStaple: true,
        serverPreferredOrder: false)

    /// https://ssl-config.mozilla.org/guidelines/5.8.json, `configurations.old`: 6.0 defines no "old", so 5.8's is the
    /// last one published.
    static let old = MozillaGuideline(
        source: v58, configuration: "old", tlsVersions: ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"],
        ciphers: ecdheAEAD + [
            "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
            "TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_CBC_SHA256",
            "TLS_RSA_WITH_AES_256_CBC_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA",
            "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        ],
        ciphersuites: tls13, tlsCurves: curves, dhParamSize: 2048, certificateTypes: ["rsa"],
        certificateCurves: ["prime256v1", "secp384r1"], certificateSignatures: ["sha256WithRSAEncryption"], rsaKeySize: 2048,
        maximumCertificateLifespan: 366, recommendedCertificateLifespan: 90, ocspStaple: true, serverPreferredOrder: true)

    var versions: Set<TLSVersion> { Set(tlsVersions.compactMap(TLSVersion.init(parsing:))) }

    /// The TLS ≤ 1.2 suites a client can get at `version` from a server with a `key` leaf: those authenticated by that
    /// key (or static RSA, for an RSA key), and before TLS 1.2 only the CBC suites with SHA-1 MACs (RFC 5246 added the
    /// rest). 3DES only where the linked OpenSSL has it.
    func suites(at version: TLSVersion, key: KeyAlgorithm, has3DES: Bool) -> Set<String> {
        Set(ciphers.filter { suite in
            let authenticated = key == .ec ? suite.contains("_ECDSA_") : (suite.contains("_RSA_WITH_") || suite.hasPrefix("TLS_RSA_"))
            let inVersion = version == .tls1_2 || suite.hasSuffix("_SHA")
            return authenticated && inVersion && (has3DES || !suite.contains("3DES"))
        })
    }
}

/// Mozilla's configurations as served, from the client side: the repo's probe scans every version and suite
/// (`ServerFactsCollector`, one handshake per suite) and reads the certificate and the staple; openssl s_client checks
/// the groups, the DH size and whose order wins. Each is compared with the guidelines' facts above (the JSON addresses
/// are the sources). Not reproduced, so not compared: `hsts_min_age` (the fixture answers every request alike) and
/// `oldest_clients`.
@Suite("Mozilla server-side TLS profiles (guidelines 6.0 modern and intermediate, 5.8 old)")
struct MozillaProfileTests {
    static var store: CertificateStore { TestEnvironment.suiteStore("MozillaProfile") }

    /// Whether the linked OpenSSL knows a group: s_client refuses to set one it does not ("cannot be set") before it
    /// connects anywhere.
    static func knows(group: String) async throws -> Bool {
        let result = try await External.openssl(["s_client", "-groups", group, "-connect", "127.0.0.1:1"])
        return !result.combined.contains("cannot be set") && !result.combined.contains("Call to SSL_CONF_cmd(-groups")
    }

    @Test("modern (6.0): what the probe and s_client see equals the guidelines")
    func modern() async throws {
        try await check("mozilla-modern", against: .modern)
    }

    @Test("intermediate (6.0): what the probe and s_client see equals the guidelines")
    func intermediate() async throws {
        try await check("mozilla-intermediate", against: .intermediate)
    }

    @Test("old (5.8, the last guidelines with an old profile): what the probe and s_client see equals the guidelines")
    func old() async throws {
        try await check("mozilla-old", against: .old)
    }

    @Test("the scenario files name the guidelines they follow, with the JSON's address")
    func labels() throws {
        for (name, guideline) in [("mozilla-modern", MozillaGuideline.modern), ("mozilla-intermediate", .intermediate),
                                  ("mozilla-old", .old)] {
            let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
            let version = guideline.source.split(separator: "/").last!.replacingOccurrences(of: ".json", with: "")
            #expect(scenario.summary.contains("\"\(guideline.configuration)\" configuration, guidelines \(version) (\(guideline.source))"),
                    "\(name): \(scenario.summary)")
            #expect(scenario.expect.note?.contains(guideline.source) == true, "\(name)")
        }
    }

    /// What serves "X25519MLKEM768 first where OpenSSL has it": a name the linked OpenSSL does not know is left out of
    /// the list and named, the rest served in order; a list with no name it knows is unsupported, said in one line.
    @Test("a group the linked OpenSSL does not know is left out and named; a list of none it knows is unsupported")
    func unknownGroups() throws {
        let leaf = try CertificateAuthority.ephemeral().issueServerCertificate()
        func context(_ groups: String) throws -> TLSContext {
            try TLSContext.server(settings: TLSSettings(groups: groups), certificate: leaf.certificate, key: leaf.privateKey,
                                  chain: [])
        }
        #expect(try context("NoSuchGroup:X25519:P-256").unavailableGroupNames == ["NoSuchGroup"])
        #expect(try context("X25519:P-256").unavailableGroupNames.isEmpty)
        #expect(throws: UnsupportedByOpenSSL.self) { try context("NoSuchGroup:NorThisOne") }
    }

    private func check(_ name: String, against guideline: MozillaGuideline) async throws {
        let has3DES = try await OpenSSLFeatures.has(.tripleDES)
        try await withFixture(name, store: Self.store) { fixture in
            let port = fixture.port
            var options = ProbeOptions()
            options.trustRoots = fixture.prepared.deviceTrustRoots
            let facts = try await ServerFactsCollector(probe: TLSProbe(options: options))
                .collect(ProbeTarget(host: "localhost", port: port))
            let label = "\(name) against \(guideline.source) \(guideline.configuration)"

            // Versions, and the suites at each (the probe's scan, every suite it knows offered one at a time).
            let leaf = try #require(facts.presentedChain.first, "\(label): no certificate")
            #expect(Set(facts.accepted.keys) == guideline.versions, "\(label): versions \(facts.accepted.keys.sorted())")
            for version in guideline.versions {
                let accepted = Set(facts.accepted[version] ?? [])
                let expected = version == .tls1_3 ? Set(guideline.ciphersuites)
                    : guideline.suites(at: version, key: leaf.keyType, has3DES: has3DES)
                let difference = "extra \(accepted.subtracting(expected).sorted()), missing \(expected.subtracting(accepted).sorted())"
                #expect(accepted == expected, "\(label) at \(version): \(difference)")
            }
            // What the linked OpenSSL lacks of the list is said, not hidden.
            #expect(fixture.prepared.unavailableCiphers == (guideline.ciphers.contains { $0.contains("3DES") } && !has3DES
                                                            ? ["DES-CBC3-SHA"] : []), "\(label)")

            // Groups, in TLS 1.3: each listed group the linked OpenSSL knows is served on its own; the ones it does not
            // know are the fixture's unavailableGroups, exactly; an unlisted group is refused.
            var unknown: [String] = []
            for group in guideline.tlsCurves {
                guard try await Self.knows(group: group) else {
                    unknown.append(group)
                    continue
                }
                let served = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil, extra: ["-groups", group])
                #expect(served.handshakeCompleted, "\(label): group \(group) refused:\n\(served.output.suffix(600))")
            }
            #expect(fixture.prepared.unavailableGroups == unknown, "\(label): \(fixture.prepared.unavailableGroups)")
            let p521 = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil, extra: ["-groups", "P-521"])
            #expect(!p521.handshakeCompleted, "\(label): a P-521-only client was served")

            // DH: the size where a DHE suite is listed; else no DHE at all (dh_param_size has nothing to apply to).
            if guideline.versions.contains(.tls1_2) {
                let dhe = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2",
                                                    cipher: "kDHE:@SECLEVEL=0")
                if guideline.ciphers.contains(where: { $0.contains("_DHE_") }) {
                    #expect(dhe.serverTempKey == "DH, \(guideline.dhParamSize ?? 0) bits", "\(label): \(dhe.serverTempKey ?? "no DH")")
                } else {
                    #expect(!dhe.handshakeCompleted, "\(label): a DHE suite was served: \(dhe.cipher ?? "")")
                }
            }

            // Whose order wins (TLS 1.2 where the profile has it): the client offers the guidelines' last usable suite
            // before its first; the server's order picks the first, the client's the last.
            let ordered: SClientTranscript
            let names: [String]
            if guideline.versions.contains(.tls1_2) {
                let usable = guideline.suites(at: .tls1_2, key: leaf.keyType, has3DES: has3DES)
                let listed = guideline.ciphers.filter(usable.contains)
                names = try [#require(listed.last), #require(listed.first)].map { try #require(CipherNames.openSSLName(iana: $0)) }
                ordered = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2",
                                                    cipher: names.joined(separator: ":") + ":@SECLEVEL=0")
            } else {
                names = try [#require(guideline.ciphersuites.last), #require(guideline.ciphersuites.first)]
                ordered = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil,
                                                    extra: ["-ciphersuites", names.joined(separator: ":")])
            }
            #expect(ordered.cipher == (guideline.serverPreferredOrder ? names[1] : names[0]),
                    "\(label): server_preferred_order \(guideline.serverPreferredOrder), got \(ordered.cipher ?? "none")")

            // The certificate: type, curve or key size, signature, lifespan; and the staple.
            let type = leaf.keyType == .ec ? "ecdsa" : leaf.keyType == .rsa ? "rsa" : leaf.keyType.rawValue
            #expect(guideline.certificateTypes.contains(type), "\(label): a \(type) leaf")
            if leaf.keyType == .ec { #expect(guideline.certificateCurves.contains(leaf.curve ?? ""), "\(label): \(leaf.curve ?? "")") }
            if leaf.keyType == .rsa { #expect(leaf.keyBits >= guideline.rsaKeySize ?? .max, "\(label): \(leaf.keyBits) bits") }
            #expect(guideline.certificateSignatures.contains(leaf.signatureAlgorithm), "\(label): \(leaf.signatureAlgorithm)")
            let days = leaf.notAfter.timeIntervalSince(leaf.notBefore) / 86_400
            #expect(days <= Double(guideline.maximumCertificateLifespan), "\(label): \(days) days")
            #expect(abs(days - Double(guideline.recommendedCertificateLifespan)) < 1.0 / 24, "\(label): \(days) days")
            #expect((facts.stapledOCSP?.certificateStatus == "good") == guideline.ocspStaple,
                    "\(label): staple \(facts.stapledOCSP?.certificateStatus ?? "none")")
        }
    }
}
