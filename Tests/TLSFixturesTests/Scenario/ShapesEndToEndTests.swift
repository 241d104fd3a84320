import Foundation
import Testing
@testable import TLSFixtures

/// The certificate shapes of scenarios.md's second round, each judged by clients we did not write: openssl, curl,
/// Python's ssl and GnuTLS's gnutls-cli (a TLS stack that shares no code with OpenSSL).
@Suite("Second-round shapes: reversed chain, no subject, 10000 names, dh2048, a 63-character label")
struct ShapesEndToEndTests {
    static var store: CertificateStore { TestEnvironment.suiteStore("Shapes") }

    static func gnutls(port: Int, caFile: String, host: String = "localhost") async throws -> Subprocess.Result {
        try await External.run(["gnutls-cli", "--x509cafile=\(caFile)", "-p", "\(port)", host],
                               stdin: Data("GET / HTTP/1.0\r\n\r\n".utf8), timeout: 30)
    }

    static func curl(port: Int, caFile: String) async throws -> Subprocess.Result {
        try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", caFile, "https://localhost:\(port)/"])
    }

    static func python(port: Int, caFile: String) async throws -> Subprocess.Result {
        try await External.run(["python3", "-c", Python.connect, String(port), caFile])
    }

    @Test("reversed-chain: leaf, root, intermediate on the wire; OpenSSL, curl, Python and GnuTLS still build the path")
    func reversedChain() async throws {
        try await withFixture("reversed-chain", store: Self.store) { fixture in
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let transcript = try await SClient.connect(port: fixture.port)
            let subjects = try await transcript.certificatesPEM.asyncMap { pem in
                try await External.openssl(["x509", "-noout", "-subject"], stdin: Data(pem.utf8)).stdout
            }
            #expect(subjects.count == 3, "\(subjects)")
            #expect(subjects.count == 3 && subjects[0].contains("CN = reversed-chain.fixtures.test")
                    && subjects[1].contains(fixture.caCertificate.commonName ?? "?") && subjects[2].contains("CN = swift-tls-fixtures intermediate"),
                    "the order sent: \(subjects)")
            let judged = try await OpenSSLVerify.judge(chainPEM: transcript.certificatesPEM, roots: [fixture.caCertificate])
            #expect(judged.verdict == "ok", "\(judged.output)")
            async let curled = Self.curl(port: fixture.port, caFile: caFile)
            async let python = Self.python(port: fixture.port, caFile: caFile)
            async let gnutls = Self.gnutls(port: fixture.port, caFile: caFile)
            #expect(try await curled.stdout.contains("\"scenario\":\"reversed-chain\""))
            #expect(try await python.stdout.hasPrefix("OK TLSv1.3"))
            #expect(try await gnutls.combined.contains("The certificate is trusted"))
        }
    }

    @Test("no-subject: openssl prints an empty subject and a critical SAN; every client connects")
    func noSubject() async throws {
        try await withFixture("no-subject", store: Self.store) { fixture in
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let leaf = try #require(try await SClient.connect(port: fixture.port).certificatesPEM.first)
            let printed = try await External.openssl(["x509", "-noout", "-subject", "-ext", "subjectAltName"], stdin: Data(leaf.utf8)).stdout
            let lines = printed.components(separatedBy: .newlines)
            #expect(lines.first == "subject=", "\(printed)")
            #expect(printed.contains("X509v3 Subject Alternative Name: critical"), "\(printed)")
            async let curled = Self.curl(port: fixture.port, caFile: caFile)
            async let python = Self.python(port: fixture.port, caFile: caFile)
            async let gnutls = Self.gnutls(port: fixture.port, caFile: caFile)
            #expect(try await curled.stdout.contains("\"scenario\":\"no-subject\""))
            #expect(try await python.stdout.hasPrefix("OK TLSv1.3"))
            #expect(try await gnutls.combined.contains("The certificate is trusted"))
        }
    }

    @Test("10000-sans: 10000 DNS names; curl, Python and GnuTLS stop at their message-size limits")
    func tenThousandNames() async throws {
        try await withFixture("10000-sans", store: Self.store) { fixture in
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let names = try await External.openssl(["x509", "-noout", "-ext", "subjectAltName"], stdin: fixture.chain[0].pem).stdout
            #expect(names.components(separatedBy: "DNS:").count - 1 == 10_000)
            #expect(fixture.chain[0].der.count > 100 * 1024, "the certificate is only \(fixture.chain[0].der.count) bytes")
            async let curled = Self.curl(port: fixture.port, caFile: caFile)
            async let python = Self.python(port: fixture.port, caFile: caFile)
            async let gnutls = Self.gnutls(port: fixture.port, caFile: caFile)
            let curlResult = try await curled
            #expect(curlResult.status != 0 && curlResult.stderr.contains("excessive message size"), "\(curlResult.combined)")
            #expect(try await python.stdout.contains("EXCESSIVE_MESSAGE_SIZE"))
            #expect(try await gnutls.combined.contains("The handshake data size is too large"))
        }
    }

    @Test("dh2048: the control for dh1024 — stock s_client, curl and Python accept the 2048-bit group")
    func dh2048() async throws {
        try await withFixture("dh2048", store: Self.store) { fixture in
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            // -msg only prints the messages (the offer is the stock one), so the ServerKeyExchange's prime can be read.
            let stock = try await SClient.stock(port: fixture.port, extra: ["-CAfile", caFile, "-msg"])
            #expect(stock.handshakeCompleted && stock.serverTempKey == "DH, 2048 bits", "\(stock.output.suffix(1200))")
            #expect(stock.serverKeyExchangeDHPrimeBits == 2048, "\(stock.output.suffix(1200))")
            #expect(try await Self.curl(port: fixture.port, caFile: caFile).stdout.contains("\"scenario\":\"dh2048\""))
            let python = try await Self.python(port: fixture.port, caFile: caFile).stdout
            #expect(python.hasPrefix("OK TLSv1.2 DHE-RSA-AES"), "\(python)")
        }
    }

    @Test("long-subdomain: curl and Python connect by the 63-character name, openssl verifies it, hosts maps it")
    func longSubdomain() async throws {
        let long = "long-extended-subdomain-name-containing-many-letters-and-dashes.fixtures.test"
        #expect(long.split(separator: ".").first?.count == 63)
        try await withFixture("long-subdomain", store: Self.store) { fixture in
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let curled = try await External.run(["curl", "-sS", "--max-time", "20", "--cacert", caFile, "--resolve",
                                                 "\(long):\(fixture.port):127.0.0.1", "https://\(long):\(fixture.port)/"])
            #expect(E2EResponse.decode(curled.stdout)?.tls?.sni == long, "curl: \(curled.combined)")
            let judged = try await OpenSSLVerify.judge(chainPEM: fixture.chain.map { String(decoding: $0.pem, as: UTF8.self) },
                                                       roots: [fixture.caCertificate], host: long)
            #expect(judged.verdict == "ok", "\(judged.output)")
            let script = "import socket, ssl, sys\nctx = ssl.create_default_context(cafile=sys.argv[2])\n"
                + "with socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10) as raw:\n"
                + "    with ctx.wrap_socket(raw, server_hostname=sys.argv[3]) as tls:\n        print('OK', tls.version())\n"
            let python = try await External.run(["python3", "-c", script, String(fixture.port), caFile, long])
            #expect(python.stdout.hasPrefix("OK"), "\(python.combined)")
        }
        let hosts = try await TestEnvironment.tlsFixturesAwaiting(["hosts"]).stdout
        #expect(hosts.contains("127.0.0.1\t\(long)") && hosts.contains("127.0.0.1\tlong-subdomain.fixtures.test"))
    }
}

enum E2EResponse {
    static func decode(_ body: String) -> FixtureResponse? {
        try? JSONDecoder().decode(FixtureResponse.self, from: Data(body.utf8))
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
