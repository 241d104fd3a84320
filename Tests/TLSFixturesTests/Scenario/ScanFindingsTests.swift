import Foundation
import Testing
@testable import TLSFixtures

/// Findings of an independent scan (sslyze 6.3, testssl.sh 3.0), each proven from the client side with two stacks.
@Suite("ScenarioEndToEnd: scan findings (handshake signatures, DH group size)")
struct ScanFindingsTests {
    typealias E2E = ScenarioEndToEndTests

    /// Scenarios that lower OpenSSL's security level and still speak TLS 1.2, where signature algorithms are negotiated,
    /// and that the linked OpenSSL can serve (rc4 and 3des cannot be on Debian's or Homebrew's: ScenarioEndToEndTests
    /// checks that they are refused with the reason).
    static let weakenedTLS12: [String] = ScenarioCatalog.builtIn.scenarios.filter { scenario in
        guard let tls = scenario.tls, tls.securityLevel == 0, tls.maxVersion >= .tls1_2, tls.minVersion <= .tls1_2 else { return false }
        let settings = TLSSettings(minVersion: tls.minVersion, maxVersion: tls.maxVersion, ciphers: tls.ciphers, securityLevel: tls.securityLevel)
        return (try? TLSContext.checkSupport(settings)) != nil
    }.map(\.name)

