import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesCLISupport

/// Every catalog scenario, started for real and judged from the client side: by the package's own `TLSProbe` and by
/// clients we did not write (openssl s_client / verify / x509, curl, Python's ssl), against the hand-written table in
/// `ScenarioExpectations.swift`.
@Suite("ScenarioEndToEnd: every scenario from the client side", .requires(Tools.openssl))
struct ScenarioEndToEndTests {
    static var store: CertificateStore { get async { await TestEnvironment.suiteStoreWithSlowKeys("ScenarioEndToEnd") } }

    static func start(_ name: String, port: Int = 0) async throws -> FixtureServer {
        try await FixtureServer.start(name, store: store, configuration: FixtureConfiguration(port: port))
    }

    /// Starts `name`, runs `body`, and stops the fixture whatever happens.
    static func withFixture<T: Sendable>(_ name: String, _ body: (FixtureServer) async throws -> T) async throws -> T {
        try await TLSFixtures.withFixture(name, store: store, body)
    }

    static func probe(_ fixture: FixtureServer, _ configure: (inout ProbeOptions) -> Void = { _ in }) async throws -> ProbeResult {
        var options = ProbeOptions()
        options.trustRoots = [fixture.caCertificate]
        configure(&options)
        return try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port))
    }

    static func response(_ body: String?) -> FixtureResponse? {
        body.flatMap { try? JSONDecoder().decode(FixtureResponse.self, from: Data($0.utf8)) }
    }

    // MARK: - Every scenario

    /// Scenarios that need an optional OpenSSL feature (SSLv3, RC4, 3DES) are `optionalFeatures`'s: it runs these same
    /// checks where the linked OpenSSL serves them and checks the honest refusal where it does not, so no case here
    /// can pass by returning early.
    @Test("presents what its file declares, to our probe and to openssl",
          arguments: ScenarioExpectations.all.filter { $0.handshake != nil && $0.requires == nil })
    func presents(_ row: ScenarioExpectation) async throws {
        try await Self.withFixture(row.name) { fixture in
            try await checkHandshake(row, try #require(row.handshake), fixture)
        }
    }

    /// Adding a scenario is adding its file: loaded from a directory as `serve --scenarios DIR` loads it, the new file
    /// is in the catalog, in the scenario table and in the expectations, and the server is held to what it declares,
    /// with no edit anywhere else.
    @Test("a new scenario file in a directory: catalog, table and expectations pick it up, and the server meets them")
    func newScenarioFileNeedsNoOtherEdit() async throws {
        let directory = TestEnvironment.temporaryDirectory("new-scenario")
        let json = #"""
        {"name": "tls-v1-2-sha256-cbc", "group": "custom", "port": 9901, "summary": "TLS 1.2, ECDHE-RSA-AES128-SHA256 only",
         "tls": {"maxVersion": "TLSv1.2", "ciphers": "ECDHE-RSA-AES128-SHA256"}, "certificate": {},
         "expect": {"handshake": {"protocol": "TLSv1.2", "ciphers": ["ECDHE-RSA-AES128-SHA256"]},
                    "verify": "ok", "ats": "allow", "atsFix": {"kind": "not-needed"}}}
        """#
        try Data(json.utf8).write(to: directory.appendingPathComponent("tls-v1-2-sha256-cbc.json"))
        let catalog = try ScenarioCatalog.withUserScenarios(from: directory)

        #expect(catalog.names.count == ScenarioCatalog.builtIn.names.count + 1)
        let scenario = try catalog.scenario(named: "tls-v1-2-sha256-cbc")
        #expect(catalog.port(of: scenario) == 9901)
        // No client has judged it yet (it has no expect.clients and no row in docs/clients.json): the table says so
        // rather than claiming every client agrees with OpenSSL.
        #expect(CatalogMarkdown.table(catalog).split(separator: "\n").contains(
            "| 9901 | `tls-v1-2-sha256-cbc` | TLS 1.2, ECDHE-RSA-AES128-SHA256 only | ok | not yet judged by the client matrix "
                + "| allow | — |"))
        let row = ScenarioExpectation(declaredBy: scenario)
        let expected = try #require(row.handshake)
        #expect(expected.protocolName == "TLSv1.2" && expected.ciphers == ["ECDHE-RSA-AES128-SHA256"] && expected.keyBits == 2048)

        try await TLSFixtures.withFixture(scenario, store: Self.store) { fixture in
            try await checkHandshake(row, expected, fixture)
        }
    }

    @Test("http: plain HTTP answers every client, and a TLS client gets no TLS", .requires(Tools.curl, Tools.pythonSSL))
    func cleartext() async throws {
        #expect(ScenarioExpectations.all.filter { $0.handshake == nil }.map(\.name) == ["http"], "the cleartext rows")
        try await Self.withFixture("http") { fixture in try await checkCleartext(fixture) }
    }

    private func checkHandshake(_ row: ScenarioExpectation, _ expected: HandshakeExpectation, _ fixture: FixtureServer) async throws {
        let name = row.name
        let roots = expected.deviceAlsoTrustsInterceptionRoot ? fixture.prepared.deviceTrustRoots : [fixture.caCertificate]
        #expect(fixture.prepared.deviceTrustRoots.count == (expected.deviceAlsoTrustsInterceptionRoot ? 2 : 1), "\(name): device roots")
        let sslv3 = row.requires == .sslv3
        // client-cert-required is judged here with its client certificate; the refusal without one is its own test.
        let clientCredential = name == "client-cert-required" ? fixture.prepared.clientCredential : nil
        var clientFlags: [String] = []
        if let credential = clientCredential {
            clientFlags = ["-cert", try External.pemFile([credential.certificate], name: "client.pem"),
                           "-key", try External.file(credential.privateKey.pem, name: "client.key")]
        }

        async let probed = Self.probe(fixture) { options in
            options.trustRoots = roots
            options.clientCredential = clientCredential
            if sslv3 { options.minVersion = .ssl3 }
        }
        async let transcript = SClient.connect(port: fixture.port, minProtocol: sslv3 ? "SSLv3" : "TLSv1", extra: clientFlags)
        let result = try await probed
        let sclient = try await transcript
        // E2E_DUMP=/some/dir keeps every s_client transcript for diagnosis.
        if let dir = ProcessInfo.processInfo.environment["E2E_DUMP"] { try? sclient.output.write(toFile: "\(dir)/\(name).txt", atomically: true, encoding: .utf8) }

        // When no client gets through, one issue says so rather than a column-by-column cascade.
        if result.failure != nil && !sclient.handshakeCompleted {
            let reason = sclient.output.components(separatedBy: .newlines).filter { $0.contains(":error:") }.joined(separator: "; ")
            Issue.record("\(name): no handshake at all, expected \(expected.protocolName) \(expected.ciphers.sorted()). probe: \(result.failure ?? ""); s_client: \(reason)")
            return
        }

        // Our probe.
        #expect(result.failure == nil, "\(name): the probe's handshake failed: \(result.failure ?? "")")
        #expect(result.protocolName == expected.protocolName, "\(name): protocol")
        #expect(result.cipher.map { expected.ciphers.contains($0.openssl) } == true,
                "\(name): cipher \(result.cipher?.openssl ?? "none") not in \(expected.ciphers.sorted())")
        if result.failure == nil {
            #expect(KeyExchange.fromProbe(result.keyExchange) == expected.keyExchange,
                    "\(name): key exchange \(result.keyExchange ?? "none (RSA)"), expected \(expected.keyExchange)")
        }
        #expect(result.presentedChain.count == expected.certificateCount, "\(name): certificates sent")
        #expect(result.presentedChain.map(\.der) == fixture.chainDER, "\(name): the chain sent is not fixture.chain")
        #expect(result.verification?.summary == expected.verify, "\(name): probe verification")
        // Without a certificate the comparisons below cannot be made; s_client is still asked, to show its view too.
        let leaf = result.presentedChain.first
        if let leaf {
            #expect(expected.leafSignature.contains(leaf.signatureAlgorithm), "\(name): leaf signature \(leaf.signatureAlgorithm)")
            #expect(leaf.keyType == expected.keyType && leaf.keyBits == expected.keyBits,
                    "\(name): leaf key \(leaf.keyType) \(leaf.keyBits), expected \(expected.keyType) \(expected.keyBits)")
            if expected.leafSignature.count > 1 { checkSignatureMatchesIssuer(name, leaf, fixture: fixture, sent: result.presentedChain, roots: roots) }
            await checkWhatIsDifferent(name, chain: result.presentedChain, fixture: fixture)
        }

        // The server's own account of the connection, in the JSON every request gets.
        let answer = Self.response(result.http?.body)
        #expect(result.http?.status == 200, "\(name): HTTP status")
        #expect(answer?.scenario == name, "\(name): the response names \(answer?.scenario ?? "nothing")")
        #expect(answer?.tls?.protocol == expected.protocolName, "\(name): server-side protocol")
        #expect(answer?.tls.map { expected.ciphers.contains($0.cipher.openssl) } == true, "\(name): server-side cipher")
        if let serverKX = answer?.tls?.keyExchange {
            // A server using automatic DH parameters reports only "DH": then only the kind can be compared.
            if serverKX == "DH", case .dhe = expected.keyExchange {} else {
                #expect(KeyExchange.fromProbe(serverKX) == expected.keyExchange, "\(name): server-side key exchange \(serverKX)")
            }
        }

        // A client against a different 'trust': pin-mitm against the built-in CA alone.
        if let caOnly = expected.verifyAgainstBuiltInCAOnly {
            let alone = try await Self.probe(fixture) { $0.sendHTTPRequest = false }
            #expect(alone.verification?.summary == caOnly, "\(name): probe against the built-in CA alone")
        }

        // openssl s_client.
        if let refusal = expected.stockOpenSSLRefuses {
            // The probe reads past OpenSSL's default limit; a stock s_client does not, and says why.
            #expect(sclient.output.contains(refusal), "\(name): s_client should refuse with \"\(refusal)\":\n\(sclient.output.suffix(1500))")
            #expect(sclient.httpBody == nil, "\(name): s_client got an answer past its own limit")
            let pems = result.presentedChain.map { String(decoding: (try? Certificate(der: $0.der).pem) ?? Data(), as: UTF8.self) }
            let verdict = try await OpenSSLVerify.judge(chainPEM: pems, roots: roots)
            #expect(verdict.verdict == expected.verify, "\(name): openssl verify on the chain the probe read:\n\(verdict.output.prefix(500))")
            return
        }
        if case .dhe(let bits) = expected.keyExchange, bits < 1024 {
            // OpenSSL refuses DH groups under 1024 bits even at security level 0; the raw ServerKeyExchange still
            // shows what the server offered.
            #expect(!sclient.handshakeCompleted, "\(name): s_client accepted a \(bits)-bit DH group")
            #expect(sclient.output.contains("dh key too small"), "\(name): s_client's refusal:\n\(sclient.output.suffix(1500))")
        } else {
            #expect(sclient.handshakeCompleted, "\(name): s_client's handshake failed:\n\(sclient.output.suffix(1500))")
            #expect(sclient.protocolName == expected.protocolName, "\(name): s_client protocol")
            #expect(sclient.cipher.map(expected.ciphers.contains) == true, "\(name): s_client cipher \(sclient.cipher ?? "none")")
            #expect(KeyExchange.fromSClient(sclient.serverTempKey) == expected.keyExchange,
                    "\(name): s_client Server Temp Key \(sclient.serverTempKey ?? "none")")
            #expect(sclient.serverPublicKeyBits == expected.keyBits, "\(name): s_client server public key")
            #expect(sclient.httpBody.flatMap(Self.response)?.scenario == name, "\(name): the answer s_client got")
        }
        if case .dhe(let bits) = expected.keyExchange {
            #expect(sclient.serverKeyExchangeDHPrimeBits == bits, "\(name): DH prime in the ServerKeyExchange")
        }
        let pems = sclient.certificatesPEM
        #expect(pems.count == expected.certificateCount, "\(name): s_client saw \(pems.count) certificates")
        #expect(pems.compactMap { try? Certificate(pem: Data($0.utf8)).der } == result.presentedChain.map(\.der),
                "\(name): s_client and the probe saw different chains")
        guard let leafPEM = pems.first else { return }

        // openssl verify and openssl x509 on the chain as captured from the wire.
        async let judged = OpenSSLVerify.judge(chainPEM: pems, roots: roots)
        async let printed = OpenSSLVerify.signatureAlgorithm(pem: leafPEM)
        async let caOnlyJudged: (verdict: String, output: String)? = expected.verifyAgainstBuiltInCAOnly == nil
            ? nil : OpenSSLVerify.judge(chainPEM: pems, roots: [fixture.caCertificate])
        let verdict = try await judged
        #expect(verdict.verdict == expected.verify, "\(name): openssl verify said:\n\(verdict.output)")
        let signature = try await printed
        #expect(signature.map(expected.leafSignature.contains) == true, "\(name): openssl x509 shows \(signature ?? "nothing")")
        #expect(signature == leaf?.signatureAlgorithm, "\(name): openssl and the probe disagree on the signature algorithm")
        if let caOnly = expected.verifyAgainstBuiltInCAOnly, let alone = try await caOnlyJudged {
            #expect(alone.verdict == caOnly, "\(name): openssl verify against the built-in CA alone:\n\(alone.output)")
        }
    }

    /// Where the spec leaves the issuer's key type open, the leaf's signature must at least be one that issuer can make.
    private func checkSignatureMatchesIssuer(_ name: String, _ leaf: CertificateFacts, fixture: FixtureServer,
                                             sent: [CertificateFacts], roots: [Certificate]) {
        let known = fixture.prepared.credential.map { $0.intermediates + [$0.root] } ?? []
        let candidates = Array(sent.dropFirst()) + (known + roots).map(\.facts)
        guard let issuer = candidates.first(where: { $0.subject == leaf.issuer && $0.isCA }) else {
            Issue.record("\(name): no issuer named \(leaf.issuer) among the chain, the credential and the roots")
            return
        }
        let family = issuer.keyType == .ec ? "ecdsa-with-" : "WithRSAEncryption"
        #expect(leaf.signatureAlgorithm.contains(family), "\(name): a \(issuer.keyType) issuer cannot sign \(leaf.signatureAlgorithm)")
    }

    /// The one thing the catalog says is different ("what is deliberately different"), and the baseline everywhere else.
    private func checkWhatIsDifferent(_ name: String, chain: [CertificateFacts], fixture: FixtureServer) async {
        guard let leaf = chain.first else { return }
        let now = Date()
        let day: TimeInterval = 86_400
        let ca = fixture.caCertificate.facts
        let pins = fixture.pins
        #expect(leaf.spkiSHA256 != pins.backup, "\(name): a server uses the backup pin's key")

        // Names: localhost and NAME.fixtures.test unless the scenario changes them; IP addresses only in ip-san (a leaf
        // that names an address under the CA's iPAddress constraints fails every BoringSSL client: see docs/CLIENTS.md).
        switch name {
        case "wrong-host", "legacy-everything":
            #expect(leaf.dnsNames == ["wrong.host.invalid"] && leaf.ipAddresses.isEmpty, "\(name): SANs \(leaf.dnsNames ?? []) \(leaf.ipAddresses)")
        case "no-san":
            #expect(leaf.dnsNames == nil && leaf.ipAddresses.isEmpty, "\(name): has a SAN extension")
            #expect(leaf.commonName == "localhost", "\(name): CN \(leaf.commonName ?? "none")")
        default:
            let dns = Set(leaf.dnsNames ?? [])
            #expect(dns.isSuperset(of: ["localhost", "\(name).fixtures.test"]), "\(name): DNS SANs \(dns.sorted().prefix(5))")
            #expect(Set(leaf.ipAddresses.map(Ports.canonicalIP)) == (name == "ip-san" ? ["127.0.0.1", "::1"] : []), "\(name): IP SANs \(leaf.ipAddresses)")
        }
        switch name {
        case "1000-sans":
            #expect(leaf.dnsNames?.count == 1000, "\(name): \(leaf.dnsNames?.count ?? 0) DNS SANs")
        case "10000-sans":
            #expect(leaf.dnsNames?.count == 10_000, "\(name): \(leaf.dnsNames?.count ?? 0) DNS SANs")
        case "long-subdomain":
            let long = (leaf.dnsNames ?? []).filter { $0 != "localhost" && $0 != "\(name).fixtures.test" }
            #expect(long.count == 1 && long.first?.hasSuffix(".fixtures.test") == true
                    && long.first?.split(separator: ".").first?.count == 63, "\(name): no 63-character label: \(long)")
        case "no-subject":
            #expect(leaf.subject.isEmpty && leaf.commonName == nil, "\(name): subject \"\(leaf.subject)\"")
        case "no-common-name":
            #expect(leaf.commonName == nil || leaf.commonName == "", "\(name): CN \(leaf.commonName ?? "")")
        case "name-constraint-violation":
            let extra = Set(leaf.dnsNames ?? []).subtracting(["localhost", "\(name).fixtures.test"])
            #expect(!extra.isEmpty, "\(name): no name beyond the baseline's")
        default: break
        }

        // EKU serverAuth.
        #expect(leaf.extendedKeyUsage == (name == "no-server-auth-eku" ? ["clientAuth"] : ["serverAuth"]), "\(name): EKU \(leaf.extendedKeyUsage ?? [])")

        // Validity: 397 days from one day ago (the store may have made it on an earlier day, never later).
        let lifetime = leaf.notAfter.timeIntervalSince(leaf.notBefore)
        switch name {
        case "expired":
            #expect(leaf.notAfter < now, "\(name): notAfter \(leaf.notAfter)")
        case "not-yet-valid":
            #expect(leaf.notBefore > now, "\(name): notBefore \(leaf.notBefore)")
        case "validity-826-days":
            #expect(abs(lifetime - 826 * day) < 3_600, "\(name): \(lifetime / day) days")
            #expect(leaf.notBefore < now && now < leaf.notAfter)
        case "mozilla-old", "mozilla-intermediate", "mozilla-modern":
            // Mozilla's recommended_certificate_lifespan (guidelines 6.0, and 5.8 for old): 90 days.
            #expect(abs(lifetime - 90 * day) < 3_600, "\(name): \(lifetime / day) days")
            #expect(leaf.notBefore < now && now < leaf.notAfter)
        default:
            #expect(abs(lifetime - 397 * day) < 3_600, "\(name): \(lifetime / day) days")
            #expect(leaf.notBefore <= now.addingTimeInterval(-day + 3_600) && now < leaf.notAfter,
                    "\(name): valid \(leaf.notBefore)–\(leaf.notAfter)")
        }

        // Issuer: the built-in CA directly, unless the scenario changes the chain.
        switch name {
        case "self-signed", "legacy-everything":
            #expect(leaf.isSelfIssued && leaf.issuer == leaf.subject, "\(name): not self-issued")
        case "untrusted-root":
            let root = chain.count > 1 ? chain[1] : nil
            #expect(root?.isSelfIssued == true && root?.isCA == true && root?.subject == leaf.issuer, "\(name): the root is not sent after the leaf")
            #expect(root?.spkiSHA256 != ca.spkiSHA256, "\(name): the 'untrusted' root is the built-in CA")
        case "intermediate", "sha1-intermediate", "md5-leaf":
            let intermediate = chain.count > 1 ? chain[1] : nil
            #expect(intermediate?.isCA == true && intermediate?.subject == leaf.issuer && intermediate?.issuer == ca.subject,
                    "\(name): root → intermediate → leaf")
            // One shape for the family (an RSA intermediate, since MD5 exists only with RSA), so each differs from
            // `intermediate` in one thing: the intermediate's signature, or the leaf's.
            #expect(intermediate?.keyType == .rsa, "\(name): intermediate key \(intermediate?.keyType.rawValue ?? "?")")
            #expect(intermediate?.signatureDigest == (name == "sha1-intermediate" ? "sha1" : "sha256"),
                    "\(name): intermediate signed with \(intermediate?.signatureDigest ?? "?")")
        case "revoked", "revoked-stapled", "ocsp-good-stapled", "must-staple-missing", "ocsp-unreachable", "crl-revoked",
             "mozilla-intermediate", "mozilla-old":
            // Issued by an intermediate the built-in CA signed, and the intermediate is sent after the leaf.
            let intermediate = chain.count > 1 ? chain[1] : nil
            #expect(intermediate?.isCA == true && intermediate?.subject == leaf.issuer && intermediate?.issuer == ca.subject,
                    "\(name): root → intermediate → leaf, intermediate sent")
            if name == "mozilla-old" { #expect(intermediate?.keyType == .rsa, "\(name): intermediate key \(intermediate?.keyType.rawValue ?? "?")") }
        case "reversed-chain":
            // Leaf, then the root, then the intermediate that signed the leaf: the issuers top-down.
            let sent = chain.dropFirst().map { $0 }
            #expect(sent.count == 2 && sent[0].isSelfIssued && sent[0].spkiSHA256 == ca.spkiSHA256, "\(name): the root is not second")
            #expect(sent.count == 2 && sent[1].isCA && sent[1].subject == leaf.issuer && sent[1].issuer == ca.subject,
                    "\(name): the intermediate that signed the leaf is not last")
        case "incomplete-chain":
            #expect(leaf.issuer != ca.subject, "\(name): the leaf comes straight from the root, so nothing is missing")
            #expect(fixture.prepared.credential?.intermediates.first?.facts.issuer == ca.subject, "\(name): root → intermediate → leaf")
        case "pin-mitm":
            #expect(leaf.issuer != ca.subject, "\(name): issued by the built-in CA")
            let interception = fixture.prepared.deviceTrustRoots.first { $0.facts.spkiSHA256 != ca.spkiSHA256 }?.facts
            #expect(interception?.subject == leaf.issuer, "\(name): not issued by the second trusted root")
        default:
            #expect(leaf.issuer == ca.subject, "\(name): issued by \(leaf.issuer), not the built-in CA")
        }

        // Pinning.
        switch name {
        case "pinned":
            #expect(leaf.spkiSHA256 == pins.pinnedLeaf && pins.leaf == pins.pinnedLeaf, "\(name): not the published pinned key")
        case "pin-reissued":
            #expect(leaf.spkiSHA256 == pins.pinnedLeaf, "\(name): not the pinned key")
            if let pinned = try? await Self.store.prepare(try ScenarioCatalog.builtIn.scenario(named: "pinned")).chainSent.first {
                #expect(pinned.der != leaf.der, "\(name): the same certificate as pinned, not a new one")
            }
        case "pin-rotated-key", "pin-mitm":
            #expect(leaf.spkiSHA256 != pins.pinnedLeaf, "\(name): still the pinned key")
        default: break
        }
    }

    /// `http`: plain HTTP answers; a TLS client gets no TLS.
    private func checkCleartext(_ fixture: FixtureServer) async throws {
        #expect(fixture.url.scheme == "http")
        let port = fixture.port
        async let plain = TLSProbe(options: ProbeOptions()).probe(ProbeTarget(host: "localhost", port: port, scheme: "http"))
        async let tls = Self.probe(fixture)
        async let curl = External.run(["curl", "-sS", "--max-time", "20", "http://localhost:\(port)/"])
        async let sclient = SClient.connect(port: port)
        async let python = External.run(["python3", "-c", Python.rawClientHello, String(port)])

        let answer = try await plain
        #expect(answer.http?.status == 200)
        #expect(Self.response(answer.http?.body)?.scenario == "http")
        #expect(Self.response(answer.http?.body)?.tls == nil, "a cleartext answer reports TLS details")

        let overTLS = try await tls
        #expect(overTLS.failure != nil && overTLS.protocolName == nil && overTLS.presentedChain.isEmpty, "a TLS handshake with http succeeded")

        let curled = try await curl
        #expect(curled.status == 0, "curl: \(curled.stderr)")
        #expect(Self.response(curled.stdout)?.scenario == "http" && Self.response(curled.stdout)?.tls == nil, "curl got: \(curled.stdout)")

        let transcript = try await sclient
        #expect(!transcript.handshakeCompleted && transcript.certificatesPEM.isEmpty, "s_client negotiated TLS with http:\n\(transcript.output)")

        // The raw answer to a ClientHello is not a TLS record (0x16 handshake / 0x15 alert) but HTTP's complaint.
        let raw = try await python
        #expect(raw.stdout.contains("sent=22"), "python did not send a ClientHello: \(raw.combined)")
        #expect(raw.stdout.contains("tls=False") && raw.stdout.contains("http=True"), "answer to a ClientHello: \(raw.combined)")
    }

    // MARK: - Scenarios this OpenSSL cannot serve

    @Test("SSLv3, RC4 and 3DES are served when OpenSSL has them, and refused honestly when not",
          arguments: ScenarioExpectations.all.filter { $0.requires != nil })
    func optionalFeatures(_ row: ScenarioExpectation) async throws {
        let feature = try #require(row.requires)
        // Below the ephemeral range, from the allocator that keeps tests' ports apart: a port the kernel picked for
        // "unused" is one it may give the next fixture started on port 0 elsewhere in the run, which then "listens
        // after the refusal".
        let port = try Ports.freeRange(count: 1)
        if try await OpenSSLFeatures.has(feature) {
            // Served here: every column, as `presents` checks the rest.
            try await TLSFixtures.withFixture(row.name, store: Self.store, configuration: FixtureConfiguration(port: port)) { fixture in
                #expect(fixture.port == port)
                try await checkHandshake(row, try #require(row.handshake), fixture)
            }
        } else {
            try await checkRefused(row, feature: feature, port: port)
        }
    }

    private func checkRefused(_ row: ScenarioExpectation, feature: OptionalFeature, port: Int) async throws {
        do {
            let fixture = try await Self.start(row.name, port: port)
            await fixture.stop()
            Issue.record("\(row.name) started although this OpenSSL has no \(feature)")
        } catch let error as ScenarioUnsupported {
            let text = "\(error)"
            #expect(error.scenario == row.name)
            #expect(text.contains("unsupported by the linked OpenSSL"), "\(text)")
            let named: [String] = switch feature {
            case .sslv3: ["SSLv3"]
            case .rc4: ["RC4"]
            case .tripleDES: ["3DES", "DES-CBC3"]
            }
            #expect(named.contains { text.contains($0) }, "the reason does not name \(feature): \(text)")
            // …and says how to get an OpenSSL that can, in one line.
            #expect(text.contains("run `make legacy-openssl`") && !text.contains("\n"), "no way out offered: \(text)")
        }
        // Nothing was left listening on the port it was asked to use.
        #expect(!Ports.accepts(port), "something listens on \(port) after the refusal")
        #expect(Ports.canListen(port), "port \(port) cannot be bound after the refusal")
        if Ports.hasIPv6Loopback {
            #expect(!Ports.accepts(port, host: "::1") && Ports.canListen(port, host: "::1"), "[::1]:\(port) is held after the refusal")
        } else {
            TestEnvironment.skipPart("the [::1] port check after a refusal", because: "this machine has no usable ::1")
        }
    }
}

enum Python {
    /// Sends the ClientHello of Python's ssl to argv[1] on localhost and reports what came back.
    static let rawClientHello = """
    import socket, ssl, sys
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    s = socket.create_connection(("localhost", int(sys.argv[1])), timeout=10)
    s.sendall(hello)
    data = b""
    try:
        while len(data) < 65536:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    print("sent=%d tls=%s http=%s first=%r" % (hello[0], data[:1] in (b"\\x16", b"\\x15"), data.startswith(b"HTTP/1."), data[:40]))
    """

    /// Connects to argv[1] with a default context trusting argv[2]; `permissive` in argv[3] allows TLS 1.0 and every
    /// suite. Prints `OK <version> <cipher>` or `REFUSED <error>`.
    static let connect = """
    import socket, ssl, sys
    ctx = ssl.create_default_context(cafile=sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "permissive":
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.set_ciphers("ALL:@SECLEVEL=0")
    elif len(sys.argv) > 3 and sys.argv[3] == "noverify":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("localhost", int(sys.argv[1])), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                print("OK", tls.version(), tls.cipher()[0])
    except Exception as error:
        print("REFUSED", error)
    """
}
