import COpenSSL
import Foundation
import Testing
@testable import TLSFixtures

/// OpenSSL 3.5+ (Homebrew's 3.6, Debian 13, recent Ubuntu) negotiates the hybrid X25519MLKEM768 by default in TLS 1.3,
/// which has no peer temporary key: the probe and the fixture JSON must name the group instead of reporting static
/// RSA or nothing, and s_client's new wording must be read. This machine links OpenSSL 3.0, so the 3.5 side is
/// checked through the naming code and through s_client texts in 3.5's format, and the live handshakes check 3.0's.
@Suite("OpenSSL 3.5+: the negotiated group (X25519MLKEM768) is reported")
struct KeyExchangeGroupTests {
    @Test("a group is named in the temporary key's wording where it has one, by its own name where not")
    func display() {
        #expect(KeyExchangeName.display(group: "x25519") == "X25519")
        #expect(KeyExchangeName.display(group: "secp256r1") == "ECDH prime256v1")   // as s_client names the curve
        #expect(KeyExchangeName.display(group: "secp384r1") == "ECDH secp384r1")
        #expect(KeyExchangeName.display(group: "ffdhe2048") == "DH 2048")
        #expect(KeyExchangeName.display(group: "X25519MLKEM768") == "X25519MLKEM768")
        #expect(KeyExchangeName.display(group: "SecP384r1MLKEM1024") == "SecP384r1MLKEM1024")
        // The temporary key, when there is one, is what s_client prints and wins; without one, the group answers.
        #expect(KeyExchangeName.summary(temporaryKey: "X25519", group: "x25519") == "X25519")
        #expect(KeyExchangeName.summary(temporaryKey: "DH 1024", group: nil) == "DH 1024")
        #expect(KeyExchangeName.summary(temporaryKey: nil, group: "X25519MLKEM768") == "X25519MLKEM768")
        #expect(KeyExchangeName.summary(temporaryKey: nil, group: nil) == nil)
    }

    static func result(version: TLSVersion, keyExchange: String?, group: String?) -> ProbeResult {
        var result = ProbeResult(target: "localhost:1", connectedTo: "127.0.0.1:1", presentedChain: [])
        result.protocolName = version == .tls1_3 ? "TLSv1.3" : "TLSv1.2"
        result.version = version
        result.cipher = HandshakeDetails.Cipher(openssl: "TLS_AES_128_GCM_SHA256", iana: "TLS_AES_128_GCM_SHA256")
        result.keyExchange = keyExchange
        result.group = group
        return result
    }

    @Test("probe's text: a hybrid group is named, never reported as static RSA; TLS 1.3 is never 'RSA'")
    func probeText() {
        func line(_ result: ProbeResult) -> String? {
            ProbeReport.text(result).split(separator: "\n").first { $0.hasPrefix("Key exch.") }.map(String.init)
        }
        // What a probe linked with OpenSSL 3.5 reads from a 3.5 server: no temporary key, the group's name.
        #expect(line(Self.result(version: .tls1_3, keyExchange: "X25519MLKEM768", group: "X25519MLKEM768")) == "Key exch.  X25519MLKEM768")
        #expect(line(Self.result(version: .tls1_3, keyExchange: "X25519", group: "x25519")) == "Key exch.  X25519")
        // Static RSA before TLS 1.3 stays what it is…
        #expect(line(Self.result(version: .tls1_2, keyExchange: nil, group: nil))?.contains("RSA (no ephemeral key") == true)
        // …but an unnamed TLS 1.3 group (an older OpenSSL facing a new one) is not static RSA.
        let unnamed = line(Self.result(version: .tls1_3, keyExchange: nil, group: nil))
        #expect(unnamed?.contains("RSA") == false && unnamed?.contains("ephemeral") == true, "\(unnamed ?? "")")
        // The JSON carries both fields.
        let json = String(decoding: try! JSONEncoder().encode(Self.result(version: .tls1_3, keyExchange: "X25519MLKEM768", group: "X25519MLKEM768")), as: UTF8.self)
        #expect(json.contains("\"group\":\"X25519MLKEM768\"") && json.contains("\"keyExchange\":\"X25519MLKEM768\""), "\(json)")
    }

