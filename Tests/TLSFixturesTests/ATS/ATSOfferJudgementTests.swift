import Foundation
import Testing
@testable import TLSFixtures

/// A client's recorded offer measured against ATS's rules with the model's own lists: TLS 1.2 minimum, ATS's suites,
/// forward secrecy (ats-reference.md: "TLS 1.2 minimum; forward-secret ECDHE suites only").
@Suite("ATS offer judgement")
struct ATSOfferJudgementTests {
    static func hello(legacy: String = "TLSv1.2", versions: [String] = ["TLSv1.3", "TLSv1.2"], suites: [String]) -> ConnectionRecord.ClientHello {
        ConnectionRecord.ClientHello(serverName: "x.fixtures.test", legacyVersion: legacy, supportedVersions: versions, cipherSuites: suites,
                                     groups: ["x25519"], signatureAlgorithms: [], alpn: [], extensions: [])
    }

    @Test("an offer an ATS client would make meets ATS; GREASE and the signalling values are not suites")
    func atsLike() {
        let judgement = ATSOfferJudgement(Self.hello(suites: ["GREASE(0x2A2A)", "TLS_AES_128_GCM_SHA256",
                                                             "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                                                             "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                                                             "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"]))
        #expect(judgement.meetsATS, "\(judgement)")
        #expect(judgement.findings.isEmpty)
        #expect(judgement.atsSuites.count == 3)
    }

    @Test("RSA key transport lacks forward secrecy; DHE and CBC-SHA256 are on no ATS list; TLS 1.0 and 1.1 are below it")
    func shortfalls() {
        let judgement = ATSOfferJudgement(Self.hello(versions: ["TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0"],
                                                     suites: ["TLS_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                              "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
                                                              "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]))
        #expect(!judgement.meetsATS)
        #expect(judgement.versionsBelowMinimum == [.tls1_0, .tls1_1])
        #expect(judgement.nonForwardSecretSuites == ["TLS_RSA_WITH_AES_128_GCM_SHA256"])
        #expect(judgement.otherSuites == ["TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"])
        #expect(judgement.findings.count == 3, "\(judgement.findings)")
        // The 2015 list has the CBC-SHA256 suites (and no ChaCha20).
        #expect(!ATSOfferJudgement(Self.hello(suites: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]), cipherSuites: .documented2015)
            .otherSuites.contains("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"))
    }

    @Test("a client whose best is TLS 1.0 reaches no ATS server; one offering TLS 1.3 suites without TLS 1.3 has none usable")
    func versions() {
        let old = ATSOfferJudgement(Self.hello(legacy: "TLSv1.0", versions: [], suites: ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"]))
        #expect(!old.meetsATS)
        #expect(old.highestVersion == .tls1_0)
        #expect(old.findings.first?.contains("offers at most TLSv1.0") == true, "\(old.findings)")
        let mismatched = ATSOfferJudgement(Self.hello(versions: ["TLSv1.2"], suites: ["TLS_AES_128_GCM_SHA256"]))
        #expect(!mismatched.meetsATS)
        #expect(mismatched.findings.contains { $0.contains("no ATS suite at a version it offers") })
    }

    @Test("real offers, recorded: OpenSSL told to offer ATS's suites at TLS 1.2+ meets ATS; one offering TLS 1.0 does not",
          .requires(Tools.openssl))
    func recordedOffers() async throws {
        try await withFixture("tls-v1-0", store: TestEnvironment.sharedStore) { fixture in
            func offer(_ arguments: [String]) async throws -> ConnectionRecord.ClientHello {
                let cursor = fixture.latestConnectionID
                _ = try await External.openssl(["s_client", "-connect", "127.0.0.1:\(fixture.port)", "-servername", "localhost"] + arguments,
                                               stdin: Data())
                let records = await fixture.connections(after: cursor, wait: .seconds(10))
                return try #require(records.first?.clientHello)
            }
            let modern = ATSOfferJudgement(try await offer(["-min_protocol", "TLSv1.2", "-cipher", "ECDHE+AESGCM:ECDHE+CHACHA20"]))
            #expect(modern.meetsATS, "\(modern)")
            let legacy = ATSOfferJudgement(try await offer(["-tls1", "-cipher", "ALL:@SECLEVEL=0"]))
            #expect(!legacy.meetsATS)
            #expect(legacy.highestVersion == .tls1_0, "\(legacy)")
            #expect(!legacy.nonForwardSecretSuites.isEmpty, "\(legacy)")
        }
    }
}
