import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures

/// On macOS, `probe` and `ats diagnose` without roots judge with the Security framework (SecTrust), as URLSession and
/// nscurl do. SecTrust cannot run here; its seam can: a fake platform evaluator, fed real chains from real
/// fixtures, gives SecTrust's answers (OSStatus codes from Apple's SecBase.h, as Security's SecPolicyChecks.list
/// reports them), and the probe, its report and the ATS diagnostics must read them as a Mac would.
@Suite("macOS: system trust through the platform evaluator (SecTrust's seam)")
struct PlatformTrustTests {
    /// SecTrust's answers, scripted: trusted when the chain ends in one of `anchors` (as the Keychain would say of an
    /// installed CA), else the scripted status; a host mismatch when `host` is not among the leaf's DNS names.
    final class FakeSecTrust: PlatformTrustEvaluator, @unchecked Sendable {
        let anchors: [Certificate]
        let untrustedStatus: Int32
        let anchorKind: TrustAnchorKind?
        private let calls = NIOLockedValueBox<[String?]>([])

        init(anchors: [Certificate], untrustedStatus: Int32 = -67843, anchorKind: TrustAnchorKind? = .userInstalled) {
            self.anchors = anchors; self.untrustedStatus = untrustedStatus; self.anchorKind = anchorKind
        }

        var name: String { "fake SecTrust" }
        var hostsAsked: [String?] { calls.withLockedValue { $0 } }

        func evaluate(chain: [Data], host: String?) -> PlatformTrustVerdict {
            calls.withLockedValue { $0.append(host) }
            let certificates = chain.compactMap { try? Certificate(der: $0) }
            guard let leaf = certificates.first else { return PlatformTrustVerdict(failure: .init(status: -26275, message: "decode"), builtChain: []) }
            // Build as SecTrust does: the chain sent, then the anchor that issued its top.
            let anchor = anchors.first { anchor in certificates.last.map { $0.facts.issuer == anchor.facts.subject } ?? false }
            let built = certificates.map(\.der) + (anchor.map { [$0.der] } ?? [])
            guard anchor != nil else {
                return PlatformTrustVerdict(failure: .init(status: untrustedStatus, message: "“\(leaf.facts.subject)” certificate is not trusted"), builtChain: built)
            }
            if leaf.facts.notAfter < Date() || leaf.facts.notBefore > Date() {
                return PlatformTrustVerdict(failure: .init(status: -67818, message: "“\(leaf.facts.subject)” certificate is expired"), builtChain: built, anchor: anchorKind)
            }
            if let host, !(leaf.facts.dnsNames ?? []).contains(host) {
                return PlatformTrustVerdict(failure: .init(status: -67602, message: "“\(leaf.facts.subject)” certificate name does not match input"), builtChain: built, anchor: anchorKind)
            }
            return PlatformTrustVerdict(failure: nil, builtChain: built, anchor: anchorKind)
        }
    }

    static func probe(_ fixture: FixtureServer, evaluator: FakeSecTrust, host: String = "localhost") async throws -> ProbeResult {
        var options = ProbeOptions()
        options.trustRoots = nil
        options.systemTrust = evaluator
        options.anchorKind = .system
        return try await TLSProbe(options: options).probe(ProbeTarget(host: host, port: fixture.port, connectAddress: "127.0.0.1"))
    }

    @Test("this platform's default: SecTrust where the Security framework exists, OpenSSL's store elsewhere")
    func platformDefault() {
        #if canImport(Security)
        #expect(PlatformTrust.default?.name == "macOS trust settings (SecTrust)")
        #else
        #expect(PlatformTrust.default == nil)
        #expect(ProbeOptions().systemTrust == nil)
        #endif
    }

