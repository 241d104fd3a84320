import Foundation
import Testing
@testable import TLSFixtures
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificate Transparency from real handshakes: the probe counts the SCTs a server delivers (embedded in the
/// certificate, sent in the TLS extension) and `openssl s_client -ct`, a second client, sees as many; the ATS model
/// judges a publicly trusted chain by those facts, and `ats diagnose` names the failure of one without SCTs.
@Suite("Certificate Transparency: the probe's SCT facts, the model, ats diagnose")
struct ATSCertificateTransparencyTests {
    static let host = "ct.fixtures.test"

    /// A well-formed SCT v1 (RFC 6962 §3.2) from a made-up log: OpenSSL parses it; no log ever signed it.
    static func sct(log: UInt8, timestamp: UInt64) -> [UInt8] {
        let body: [UInt8] = [0] + [UInt8](repeating: log, count: 32)
            + (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64($0))) }
            + [0, 0]                                        // no extensions
            + [4, 3, 0, 8] + [UInt8](repeating: 0x30, count: 8)   // SHA-256 with ECDSA, an 8-byte "signature"
        return length16(body) + body
    }

    /// A SignedCertificateTimestampList (RFC 6962 §3.3): a 2-byte length, then each SCT behind its own.
    static func list(_ scts: [[UInt8]]) -> [UInt8] {
        let joined = scts.flatMap { $0 }
        return length16(joined) + joined
    }

    static func length16(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] }

    /// `openssl s_server -serverinfo`'s file: extension 18 (signed_certificate_timestamp) and its data.
    static func serverInfo(_ list: [UInt8]) -> Data {
        let body = [0, 18] + length16(list) + list
        return Data("-----BEGIN SERVERINFO FOR CT-----\n\(Data(body).base64EncodedString())\n-----END SERVERINFO FOR CT-----\n".utf8)
    }

    /// A self-signed RSA-2048 leaf for `host`, 90 days, EKU serverAuth, made by the openssl command (not our PKI); with
    /// `embedded`, its SCT list extension (1.3.6.1.4.1.11129.2.4.2, an OCTET STRING around the list) holds them.
    static func leaf(embedded: [[UInt8]]) async throws -> (cert: String, key: String) {
        let directory = TestEnvironment.temporaryDirectory("ct")
        let cert = directory.appendingPathComponent("leaf.pem").path
        let key = directory.appendingPathComponent("leaf.key").path
        var arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "90",
                         "-subj", "/CN=\(host)", "-addext", "subjectAltName=DNS:\(host)", "-addext", "extendedKeyUsage=serverAuth"]
        if !embedded.isEmpty {
            let value = list(embedded)
            let hex = ([0x04, UInt8(value.count)] + value).map { String(format: "%02x", $0) }.joined()
            arguments += ["-addext", "1.3.6.1.4.1.11129.2.4.2=DER:\(hex)"]
        }
        let made = try await TestEnvironment.opensslAwaiting(arguments)
        try #require(made.status == 0, "openssl req: \(made.combined.suffix(600))")
        return (cert, key)
    }

    /// Runs `body` with an `openssl s_server` (TLS 1.2, so serverinfo applies) on a free loopback port, then stops it.
    static func withSServer(cert: String, key: String, serverInfo: Data?,
                            _ body: (Int) async throws -> Void) async throws {
        let port = try Ports.unused()
        var arguments = ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key, "-tls1_2",
                         "-www", "-quiet"]
        if let serverInfo { arguments += ["-serverinfo", try TestEnvironment.file(serverInfo, name: "serverinfo.pem")] }
        let server = try Subprocess.launch(arguments)
        defer {
            // SIGKILL: s_server serves until stopped, and a test process may hand its children an ignored SIGTERM.
            if server.process.isRunning { kill(server.process.processIdentifier, SIGKILL) }
            // async-lint: allow process-wait — a defer cannot await; the child has had SIGKILL, so this is its reaping
            _ = server.wait(timeout: 10)
        }
        var waited = 0
        while !Ports.accepts(port) && waited < 200 && server.process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        try #require(Ports.accepts(port), "s_server did not listen on \(port)")
        try await body(port)
    }

    /// What `openssl s_client -ct` says it received; an empty log list keeps it from needing the system's.
    static func sclientSCTs(port: Int) async throws -> String {
        let logs = try TestEnvironment.file(Data("enabled_logs=\n".utf8), name: "ct-logs.cnf")
        return try await External.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", host, "-ct",
                                           "-ctlogfile", logs]).combined
    }

    static func probeOptions(trusting cert: String) throws -> ProbeOptions {
        var options = ProbeOptions()
        options.trustRoots = try Certificate.read(Data(contentsOf: URL(fileURLWithPath: cert)))
        options.anchorKind = .system
        return options
    }

    @Test("SCTs in the certificate and in the TLS extension: counted by source, s_client agrees, the model admits the leaf")
    func delivered() async throws {
        let (cert, key) = try await Self.leaf(embedded: [Self.sct(log: 0x11, timestamp: 1_750_000_000_000),
                                                   Self.sct(log: 0x22, timestamp: 1_750_000_000_001)])
        let info = Self.serverInfo(Self.list([Self.sct(log: 0x33, timestamp: 1_750_000_000_002)]))
        try await Self.withSServer(cert: cert, key: key, serverInfo: info) { port in
            let options = try Self.probeOptions(trusting: cert)
            let target = ProbeTarget(host: Self.host, port: port, connectAddress: "127.0.0.1")
            let result = try await TLSProbe(options: options).probe(target)
            #expect(result.succeeded, "\(result.failure ?? "")")
            #expect(result.scts == ServerFacts.SCTCounts(embedded: 2, tlsExtension: 1), "\(String(describing: result.scts))")
            #expect(result.presentedChain.first?.hasEmbeddedSCTs == true)
            let sclient = try await Self.sclientSCTs(port: port)
            #expect(sclient.contains("SCTs present (3)"), "\(sclient.suffix(1500))")

            let facts = try await ServerFactsCollector(probe: TLSProbe(options: options)).collect(target)
            let verdict = ATSEvaluator().evaluate(url: URL(string: "https://\(Self.host):\(port)/")!, facts: facts)
            #expect(verdict.allowed, "\(verdict)")
            #expect(verdict.rules.contains { $0.id == .certificateTransparencyRequired })
            #expect(verdict.notes.contains { $0.contains("2 embedded, 1 in the TLS extension") }, "\(verdict)")
        }
    }

    @Test("no SCTs anywhere: none counted, s_client sees none, a system-anchored chain is refused for CT")
    func absent() async throws {
        let (cert, key) = try await Self.leaf(embedded: [])
        try await Self.withSServer(cert: cert, key: key, serverInfo: nil) { port in
            let options = try Self.probeOptions(trusting: cert)
            let target = ProbeTarget(host: Self.host, port: port, connectAddress: "127.0.0.1")
            let facts = try await ServerFactsCollector(probe: TLSProbe(options: options)).collect(target)
            #expect(facts.scts == ServerFacts.SCTCounts())
            #expect(facts.presentedChain.first?.hasEmbeddedSCTs == false)
            let sclient = try await Self.sclientSCTs(port: port)
            #expect(sclient.contains("SCTs present (0)"), "\(sclient.suffix(1500))")

            let url = URL(string: "https://\(Self.host):\(port)/")!
            let verdict = ATSEvaluator().evaluate(url: url, facts: facts)
            #expect(verdict.violations.first?.rule == .certificateTransparency, "\(verdict)")
            #expect(verdict.likelyError?.urlErrorCode == -1200 && verdict.likelyError?.streamErrorCode == -9802)
            // The same chain from a root the user installed: no CT requirement.
            var user = facts
            user.trust?.anchor = .userInstalled
            #expect(ATSEvaluator().evaluate(url: url, facts: user).allowed)
        }
    }

    @Test("ats diagnose on a system-anchored chain without SCTs names the CT failure and its likely error code")
    func diagnose() async throws {
        try await withFixture("ats-compliant", store: TestEnvironment.sharedStore) { fixture in
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            let host = "ats-compliant.fixtures.test"
            let arguments = ["ats", "diagnose", "-v", "--trust-ca", ca, "--resolve", "\(host):\(fixture.port):127.0.0.1",
                             "https://\(host):\(fixture.port)/"]
            let system = try await TestEnvironment.tlsFixturesAwaiting(arguments + ["--anchor", "system"])
            #expect(system.status == 2, "\(system.combined.suffix(1500))")
            #expect(!system.stdout.contains("Result : PASS"), "\(system.stdout.prefix(3000))")
            let failures = system.stdout.components(separatedBy: "Result : FAIL").count - 1
            #expect(failures == 16)
            let ct = system.stdout.components(separatedBy: "Detail : certificate transparency: the chain ends in a preinstalled (system) root").count - 1
            #expect(ct == 16, "\(system.stdout.prefix(3000))")
            #expect(system.stdout.contains("Code=-1200") && system.stdout.contains("_kCFStreamErrorCodeKey=-9802"),
                    "\(system.stdout.prefix(3000))")
            // Control: the same chain from a user-installed root (the built-in CA's usual place) passes.
            let user = try await TestEnvironment.tlsFixturesAwaiting(arguments + ["--anchor", "user"])
            #expect(user.status == 0, "\(user.combined.suffix(1500))")
        }
    }
}
