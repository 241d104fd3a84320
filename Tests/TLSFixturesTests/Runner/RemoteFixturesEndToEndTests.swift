import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures
import TLSFixturesClient

/// A `tls-fixtures serve` subprocess used through its control API and proxy, as an iOS test run uses it: curl and
/// openssl for the raw API and the tunnel, `TLSFixturesClient` for the library, all judged from outside the process.
struct ControlAPIRunner {
    let serve: ServeEndToEndTests.ServeProcess
    let base: Int
    let store: CertificateStore
    var url: String { "http://localhost:\(base)" }
    var runnerURL: URL { URL(string: url)! }

    /// `serve NAMES… EXTRA…` on a free port range, once it has reported (everything named listens). Awaited: the
    /// report can take minutes on a cold store, and no pool thread waits for it.
    static func start(_ names: [String] = ["ats-compliant", "expired", "http"], extra: [String] = [],
                      store: CertificateStore = TestEnvironment.sharedStore) async throws -> ControlAPIRunner {
        let base = try ServeEndToEndTests.freePortBase()
        let serve = try ServeEndToEndTests.ServeProcess(names + ["--port-base", "\(base)", "--dir", store.directory.path, "--json"] + extra)
        // A hang detector: a cold store's RSA keys can queue behind every other test's on two cores.
        guard try await serve.document(timeout: 600) != nil else {
            await serve.stop()
            throw ServeEndToEndTests.CLIFailure("serve did not report: \(serve.errors)")
        }
        return ControlAPIRunner(serve: serve, base: base, store: store)
    }

    /// Stops serve, for a `defer` (bounded: `StoppableChild.stopBlocking`).
    func stop() { serve.kill() }

    struct Answer {
        var status: Int
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T { try FixtureAPI.decoder().decode(T.self, from: body) }
        var error: APIError? { try? JSONDecoder().decode(APIError.self, from: body) }
    }

    /// One request with curl: the status and the body.
    func api(_ method: String, _ path: String, json: String? = nil,
             headers: [String] = ["Content-Type: application/json"]) async throws -> Answer {
        var arguments = ["curl", "-sS", "-X", method, "-o", "-", "-w", "\n%{http_code}", url + path]
        if let json { arguments += ["--data-binary", json] + headers.flatMap { ["-H", $0] } }
        let result = try await Subprocess.runAwaiting(arguments, timeout: 120)
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? -1
        return Answer(status: status, body: Data(lines.joined(separator: "\n").utf8))
    }

    /// `POST /api/fixtures`, which must answer 201.
    func start(_ json: String) async throws -> FixtureDescription {
        let answer = try await api("POST", "/api/fixtures", json: json)
        guard answer.status == 201 else { throw ServeEndToEndTests.CLIFailure("start answered \(answer.status): \(answer.text)") }
        return try answer.decode()
    }
}

/// The leaf a TLS client is sent on `port` (openssl s_client, optionally through the runner's proxy by name), PEM.
func presentedLeafPEM(port: Int, host: String = "localhost", proxy: Int? = nil) async throws -> String {
    let proxyArguments = proxy.map { ["-proxy", "localhost:\($0)"] } ?? []
    let result = try await TestEnvironment.opensslAwaiting(["s_client", "-connect", "\(host):\(port)", "-servername", host, "-showcerts"] + proxyArguments,
                                             stdin: Data())
    guard let begin = result.stdout.range(of: "-----BEGIN CERTIFICATE-----"),
          let end = result.stdout.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<result.stdout.endIndex) else {
        throw ServeEndToEndTests.CLIFailure("s_client saw no certificate: \(result.combined.prefix(400))")
    }
    return String(result.stdout[begin.lowerBound..<end.upperBound]) + "\n"
}