    @Test("a chain the platform trusts verifies, with the platform's built chain and anchor; roots given bypass it")
    func trusted() async throws {
        try await ScenarioEndToEndTests.withFixture("ats-compliant") { fixture in
            let keychain = FakeSecTrust(anchors: [fixture.caCertificate])
            let result = try await Self.probe(fixture, evaluator: keychain)
            #expect(result.verification?.summary == "ok" && result.verification?.verifier == "fake SecTrust")
            #expect(result.trust?.chainError == nil && result.trust?.anchor == .userInstalled)
            #expect(result.trust?.verifiedChain.map(\.der) == fixture.chainDER + [fixture.caCertificate.der])
            // Asked twice: with the name sent as SNI (verification) and without (the ATS model's chain facts).
            #expect(keychain.hostsAsked == ["localhost", nil])
            #expect(ProbeReport.text(result).contains("ok — host localhost, fake SecTrust"), "\(ProbeReport.text(result))")

            // Explicit roots are OpenSSL's to judge, as before.
            var options = ProbeOptions()
            options.trustRoots = [fixture.caCertificate]
            options.systemTrust = keychain
            let explicit = try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port))
            #expect(explicit.verification?.summary == "ok" && explicit.verification?.verifier == nil && keychain.hostsAsked.count == 2)
        }
    }

    @Test("SecTrust's failures read as OpenSSL's codes (the ATS model's and the exit status's), in SecTrust's words",
          arguments: [
            // scenario, evaluator's anchors trust the CA?, expected X509 code
            ("wrong-host", true, Int32(62)),   // errSecHostNameMismatch → HOSTNAME_MISMATCH
            ("expired", true, Int32(10)),      // errSecCertificateExpired, notAfter past → CERT_HAS_EXPIRED
            ("not-yet-valid", true, Int32(9)), // errSecCertificateExpired, notBefore ahead → CERT_NOT_YET_VALID
            ("self-signed", false, Int32(18)), // errSecNotTrusted, a lone self-signed leaf → DEPTH_ZERO_SELF_SIGNED_CERT
            ("untrusted-root", false, Int32(19)), // errSecNotTrusted, the chain ends in its own root → SELF_SIGNED_CERT_IN_CHAIN
            ("ats-compliant", false, Int32(20)),  // errSecNotTrusted, CA not in the Keychain → UNABLE_TO_GET_ISSUER_CERT_LOCALLY
          ])
    func failures(name: String, trustsCA: Bool, code: Int32) async throws {
        try await ScenarioEndToEndTests.withFixture(name) { fixture in
            let keychain = FakeSecTrust(anchors: trustsCA ? [fixture.caCertificate] : [])
            let result = try await Self.probe(fixture, evaluator: keychain)
            #expect(result.failure == nil, "\(name): \(result.failure ?? "")")
            let error = try #require(result.verification?.error, "\(name) verified")
            #expect(error.code == code, "\(name): \(error)")
            #expect(error.text.contains("certificate"), "the platform's own words: \(error.text)")
            // The name is no part of the chain facts: a host mismatch leaves the chain itself trusted.
            #expect((result.trust?.chainError == nil) == (name == "wrong-host"), "\(name): \(String(describing: result.trust?.chainError))")
        }
    }

    @Test("ats diagnose without --trust-ca: a Keychain that trusts the CA passes the default configuration; one that does not fails it")
    func atsDiagnose() async throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "ats-compliant")
        try await withFixture(scenario, store: TestEnvironment.suiteStore("PlatformTrust")) { fixture in
            let target = ProbeTarget(host: scenario.qualifiedHost, port: fixture.port, connectAddress: "127.0.0.1")
            for (anchors, passes) in [([fixture.caCertificate], true), ([], false)] {
                var options = ProbeOptions()
                options.systemTrust = FakeSecTrust(anchors: anchors)
                options.anchorKind = .system
                let report = await ATSDiagnostics().run(url: fixture.qualifiedURL, handshaker: ATSLiveHandshaker(target: target, probeOptions: options))
                #expect(report.results.first?.passed == passes, "\(report.text(verbose: true))")
            }
        }
    }

    @Test("the mapping on its own: dates decide expired from not yet valid; an unknown status is 'unspecified'")
    func mapping() throws {
        let now = Date()
        let facts = try Certificate(pem: TestEnvironment.suiteStore("PlatformTrust").ca().certificate.pem).facts
        var future = facts
        future.notBefore = now.addingTimeInterval(86_400)
        let failure = PlatformTrustVerdict.Failure(status: -67818, message: "expired")
        #expect(PlatformTrust.verifyError(failure, chain: [future], now: now).code == 9)
        var past = facts
        past.notAfter = now.addingTimeInterval(-86_400)
        #expect(PlatformTrust.verifyError(failure, chain: [past], now: now).code == 10)
        let other = PlatformTrust.verifyError(.init(status: -12345, message: "something else"), chain: [facts], now: now)
        #expect(other.code == 1 && other.text == "something else")
    }
}