    @Test("the weakened scenarios are the ones the scan named")
    func weakenedList() {
        // sslyze flagged these (rc4 and 3des join them on an OpenSSL that can serve them).
        #expect(Set(Self.weakenedTLS12).isSuperset(of: ["sha1-leaf", "sha1-intermediate", "md5-leaf", "rsa1024", "rsa512", "dh1024", "dh512", "null"]),
                "\(Self.weakenedTLS12)")
    }

    /// A lowered security level admits the weak certificate or group the scenario is about, but never SHA-1 handshake
    /// signatures, which the baseline refuses: a client that offers only SHA-1 signature algorithms is refused by both
    /// (OpenSSL's s_client and GnuTLS), while the same client offering SHA-256 ones gets further.
    @Test("weakened scenarios refuse SHA-1 handshake signatures as the baseline does", arguments: ["ats-compliant"] + weakenedTLS12)
    func noSHA1HandshakeSignatures(name: String) async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: name)
        let plan = try #require(scenario.tls, "\(name) is plain HTTP: it has no handshake signatures to test")
        try await E2E.withFixture(name) { fixture in
            // The scenario's own suites (at security level 0 on the client side too), TLS 1.2 only.
            let cipher = "\(plan.ciphers):@SECLEVEL=0"
            async let sha1Only = SClient.connect(port: fixture.port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2", cipher: cipher,
                                                 extra: ["-sigalgs", "RSA+SHA1:ECDSA+SHA1"])
            async let sha256 = SClient.connect(port: fixture.port, minProtocol: "TLSv1.2", maxProtocol: "TLSv1.2", cipher: cipher,
                                               extra: ["-sigalgs", "RSA+SHA256:ECDSA+SHA256:rsa_pss_rsae_sha256"])
            async let gnutlsSHA1 = GnuTLS.connect(port: fixture.port, signatures: "+SIGN-RSA-SHA1:+SIGN-ECDSA-SHA1:%VERIFY_ALLOW_SIGN_WITH_SHA1")
            async let gnutlsSHA256 = GnuTLS.connect(port: fixture.port, signatures: "+SIGN-RSA-SHA256:+SIGN-ECDSA-SHA256")
            let refused = try await sha1Only
            #expect(!refused.handshakeCompleted && refused.output.contains("alert handshake failure"),
                    "\(name): a SHA-1-only client was served (or refused for another reason):\n\(refused.output.suffix(1200))")
            // The control: the only difference is the signature algorithms offered, and then the server gets past them
            // (a stock client may still refuse dh512's group itself, which is the scenario's point, not the server's).
            let served = try await sha256
            #expect(served.handshakeCompleted || served.output.contains("dh key too small"),
                    "\(name): refused a SHA-256 client too:\n\(served.output.suffix(1200))")
            let gnutlsRefused = try await gnutlsSHA1
            #expect(gnutlsRefused.contains("Received alert [40]"), "\(name): GnuTLS offering SHA-1 signatures only:\n\(gnutlsRefused.suffix(1200))")
            let gnutlsServed = try await gnutlsSHA256
            #expect(gnutlsServed.contains("- Handshake was completed") || gnutlsServed.contains("Diffie-Hellman prime"),
                    "\(name): GnuTLS offering SHA-256 signatures:\n\(gnutlsServed.suffix(1200))")
        }
    }

    /// The detector works: a server at security level 0 without the baseline's signature policy (`openssl s_server`
    /// with the same sha1-leaf certificate) does sign with SHA-1 for the same SHA-1-only client.
    @Test("control: a level-0 server without the baseline policy signs with SHA-1 for a SHA-1-only client")
    func detectorControl() async throws {
        let prepared = try await E2E.store.prepare(try ScenarioCatalog.builtIn.scenario(named: "sha1-leaf"))
        let credential = try #require(prepared.credential)
        let certFile = try External.pemFile([credential.certificate], name: "leaf.pem")
        let keyFile = try External.file(try credential.privateKey.pem, name: "leaf.key")
        let port = try Ports.unused()
        // Two connections (the readiness check, then the client), then s_server exits by itself. -www: without it,
        // s_server reads commands from its standard input and stops at its end.
        let server = try Subprocess.launch(["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certFile, "-key", keyFile,
                                            "-cipher", "ALL:@SECLEVEL=0", "-tls1_2", "-www", "-naccept", "2", "-quiet"])
        var waited = 0
        while !Ports.accepts(port) && waited < 200 { try await Task.sleep(for: .milliseconds(50)); waited += 1 }
        // No -ign_eof: s_client ends when its (empty) input does, right after the handshake.
        let result = try await External.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-cipher", "ALL:@SECLEVEL=0",
                                                 "-sigalgs", "RSA+SHA1:ECDSA+SHA1"])
        if server.process.isRunning { server.process.terminate() }
        let served = await server.finished(timeout: 10)
        #expect(result.combined.contains("Peer signing digest: SHA1"), "\(result.combined.suffix(1200))\ns_server: \(served.combined.suffix(600))")
    }

    /// TLS 1.0 and 1.1 negotiate no signature algorithm: an RSA server signs with MD5+SHA-1, so the scenarios about
    /// those versions necessarily do (their summaries say TLS 1.0/1.1 only; that is the claim).
    @Test("TLS 1.0 and 1.1 scenarios sign with MD5+SHA-1, the only choice those versions have", arguments: ["tls-v1-0", "tls-v1-1"])
    func oldVersionsHaveNoChoice(name: String) async throws {
        try await E2E.withFixture(name) { fixture in
            let transcript = try await SClient.connect(port: fixture.port)
            #expect(transcript.handshakeCompleted && transcript.output.contains("Peer signing digest: MD5-SHA1"), "\(transcript.output.suffix(1200))")
        }
    }

    /// `dhe-only` uses OpenSSL's automatic group, sized to the key; its JSON must name the size like dh1024's does.
    @Test("the JSON answer names the DH group size the client saw", arguments: [("dhe-only", 2048), ("dh1024", 1024)])
    func dhGroupSizeInJSON(name: String, bits: Int) async throws {
        try await E2E.withFixture(name) { fixture in
            async let sclient = SClient.connect(port: fixture.port)
            async let gnutls = GnuTLS.connect(port: fixture.port, signatures: "+SIGN-ALL", request: true)
            let transcript = try await sclient
            #expect(transcript.serverTempKey == "DH, \(bits) bits", "s_client saw \(transcript.serverTempKey ?? "no temp key")")
            let answer = try #require(E2E.response(transcript.httpBody), "\(transcript.output.suffix(800))")
            #expect(answer.tls?.keyExchange == "DH \(bits)")
            // GnuTLS, a second stack, reads the same size from the ServerKeyExchange ("(DHE-CUSTOM2048)": not an RFC 7919
            // group, 2048 bits) and gets the same answer.
            let gnutlsOutput = try await gnutls
            #expect(gnutlsOutput.contains("(DHE-CUSTOM\(bits))") || gnutlsOutput.contains("(DHE-FFDHE\(bits))"), "\(gnutlsOutput.suffix(1200))")
            #expect(gnutlsOutput.contains("\"keyExchange\":\"DH \(bits)\""), "\(gnutlsOutput.suffix(1200))")
        }
    }
}

/// `gnutls-cli` against a fixture: TLS 1.2 only, no certificate verification (these tests are about the handshake),
/// every suite a fixture may need (DHE, static RSA, NULL), and only the signature algorithms given. Returns everything
/// it printed.
enum GnuTLS {
    static func connect(port: Int, signatures: String, request: Bool = false) async throws -> String {
        let priority = "NORMAL:-VERS-ALL:+VERS-TLS1.2:+DHE-RSA:+RSA:+NULL:+SHA1:+SHA256:-SIGN-ALL:\(signatures)"
        let result = try await External.run(["gnutls-cli", "--insecure", "--priority", priority, "-p", "\(port)", "127.0.0.1"],
                                            stdin: request ? External.closingRequest : Data(), timeout: 30)
        return result.combined
    }
}