/// The SPKI pin as every pinning guide computes it, with openssl alone.
func opensslPin(certificatePEM: String) async throws -> String {
    let file = try TestEnvironment.file(Data(certificatePEM.utf8))
    let pipeline = try await Subprocess.runAwaiting(["sh", "-c",
        "openssl x509 -in '\(file)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
    return pipeline.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// The first certificate of a PEM text.
func firstCertificatePEM(_ pem: String) -> String? {
    guard let end = pem.range(of: "-----END CERTIFICATE-----") else { return nil }
    return String(pem[pem.startIndex..<end.upperBound]) + "\n"
}

@Suite("control API of serve, end to end", .serialized)
struct ControlAPIEndToEndTests {
    @Test("start by name: the description matches what a TLS client is sent; list, get, delete twice", .requires(Tools.curl, Tools.openssl))
    func startByName() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let answer = try await runner.api("POST", "/api/fixtures", json: #"{"scenario": "expired", "session": "by-name", "ttl": 120}"#)
        #expect(answer.status == 201, "\(answer.text)")
        // The one private key the API hands out is a client identity; an expired-certificate fixture has none.
        #expect(!answer.text.contains("PRIVATE KEY"))
        let fixture: FixtureDescription = try answer.decode()
        #expect(fixture.scenario == "expired" && fixture.session == "by-name" && fixture.ttl == 120)
        #expect(fixture.url.absoluteString == "https://localhost:\(fixture.port)/")
        #expect(fixture.qualifiedURL.absoluteString == "https://expired.fixtures.test:\(fixture.port)/")
        #expect(fixture.proxy == ProxyEndpoint(port: runner.base, domains: ["fixtures.test"]))
        #expect(fixture.clientIdentity == nil && fixture.interceptionRootPEM == nil)

        // The CA is the store's; the chain and pins are what openssl is sent on that port.
        #expect(fixture.caPEM == String(decoding: try runner.store.ca().certificate.pem, as: UTF8.self))
        let presented = try await presentedLeafPEM(port: fixture.port)
        #expect(firstCertificatePEM(fixture.chainPEM) == presented, "chainPEM does not start with the leaf the server sends")
        #expect(fixture.pins.leaf == (try await opensslPin(certificatePEM: presented)))
        #expect(fixture.pins.ca == (try await opensslPin(certificatePEM: fixture.caPEM)))
        #expect(Set([fixture.pins.leaf, fixture.pins.ca, fixture.pins.backup]).count == 3)
        // The expectation is OpenSSL's own verdict for that chain.
        let caFile = try TestEnvironment.file(Data(fixture.caPEM.utf8))
        let verify = try await TestEnvironment.opensslAwaiting(["s_client", "-connect", "localhost:\(fixture.port)", "-CAfile", caFile], stdin: Data())
        #expect(verify.stdout.contains("Verify return code: 10 (\(fixture.expect.verify ?? "?"))"), "\(verify.stdout.suffix(300))")
        #expect(fixture.expect.ats == .block)

        // list, list by session, get
        let list: FixtureList = try await runner.api("GET", "/api/fixtures").decode()
        #expect(list.fixtures.map(\.id) == [fixture.id])
        #expect(try await runner.api("GET", "/api/fixtures?session=other").decode(FixtureList.self).fixtures.isEmpty)
        #expect(try await runner.api("GET", "/api/fixtures/\(fixture.id)").decode(FixtureDescription.self).port == fixture.port)

        // DELETE is idempotent, and the port stops listening.
        let held = Ports.held(fixture.port)
        #expect(try await runner.api("DELETE", "/api/fixtures/\(fixture.id)").status == 204)
        #expect(try await runner.api("DELETE", "/api/fixtures/\(fixture.id)").status == 204)
        #expect(try await runner.api("GET", "/api/fixtures/\(fixture.id)").status == 404)
        #expect(held.released)
    }

    @Test("the client identity and the interception root come with the scenarios that have them", .requires(Tools.curl, Tools.openssl))
    func scenarioMaterial() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let mtls = try await runner.start(#"{"scenario": "client-cert-required"}"#)
        let identity = try #require(mtls.clientIdentity)
        let cert = try TestEnvironment.file(Data(identity.certificatePEM.utf8), name: "c.pem")
        let key = try TestEnvironment.file(Data(identity.privateKeyPEM.utf8), name: "k.pem")
        let ca = try TestEnvironment.file(Data(mtls.caPEM.utf8), name: "ca.pem")
        let with = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ca, "--cert", cert, "--key", key, mtls.url.absoluteString])
        #expect(with.status == 0 && with.stdout.contains("\"scenario\":\"client-cert-required\""), "\(with.combined)")
        let without = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ca, mtls.url.absoluteString])
        #expect(without.status != 0, "the server answered a client without a certificate")
        let p12 = try TestEnvironment.file(identity.pkcs12, name: "id.p12")
        let opened = try await TestEnvironment.opensslAwaiting(["pkcs12", "-in", p12, "-passin", "pass:\(identity.pkcs12Password)", "-nodes"])
        #expect(opened.status == 0 && opened.stdout.contains("PRIVATE KEY"), "\(opened.stderr)")

        let mitm = try await runner.start(#"{"scenario": "pin-mitm"}"#)
        let root = try #require(mitm.interceptionRootPEM)
        #expect(root != mitm.caPEM)
        // The interception root is the chain's anchor: it verifies what the server sends.
        let rootFile = try TestEnvironment.file(Data(root.utf8), name: "root.pem")
        let verify = try await TestEnvironment.opensslAwaiting(["s_client", "-connect", "localhost:\(mitm.port)", "-CAfile", rootFile], stdin: Data())
        #expect(verify.stdout.contains("Verify return code: 0 (ok)"), "\(verify.stdout.suffix(300))")
    }

    @Test("an inline scenario file is served as written", .requires(Tools.curl, Tools.openssl))
    func inlineScenario() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let fixture = try await runner.start("""
            {"scenario": {"name": "legacy-api", "group": "custom", "summary": "TLS 1.1 only", "certificate": {},
              "tls": {"minVersion": "TLSv1.1", "maxVersion": "TLSv1.1", "ciphers": "ECDHE-RSA-AES128-SHA", "securityLevel": 0},
              "expect": {"ats": "block"}}}
            """)
        #expect(fixture.scenario == "legacy-api")
        #expect(fixture.qualifiedURL.absoluteString == "https://legacy-api.fixtures.test:\(fixture.port)/")
        let tls11 = try await TestEnvironment.opensslAwaiting(
            ["s_client", "-connect", "localhost:\(fixture.port)", "-tls1_1",
            "-cipher", "ECDHE-RSA-AES128-SHA@SECLEVEL=0"], stdin: Data())
        #expect(tls11.stdout.contains("Protocol  : TLSv1.1") && tls11.stdout.contains("ECDHE-RSA-AES128-SHA"), "\(tls11.combined.suffix(400))")
        let tls12 = try await TestEnvironment.opensslAwaiting(["s_client", "-connect", "localhost:\(fixture.port)", "-tls1_2"], stdin: Data())
        #expect(tls12.stdout.contains("Cipher is (NONE)"), "an inline TLS 1.1 scenario negotiated TLS 1.2: \(tls12.stdout.suffix(400))")

        // The scenario files' rules apply: the error names the field.
        let bad = try await runner.api("POST", "/api/fixtures", json: #"{"scenario": {"name": "x", "group": "custom", "summary": "s", "certificate": {}, "tls": {"minVersion": "TLSv9"}}}"#)
        #expect(bad.status == 400)
        #expect(bad.error?.field?.hasPrefix("scenario") == true, "\(bad.text)")
        // The files' strict reading too (issue 27: this started "a"): a key twice is refused, not one of them kept.
        let twice = try await runner.api(
            "POST", "/api/fixtures",
            json: #"{"scenario": {"name": "a", "name": "b", "group": "custom", "summary": "s", "tls": {}}}"#)
        #expect(twice.status == 400 && twice.error?.field == "scenario.name", "\(twice.text)")
    }

    // Bad requests (400 naming the field, 404, 405, 415, 403 for a web page) and lease expiry are the front door's and
    // the fleet's logic: FrontDoorTests and FleetTests hold them in memory, the leases on a manual clock.

    @Test("the runner's port has the fixtures' header timeout, but a CONNECT tunnel outlives it", .requires(Tools.python))
    func headerTimeoutAndTunnels() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant"], extra: ["--header-timeout", "1"])
        defer { runner.stop() }
        let fixture = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        let ca = try TestEnvironment.file(Data(fixture.caPEM.utf8), name: "ca.pem")
        // Python's sockets: one client trickles an API request, one holds a tunnel idle past the timeout, then uses it.
        let script = """
        import socket, ssl, sys, time
        base, port, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        slow = socket.create_connection(("127.0.0.1", base))
        slow.sendall(b"GET /api/fixtures HTTP/1.1\\r\\nHost: localhost\\r\\n")
        tunnel = socket.create_connection(("127.0.0.1", base))
        tunnel.sendall(b"CONNECT ats-compliant.fixtures.test:%d HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" % port)
        print("connect:", tunnel.recv(4096).split(b"\\r\\n")[0].decode())
        time.sleep(2.5)
        slow.settimeout(5)
        try:
            print("trickler:", "closed" if slow.recv(4096) == b"" else "answered")
        except ConnectionResetError:
            print("trickler: closed")
        context = ssl.create_default_context(cafile=ca)
        tls = context.wrap_socket(tunnel, server_hostname="ats-compliant.fixtures.test")
        tls.sendall(b"GET / HTTP/1.1\\r\\nHost: ats-compliant.fixtures.test\\r\\nConnection: close\\r\\n\\r\\n")
        print("through the tunnel:", tls.recv(4096).split(b"\\r\\n")[0].decode())
        """
        let result = try await Subprocess.runAwaiting([try #require(Tools.python.path), "-c", script, "\(runner.base)", "\(fixture.port)", ca], timeout: 60)
        #expect(result.stdout.contains("connect: HTTP/1.1 200"), "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("trickler: closed"), "a request trickled past the header timeout was not cut off: \(result.stdout)")
        #expect(result.stdout.contains("through the tunnel: HTTP/1.1 200"),
                "a tunnel idle past the header timeout was closed: \(result.stdout)\(result.stderr)")
    }

    @Test("sessions and the cap: 256 live API fixtures, the next is 429, a session delete stops only its own",
          .requires(Tools.curl), .requiresDescriptors(2_048))
    func sessionsAndCap() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant"])
        defer { runner.stop() }
        let other = try await runner.start(#"{"scenario": "ats-compliant", "session": "other-run"}"#)
        let run = RemoteFixtures(runner: runner.runnerURL, session: "ci-run-1", ttl: 120)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for _ in stride(from: worker, to: FixtureAPI.maximumLiveFixtures - 1, by: 8) { _ = try await run.start("ats-compliant") }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await run.fixtures().count == FixtureAPI.maximumLiveFixtures - 1)
        let full = try await runner.api("POST", "/api/fixtures", json: #"{"scenario": "ats-compliant"}"#)
        #expect(full.status == 429, "\(full.text)")
        #expect(full.error?.error.contains("\(FixtureAPI.maximumLiveFixtures)") == true)
        await #expect(throws: RemoteFixtureError.self) { _ = try await run.start("ats-compliant") }

        let stopped: SessionStopped = try await runner.api("DELETE", "/api/sessions/ci-run-1").decode()
        #expect(stopped.stopped == FixtureAPI.maximumLiveFixtures - 1)
        #expect(try await runner.api("DELETE", "/api/sessions/ci-run-1").decode(SessionStopped.self).stopped == 0)
        let left: FixtureList = try await runner.api("GET", "/api/fixtures").decode()
        #expect(left.fixtures.map(\.id) == [other.id])
        #expect(Ports.accepts(other.port))
        #expect(try await runner.api("POST", "/api/fixtures", json: #"{"scenario": "ats-compliant"}"#).status == 201)
    }
}

@Suite("TLSFixturesClient against serve, end to end", .serialized)
struct RemoteFixturesClientTests {
    @Test("start, the fields a test reads, renew, stop, and the scopes that stop", .requires(Tools.openssl))
    func clientLibrary() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let fixtures = RemoteFixtures(runner: runner.runnerURL, session: "client-test")
        let fixture = try await fixtures.start("expired")
        #expect(fixture.scenario.name == "expired" && fixture.scenario.expect.ats == .block && !fixture.scenario.isCleartext)
        #expect(fixture.url == URL(string: "https://localhost:\(fixture.port)/"))
        #expect(fixture.qualifiedURL == URL(string: "https://expired.fixtures.test:\(fixture.port)/"))
        #expect(fixture.caCertificateDER == (try runner.store.ca().certificate.der))
        let presented = try Certificate(pem: Data(try await presentedLeafPEM(port: fixture.port).utf8))
        #expect(fixture.chainDER.first == presented.der)
        #expect(fixture.pins.leaf == presented.spkiSHA256)
        #expect(fixture.proxy == FixtureProxy(host: "localhost", port: runner.base, domains: ["fixtures.test"]))
        let before = fixture.expiresAt
        try await fixture.renew(ttl: 600)
        #expect(fixture.expiresAt > before)
        #expect(try await fixtures.fixtures().map(\.id) == [fixture.id])
        let held = Ports.held(fixture.port)
        await fixture.stop()
        await fixture.stop()
        #expect(held.released)
        #expect(try await fixtures.fixtures().isEmpty)

        // The scope stops its fixture whether the body returns or throws.
        let scoped = try await withRemoteFixture("ats-compliant", runner: fixtures) { fixture in
            #expect(Ports.accepts(fixture.port))
            return Ports.held(fixture.port)
        }
        #expect(scoped.released)
        struct Boom: Error {}
        let thrownPort = PortBox()
        await #expect(throws: Boom.self) {
            try await withRemoteFixture(scenario: ["name": "inline", "group": "custom", "summary": "s", "certificate": [:],
                                                  "tls": [:], "expect": ["ats": "allow"]],
                                        runner: fixtures) { fixture -> Int in
                // A value nobody uses, as in any #expect(throws:) body: @discardableResult keeps this warning-free.
                thrownPort.value = fixture.port
                if fixture.port > 0 { throw Boom() }
                return fixture.port
            }
        }
        #expect(thrownPort.value > 0 && thrownPort.released)
        #expect(try await fixtures.stopSession() == 0)
    }

    @Test("no runner: one error naming the URL and `tls-fixtures serve`; the runner URL from TLS_FIXTURES_URL")
    func noRunner() async throws {
        let port = try Ports.unused()
        var nowhere = RemoteFixtures(runner: URL(string: "http://127.0.0.1:\(port)")!)
        nowhere.startupGrace = 0
        do {
            _ = try await nowhere.start("expired")
            Issue.record("a start succeeded with nothing listening")
        } catch let error as RemoteFixtureError {
            #expect("\(error)".contains("http://127.0.0.1:\(port)") && "\(error)".contains("tls-fixtures serve"), "\(error)")
            #expect(!"\(error)".contains("\n"))
        }
        #expect(try RemoteFixtures.environmentRunnerURL([:]) == URL(string: "http://localhost:9800"))
        let set = ["TLS_FIXTURES_URL": "http://10.0.0.2:9900"]
        #expect(try RemoteFixtures.environmentRunnerURL(set) == URL(string: "http://10.0.0.2:9900"))
        // A value that is not a URL is named, never replaced by the default (RunnerURLTests has each kind).
        #expect(throws: RemoteFixtureError.invalidRunnerURL(source: "", value: "", problem: "")) {
            try RemoteFixtures.environmentRunnerURL(["TLS_FIXTURES_URL": "not a url"])
        }
    }

    @Test("URLSessionConfiguration routes HTTPS through the runner's proxy with the keys iOS reads")
    func sessionConfiguration() {
        let proxy = FixtureProxy(host: "localhost", port: 9800)
        let configuration = URLSessionConfiguration.fixtures(through: proxy)
        let dictionary = configuration.connectionProxyDictionary ?? [:]
        #expect(dictionary["HTTPSEnable"] as? Int == 1)
        #expect(dictionary["HTTPSProxy"] as? String == "localhost")
        #expect(dictionary["HTTPSPort"] as? Int == 9800)
        #expect(URLSessionConfiguration.ephemeral.connectionProxyDictionary?["HTTPSProxy"] == nil, "the base was changed")
        #expect(proxy.environment["https_proxy"] == "http://localhost:9800")
        #expect(proxy.environment["no_proxy"]?.contains("localhost") == true)
    }
}

