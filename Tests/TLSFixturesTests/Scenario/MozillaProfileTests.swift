import Foundation
import Testing
@testable import TLSFixtures

/// Mozilla's server-side TLS configurations, as guidelines 5.8 define them (transcribed by hand from
/// https://ssl-config.mozilla.org/guidelines/5.8.json), checked against the fixtures with Python's ssl (one handshake
/// per suite and version) and openssl s_client. A suite of the JSON appears here only if an RSA or ECDSA leaf of the
/// profile's type can use it; DES-CBC3-SHA only where the linked OpenSSL has 3DES.
@Suite("Mozilla server-side TLS profiles (guidelines 5.8)")
struct MozillaProfileTests {
    static var store: CertificateStore { TestEnvironment.suiteStore("MozillaProfile") }

    static let tls13Suites: Set<String> = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]
    /// `intermediate`'s TLS 1.2 list, the RSA-authenticated ones (the ECDSA ones need an ECDSA leaf).
    static let intermediateTLS12: Set<String> = ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                                                 "ECDHE-RSA-CHACHA20-POLY1305", "DHE-RSA-AES128-GCM-SHA256",
                                                 "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-CHACHA20-POLY1305"]
    /// `old`'s list, RSA-authenticated or static RSA, without DES-CBC3-SHA (added below when OpenSSL has it).
    static let oldTLS12: Set<String> = intermediateTLS12.union([
        "ECDHE-RSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384", "ECDHE-RSA-AES256-SHA",
        "DHE-RSA-AES128-SHA256", "DHE-RSA-AES256-SHA256", "AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA256",
        "AES256-SHA256", "AES128-SHA", "AES256-SHA"])
    /// What TLS 1.0 and 1.1 can use of `old`'s list: the CBC suites with SHA-1 MACs.
    static let oldTLS10: Set<String> = ["ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA", "AES128-SHA", "AES256-SHA"]

    /// Tries every TLS ≤ 1.2 suite Python's OpenSSL knows, one per handshake, at exactly `version`; prints the accepted.
    static let enumerate = """
    import json, socket, ssl, sys
    port, version = int(sys.argv[1]), getattr(ssl.TLSVersion, sys.argv[2])
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.set_ciphers("ALL:@SECLEVEL=0")
    names = sorted({c["name"] for c in probe.get_ciphers() if c["protocol"] != "TLSv1.3"})
    accepted = []
    for name in names:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = version
        ctx.maximum_version = version
        ctx.set_ciphers(name + ":@SECLEVEL=0")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                    accepted.append(tls.cipher()[0])
        except (ssl.SSLError, OSError):
            pass
    print(json.dumps(accepted))
    """

    static func accepted(port: Int, version: String) async throws -> Set<String> {
        let result = try await External.run(["python3", "-c", enumerate, String(port), version], timeout: 180)
        let names = try JSONDecoder().decode([String].self, from: Data(result.stdout.utf8))
        return Set(names)
    }

    /// The TLS 1.3 suites the server accepts, one s_client handshake each.
    static func acceptedTLS13(port: Int) async throws -> Set<String> {
        var found: Set<String> = []
        for suite in tls13Suites.union(["TLS_AES_128_CCM_SHA256"]) {
            let transcript = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil, extra: ["-ciphersuites", suite])
            if transcript.cipher == suite { found.insert(suite) }
        }
        return found
    }

    @Test("modern: TLS 1.3 only with its three suites, X25519/P-256/P-384, the client's order, an ECDSA leaf, a good staple")
    func modern() async throws {
        try await withFixture("mozilla-modern", store: Self.store) { fixture in
            let port = fixture.port
            let tls12 = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2")
            #expect(!tls12.handshakeCompleted, "TLS 1.2 was accepted:\n\(tls12.output.suffix(800))")
            #expect(try await Self.acceptedTLS13(port: port) == Self.tls13Suites)
            let p521 = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil, extra: ["-groups", "P-521"])
            #expect(!p521.handshakeCompleted, "a P-521-only client was served")
            let p384 = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil, extra: ["-groups", "P-384"])
            #expect(p384.handshakeCompleted)
            let clientOrder = try await SClient.connect(port: port, minProtocol: "TLSv1.3", cipher: nil,
                                                        extra: ["-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"])
            #expect(clientOrder.cipher == "TLS_CHACHA20_POLY1305_SHA256", "the server overrode the client's order")
            try await checkLeafAndStaple(fixture, keyText: "Public Key Algorithm: id-ecPublicKey", signature: "ecdsa-with-SHA256")
        }
    }

    @Test("intermediate: TLS 1.2–1.3, its RSA suites and ffdhe2048, the client's order, a good staple")
    func intermediate() async throws {
        try await withFixture("mozilla-intermediate", store: Self.store) { fixture in
            let port = fixture.port
            let tls11 = try await SClient.connect(port: port, minProtocol: "TLSv1.1", maxProtocol: "TLSv1.1")
            #expect(!tls11.handshakeCompleted, "TLS 1.1 was accepted")
            #expect(try await Self.accepted(port: port, version: "TLSv1_2") == Self.intermediateTLS12)
            #expect(try await Self.acceptedTLS13(port: port) == Self.tls13Suites)
            let dhe = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2", cipher: "DHE-RSA-AES128-GCM-SHA256")
            #expect(dhe.serverTempKey == "DH, 2048 bits", "\(dhe.serverTempKey ?? "no DH")")
            let clientOrder = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2",
                                                        cipher: "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256")
            #expect(clientOrder.cipher == "ECDHE-RSA-CHACHA20-POLY1305", "the server overrode the client's order")
            #expect(fixture.prepared.unavailableCiphers.isEmpty)
            try await checkLeafAndStaple(fixture, keyText: "Public-Key: (2048 bit)", signature: "sha256WithRSAEncryption")
        }
    }

    @Test("old: TLS 1.0–1.3, its suites (DES-CBC3-SHA only where OpenSSL has 3DES), 1024-bit DHE, the server's order")
    func old() async throws {
        try await withFixture("mozilla-old", store: Self.store) { fixture in
            let port = fixture.port
            let has3DES = try await OpenSSLFeatures.has(.tripleDES)
            let tls12 = has3DES ? Self.oldTLS12.union(["DES-CBC3-SHA"]) : Self.oldTLS12
            let tls10 = has3DES ? Self.oldTLS10.union(["DES-CBC3-SHA"]) : Self.oldTLS10
            #expect(try await Self.accepted(port: port, version: "TLSv1_2") == tls12)
            #expect(try await Self.accepted(port: port, version: "TLSv1_1") == tls10)
            #expect(try await Self.accepted(port: port, version: "TLSv1") == tls10)
            #expect(try await Self.acceptedTLS13(port: port) == Self.tls13Suites)
            // What the linked OpenSSL cannot do of the profile is said, not hidden.
            #expect(fixture.prepared.unavailableCiphers == (has3DES ? [] : ["DES-CBC3-SHA"]))
            let dhe = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2",
                                                cipher: "DHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0")
            #expect(dhe.serverTempKey == "DH, 1024 bits", "\(dhe.serverTempKey ?? "no DH")")
            let serverOrder = try await SClient.connect(port: port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2",
                                                        cipher: "AES256-SHA:ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0")
            #expect(serverOrder.cipher == "ECDHE-RSA-AES128-GCM-SHA256", "the client's order won: \(serverOrder.cipher ?? "none")")
            try await checkLeafAndStaple(fixture, keyText: "Public-Key: (2048 bit)", signature: "sha256WithRSAEncryption")
        }
    }

    /// The leaf's key and signature, its 90-day life (recommended_certificate_lifespan), and a good stapled answer.
    private func checkLeafAndStaple(_ fixture: FixtureServer, keyText: String, signature: String) async throws {
        let transcript = try await SClient.connect(port: fixture.port, extra: ["-status"])
        #expect(transcript.output.contains("Cert Status: good"), "\(fixture.scenario.name): no good staple")
        let text = try await External.openssl(["x509", "-noout", "-text"], stdin: fixture.chain[0].pem).stdout
        #expect(text.contains(keyText) && text.contains("Signature Algorithm: \(signature)"), "\(fixture.scenario.name):\n\(text.prefix(900))")
        let leaf = fixture.chain[0]
        #expect(abs(leaf.notAfter.timeIntervalSince(leaf.notBefore) - 90 * 86_400) < 3_600, "\(fixture.scenario.name): not 90 days")
    }
}