    /// The session summary `openssl s_client` printed here (OpenSSL 3.0.19, against the tls-v1-3 fixture), cut down.
    static let sClient30 = """
        Peer signing digest: SHA256
        Peer signature type: RSA-PSS
        Server Temp Key: X25519, 253 bits
        ---
        New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384
        Server public key is 2048 bit
        """
    /// The same from OpenSSL 3.5+, in the format of its apps/lib/s_cb.c (ssl_print_tmp_key): "Peer Temp Key:" for a
    /// group with a temporary key, "Negotiated TLS1.3 group:" for one without (hybrid and ML-KEM groups).
    static let sClient35Hybrid = """
        Peer signing digest: SHA256
        Peer signature type: rsa_pss_rsae_sha256
        Negotiated TLS1.3 group: X25519MLKEM768
        ---
        New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384
        Server public key is 2048 bit
        """
    static let sClient35Classic = """
        Peer signature type: ecdsa_secp256r1_sha256
        Peer Temp Key: ECDH, prime256v1, 256 bits
        ---
        New, TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256
        """

    @Test("s_client's key-exchange line is read in 3.0's wording and in 3.5's (Peer Temp Key, Negotiated TLS1.3 group)")
    func sClientWordings() {
        let old = SClientTranscript(output: Self.sClient30, status: 0)
        #expect(old.serverTempKey == "X25519, 253 bits" && KeyExchange.fromSClient(old.serverTempKey) == .ecdhe)
        let hybrid = SClientTranscript(output: Self.sClient35Hybrid, status: 0)
        #expect(hybrid.serverTempKey == "X25519MLKEM768" && KeyExchange.fromSClient(hybrid.serverTempKey) == .ecdhe)
        let classic = SClientTranscript(output: Self.sClient35Classic, status: 0)
        #expect(classic.serverTempKey == "ECDH, prime256v1, 256 bits" && KeyExchange.fromSClient(classic.serverTempKey) == .ecdhe)
        #expect(KeyExchange.fromSClient("DH, 1024 bits") == .dhe(bits: 1024))
        // No line at all is static RSA; a pure ML-KEM group is not an ECDHE one (no scenario expects it).
        #expect(KeyExchange.fromSClient(SClientTranscript(output: "New, TLSv1.2, Cipher is AES128-GCM-SHA256", status: 0).serverTempKey) == .rsa)
        #expect(KeyExchange.fromSClient("MLKEM768") == nil && KeyExchange.fromProbe("MLKEM768") == nil)
        #expect(KeyExchange.fromProbe("X25519MLKEM768") == .ecdhe && KeyExchange.fromProbe("SecP256r1MLKEM768") == .ecdhe)
    }

    @Test("live: probe and fixture agree on the group the linked OpenSSL negotiates by default in TLS 1.3")
    func live() async throws {
        try await ScenarioEndToEndTests.withFixture("tls-v1-3") { fixture in
            let result = try await ScenarioEndToEndTests.probe(fixture)
            // OpenSSL's default TLS 1.3 key shares: x25519 until 3.4, X25519MLKEM768 (preferred) with x25519 from 3.5.
            let expected = OpenSSL_version_num() >= 0x3050_0000 ? "X25519MLKEM768" : "x25519"
            #expect(result.group == expected, "linked \(LinkedOpenSSL.versionText), compiled with SSL_get0_group_name: \(shim_HAS_SSL_get0_group_name == 1)")
            #expect(KeyExchange.fromProbe(result.keyExchange) == .ecdhe, "\(result.keyExchange ?? "nil")")
            let served = try #require(ScenarioEndToEndTests.response(result.http?.body)?.tls)
            #expect(served.group == result.group && served.keyExchange == result.keyExchange, "server: \(served.group ?? "nil") / \(served.keyExchange ?? "nil")")
        }
        // TLS 1.2 ECDHE names its curve too; static RSA and explicit DH parameters have no group.
        try await ScenarioEndToEndTests.withFixture("ecc384") { fixture in
            let result = try await ScenarioEndToEndTests.probe(fixture) { $0.maxVersion = .tls1_2; $0.trustRoots = [fixture.caCertificate] }
            #expect(result.group == "x25519" && result.keyExchange == "X25519", "\(result.group ?? "nil") \(result.keyExchange ?? "nil")")
        }
        for name in ["static-rsa", "dh1024"] {
            try await ScenarioEndToEndTests.withFixture(name) { fixture in
                let result = try await ScenarioEndToEndTests.probe(fixture)
                #expect(result.failure == nil && result.group == nil, "\(name): \(result.group ?? "nil")")
            }
        }
    }
}