/// The proxy, as curl, openssl and URLSession use it: by qualified name, with no /etc/hosts entry. Runs in a private
/// mount namespace whose /etc/hosts names only localhost (so a developer's own hosts lines cannot help), and for
/// URLSession, whose libcurl trusts only the system bundle, with that bundle replaced by the built-in CA.
@Suite("the runner's CONNECT proxy, end to end", .serialized)
struct ProxyEndToEndTests {
    static let namespace: String? = {
        #if os(Linux)
        guard (try? Subprocess.run(["sh", "-c", "command -v unshare"]))?.status == 0 else { return "needs unshare (util-linux)" }
        let prefix = getuid() == 0 ? ["unshare", "--mount"] : ["unshare", "--mount", "--map-root-user"]
        let probe = try? Subprocess.run(prefix + ["true"])
        return probe?.status == 0 ? nil : "cannot make a private mount namespace: \(probe?.stderr ?? "")"
        #else
        return "needs Linux (a private mount namespace for /etc/hosts)"
        #endif
    }()

    /// `arguments` in a private mount namespace where /etc/hosts names only localhost (and the CA bundle is `caFile`).
    static func isolated(_ arguments: [String], caFile: String? = nil,
                         environment: [String: String]? = nil) async throws -> Subprocess.Result {
        let hosts = try TestEnvironment.file(Data("127.0.0.1\tlocalhost\n::1\tlocalhost\n".utf8), name: "hosts")
        let prefix = getuid() == 0 ? ["unshare", "--mount"] : ["unshare", "--mount", "--map-root-user"]
        let bundle = caFile.map { "mount --bind '\($0)' /etc/ssl/certs/ca-certificates.crt && " } ?? ""
        return try await Subprocess.runAwaiting(
            prefix + ["sh", "-c", "mount --bind '\(hosts)' /etc/hosts && \(bundle)exec \"$@\"", "sh"] + arguments,
            environment: environment, timeout: 120)
    }

    @Test("curl and openssl reach fixtures by name through the proxy; anything else is 403",
          .requires(Tools.curl, Tools.openssl), .enabled(if: namespace == nil, Comment(rawValue: namespace ?? "")))
    func curlThroughProxy() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let compliant = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        let expired = try await runner.start(#"{"scenario": "expired"}"#)
        let ca = try TestEnvironment.file(Data(compliant.caPEM.utf8), name: "ca.pem")
        let proxy = ["--proxy", runner.url]
        let name = compliant.qualifiedURL.absoluteString

        // Without the proxy the name does not resolve: nothing else helps.
        #expect(try await Self.isolated(["curl", "-sS", "--cacert", ca, name]).status == 6)
        // Through it, with curl's hostname verification (on by default) against the built-in CA.
        let loaded = try await Self.isolated(
            ["curl", "-sS", "--cacert", ca, "-w", "\n%{ssl_verify_result}"] + proxy + [name])
        #expect(loaded.status == 0 && loaded.stdout.contains("\"scenario\":\"ats-compliant\""), "\(loaded.combined)")
        #expect(loaded.stdout.hasSuffix("\n0"))
        // The control: the same path refuses an expired chain, and a name the leaf does not carry (wrong-host's).
        #expect(try await Self.isolated(["curl", "-sS", "--cacert", ca] + proxy + [expired.qualifiedURL.absoluteString]).status == 60)
        let wrongHost = try await runner.start(#"{"scenario": "wrong-host"}"#)
        let foreign = wrongHost.qualifiedURL.absoluteString
        let wrongName = try await Self.isolated(["curl", "-sS", "--cacert", ca] + proxy + [foreign])
        #expect(wrongName.status == 60, "\(wrongName.combined)")
        // The chain a client sees through the tunnel is the fixture's own.
        let tunnelled = try await presentedLeafPEM(port: compliant.port, host: "ats-compliant.fixtures.test", proxy: runner.base)
        #expect(firstCertificatePEM(compliant.chainPEM) == tunnelled)

        // Cleartext through the proxy, by absolute-form GET.
        let http = try await runner.start(#"{"scenario": "http"}"#)
        let plain = try await Self.isolated(["curl", "-sS"] + proxy + [http.qualifiedURL.absoluteString])
        #expect(http.qualifiedURL.scheme == "http" && plain.stdout.contains("\"scenario\":\"http\""), "\(plain.combined)")

        // Not an open proxy: one refusal as curl sees it; the whole table is ProxyPolicyTests' (the README's).
        let refused = try await Self.isolated(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}"] + proxy + ["https://example.com:443/"])
        #expect(refused.stdout == "403", "\(refused.combined)")
    }

    /// The same path with no namespace, so it runs on macOS too: curl hands an HTTPS URL's name to the proxy in its
    /// CONNECT and never resolves it itself, so no hosts line can have helped, and `%{http_connect}` shows the tunnel.
    @Test("curl reaches a fixture by name through the proxy on any OS (no namespace): CONNECT 200, verified; 403 else",
          .requires(Tools.curl))
    func curlThroughProxyAnywhere() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let compliant = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        let expired = try await runner.start(#"{"scenario": "expired"}"#)
        let wrongHost = try await runner.start(#"{"scenario": "wrong-host"}"#)
        let ca = try TestEnvironment.file(Data(compliant.caPEM.utf8), name: "ca.pem")
        // A proxy setting or exception of the developer's own must not decide which way curl goes.
        let environment = ["no_proxy": "", "NO_PROXY": "", "https_proxy": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": ""]
        func curl(_ arguments: [String]) async throws -> Subprocess.Result {
            try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", ca, "--proxy", runner.url] + arguments, environment: environment)
        }
        let loaded = try await curl(
            ["-w", "\n%{http_connect} %{ssl_verify_result}", compliant.qualifiedURL.absoluteString])
        #expect(loaded.status == 0 && loaded.stdout.contains("\"scenario\":\"ats-compliant\""), "\(loaded.combined)")
        #expect(loaded.stdout.hasSuffix("\n200 0"), "the tunnel or the verification: \(loaded.stdout.suffix(40))")
        // The controls: an expired chain, and a leaf that does not carry its name, are refused through the same tunnel.
        #expect(try await curl([expired.qualifiedURL.absoluteString]).status == 60)
        #expect(try await curl([wrongHost.qualifiedURL.absoluteString]).status == 60)
        // Not an open proxy.
        let refused = try await curl(
            ["-o", "/dev/null", "-w", "%{http_connect}", "https://example.com:\(compliant.port)/"])
        #expect(refused.stdout == "403", "\(refused.combined)")
    }

    /// Issue 27: a CONNECT reached whatever listened on the port, by any name (another fixture's, none, 600 letters),
    /// and localhost, 127.0.0.1, [::1] and even `::1:PORT` got through. A user who typed the wrong port silently tested
    /// another scenario, and one who used localhost tested without ATS.
    @Test("a name reaches its own fixture's port only, never by localhost or an address; a refusal names the fixture",
          .requires(Tools.curl, Tools.python), .enabled(if: namespace == nil, Comment(rawValue: namespace ?? "")))
    func namesAreChecked() async throws {
        let runner = try await ControlAPIRunner.start(["ats-compliant"])
        defer { runner.stop() }
        let compliant = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        let port = compliant.port
        let ca = try TestEnvironment.file(Data(compliant.caPEM.utf8), name: "ca.pem")
        func connectStatus(_ url: String) async throws -> String {
            let arguments = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--cacert", ca]
            return try await Self.isolated(arguments + ["--proxy", runner.url, url]).stdout
        }
        #expect(try await connectStatus("https://ats-compliant.fixtures.test:\(port)/") == "200")
        #expect(try await connectStatus("https://ATS-Compliant.Fixtures.Test.:\(port)/") == "200")
        let long = String(repeating: "a", count: 600) + ".fixtures.test"
        for host in ["pinned.fixtures.test", "no-such-fixture.fixtures.test", long, "localhost", "127.0.0.1", "[::1]"] {
            #expect(try await connectStatus("https://\(host):\(port)/") == "403", "\(host.prefix(40))")
        }
        // Raw CONNECTs, for what curl will not send (`::1:PORT`) and for the refusal's words.
        let script = """
        import socket, sys
        base = int(sys.argv[1])
        for authority in sys.argv[2:]:
            with socket.create_connection(("127.0.0.1", base)) as s:
                s.sendall(b"CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (authority.encode(), authority.encode()))
                answer = b""
                while chunk := s.recv(4096):
                    answer += chunk
                print(answer.split(b"\\r\\n\\r\\n", 1)[-1].decode().strip())
        """
        let authorities = ["pinned.fixtures.test:\(port)", "localhost:\(port)", "::1:\(port)"]
        let answers = try await Subprocess.runAwaiting(
            [try #require(Tools.python.path), "-c", script, "\(runner.base)"] + authorities, timeout: 60)
        let lines = answers.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(answers.combined)")
        let name = "ats-compliant.fixtures.test:\(port)"
        let wrongName = lines.first ?? ""
        #expect(wrongName.hasPrefix("403 port \(port) is the ats-compliant fixture"), "\(lines)")
        #expect(wrongName.contains(name), "\(lines)")
        let loopback = lines.dropFirst().first ?? ""
        #expect(loopback.hasPrefix("403 the proxy reaches fixtures by name only, such as \(name)"), "\(lines)")
        #expect(lines.last?.hasPrefix("400 \"::1:\(port)\" is not HOST:PORT") == true, "\(lines)")
    }

    @Test("--domain: leaves also name NAME.DOMAIN, the proxy resolves it, and a CA that does not permit it is refused",
          .requires(Tools.curl, Tools.openssl), .enabled(if: namespace == nil, Comment(rawValue: namespace ?? "")))
    func ownDomain() async throws {
        let domain = "fixtures.example.com"
        let store = CertificateStore.at(TestEnvironment.temporaryDirectory("domain-store"))
        let made = try await TestEnvironment.tlsFixturesAwaiting(
            ["ca", "init", "--domain", domain, "--dir", store.directory.path])
        #expect(made.status == 0, "\(made.combined)")
        let runner = try await ControlAPIRunner.start(["ats-compliant"], extra: ["--domain", domain], store: store)
        defer { runner.stop() }
        let fixture = try await runner.start(#"{"scenario": "expired"}"#)
        #expect(fixture.domainURLs == [URL(string: "https://expired.\(domain):\(fixture.port)/")!])
        #expect(fixture.proxy?.domains == ["fixtures.test", domain])
        let compliant = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        let ca = try TestEnvironment.file(Data(compliant.caPEM.utf8), name: "ca.pem")
        let byDomain = "https://ats-compliant.\(domain):\(compliant.port)/"
        let loaded = try await Self.isolated(["curl", "-sS", "--cacert", ca, "--proxy", runner.url, byDomain])
        #expect(loaded.status == 0 && loaded.stdout.contains("\"scenario\":\"ats-compliant\""), "\(loaded.combined)")
        // openssl agrees the name and the CA's name constraints hold for it.
        let verified = try await TestEnvironment.opensslAwaiting(
            ["s_client", "-connect", "ats-compliant.\(domain):\(compliant.port)",
            "-proxy", "localhost:\(runner.base)", "-verify_hostname", "ats-compliant.\(domain)", "-CAfile", ca, "-verify_return_error"], stdin: Data())
        #expect(verified.stdout.contains("Verify return code: 0 (ok)"), "\(verified.combined.suffix(400))")
        // The plain name still works: the domain adds a name, it does not replace one.
        #expect(try await Self.isolated(["curl", "-sS", "-o", "/dev/null", "--cacert", ca, "--proxy", runner.url,
                                   compliant.qualifiedURL.absoluteString]).status == 0)
        // A domain this runner does not serve is not routed.
        let other = try await Self.isolated(
            ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--proxy", runner.url,
            "https://ats-compliant.other.example.org:\(compliant.port)/"])
        #expect(other.stdout == "403", "\(other.combined)")

        // The shared store's CA does not permit the domain: one line saying how to make one that does.
        let refused = try await TestEnvironment.tlsFixturesAwaiting(["serve", "ats-compliant", "--domain", domain, "--port-base", "\(try ServeEndToEndTests.freePortBase())",
                                                       "--dir", TestEnvironment.sharedStore.directory.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("ca init --force --domain \(domain)"), "\(refused.stderr)")
    }

    /// An IPv4 address of this machine that is not loopback: a client connecting to it from here is not a loopback
    /// client as far as the runner can tell.
    static let externalAddress: String? = {
        guard let result = try? Subprocess.run(["sh", "-c", "hostname -I 2>/dev/null || true"]) else { return nil }
        return result.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
            .first { $0.contains(".") && !$0.hasPrefix("127.") }
    }()

    @Test("--proxy-port, two --bind addresses, and clients that are not on loopback refused by default",
          .requires(Tools.curl), .enabled(if: namespace == nil, Comment(rawValue: namespace ?? "")),
          .enabled(if: externalAddress != nil, "needs a non-loopback IPv4 address on this machine (hostname -I)"))
    func proxyPortAndRemoteClients() async throws {
        let external = try #require(Self.externalAddress)
        let proxyPort = try Ports.unused()
        let runner = try await ControlAPIRunner.start(
            ["ats-compliant"], extra: ["--bind", "127.0.0.1", "--bind", external,
            "--proxy-port", "\(proxyPort)"])
        defer { runner.stop() }
        let fixture = try await runner.start(#"{"scenario": "ats-compliant"}"#)
        #expect(fixture.proxy?.port == proxyPort)
        let ca = try TestEnvironment.file(Data(fixture.caPEM.utf8), name: "ca.pem")
        let name = fixture.qualifiedURL.absoluteString
        let loaded = try await Self.isolated(["curl", "-sS", "--cacert", ca, "--proxy", "http://127.0.0.1:\(proxyPort)", name])
        #expect(loaded.status == 0 && loaded.stdout.contains("\"scenario\":\"ats-compliant\""), "\(loaded.combined)")
        // The dashboard's port proxies no more: it answers the CONNECT itself, 405, naming the proxy's port (curl 56:
        // the tunnel failed), rather than failing any other way (a refused connection would pass `status != 0` too).
        let dashboard = try await Self.isolated(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--cacert", ca,
                                                 "--proxy", runner.url, name])
        #expect(dashboard.status == 56 && dashboard.stdout == "405",
                "the dashboard's port should refuse to proxy with --proxy-port: \(dashboard.combined)")

        // Both listen on the external address (the fixtures are deliberately reachable there), but the proxy and the
        // API answer loopback clients only.
        let remoteProxy = try await Self.isolated(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--cacert",
                                                   ca, "--proxy", "http://\(external):\(proxyPort)", name])
        // Refused by the proxy, 403, for not being on this machine: not any failure at all.
        #expect(remoteProxy.status == 56 && remoteProxy.stdout == "403",
                "a client on \(external) should be refused by the proxy: \(remoteProxy.combined)")
        let remoteAPI = try await Subprocess.runAwaiting(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://\(external):\(runner.base)/api/fixtures"])
        #expect(remoteAPI.stdout == "403", "\(remoteAPI.combined)")
    }

    @Test("URLSession from a program that links TLSFixturesClient alone loads a fixture by name through the proxy",
          .enabled(if: namespace == nil, Comment(rawValue: namespace ?? "")))
    func urlSessionThroughProxy() async throws {
        let runner = try await ControlAPIRunner.start()
        defer { runner.stop() }
        let ca = try TestEnvironment.file(try runner.store.ca().certificate.pem, name: "ca.pem")
        let check = TestEnvironment.productsDirectory.appendingPathComponent("tls-fixtures-client-check").path
        var environment = ProcessInfo.processInfo.environment
        environment["TLS_FIXTURES_URL"] = runner.url
        for variable in ["https_proxy", "http_proxy", "HTTPS_PROXY", "HTTP_PROXY", "no_proxy", "NO_PROXY"] { environment[variable] = nil }
        struct Outcome: Decodable { var loaded: Bool; var servedScenario: String?; var error: String?; var url: String }

        let compliant = try await Self.isolated([check, "ats-compliant"], caFile: ca, environment: environment)
        let accepted = try JSONDecoder().decode(Outcome.self, from: Data(compliant.stdout.utf8))
        #expect(compliant.status == 0 && accepted.loaded && accepted.servedScenario == "ats-compliant", "\(compliant.combined)")
        #expect(accepted.url.hasPrefix("https://ats-compliant.fixtures.test:"))
        let expired = try await Self.isolated([check, "expired"], caFile: ca, environment: environment)
        let refused = try JSONDecoder().decode(Outcome.self, from: Data(expired.stdout.utf8))
        #expect(expired.status == 1 && !refused.loaded && refused.error?.contains("expired") == true, "\(expired.combined)")
        // Nothing is left running: the program stopped what it started.
        #expect(try await runner.api("GET", "/api/fixtures").decode(FixtureList.self).fixtures.isEmpty)
    }
}
