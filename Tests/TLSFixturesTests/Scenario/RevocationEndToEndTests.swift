import Foundation
import Testing
@testable import TLSFixtures

/// The revocation scenarios, started in process (each with its own OCSP responder and CRL endpoint on free ports) and
/// judged by clients we did not write: `openssl ocsp`, `openssl verify -crl_check`, `openssl s_client -status`,
/// `curl --cert-status` and GnuTLS's `gnutls-cli`.
@Suite("Revocation: OCSP, CRLs and stapling, from the client side")
struct RevocationEndToEndTests {
    /// One row per scenario, written from scenarios.md's second round and the tools' documented wording.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// What `openssl ocsp` gets from the leaf's OCSP URL: `good`, `revoked`, `refused`, or `none` (no URL).
        var ocsp: String
        /// `openssl verify -crl_check` with the CRL the leaf points at.
        var crl: String
        /// What `s_client -status` shows stapled.
        var staple: String
        var mustStaple: Bool
        /// nil: `curl --cert-status` loads it; otherwise its error.
        var curlCertStatus: String?
        /// nil: GnuTLS trusts it; otherwise its complaint.
        var gnutls: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "revoked", ocsp: "revoked", crl: "certificate revoked", staple: "none", mustStaple: false,
            curlCertStatus: "No OCSP response received", gnutls: nil),
        Row(name: "revoked-stapled", ocsp: "revoked", crl: "certificate revoked", staple: "revoked", mustStaple: false,
            curlCertStatus: "SSL certificate revocation reason: keyCompromise", gnutls: "The certificate was revoked via OCSP"),
        Row(name: "ocsp-good-stapled", ocsp: "good", crl: "ok", staple: "good", mustStaple: false, curlCertStatus: nil, gnutls: nil),
        Row(name: "must-staple-missing", ocsp: "good", crl: "ok", staple: "none", mustStaple: true,
            curlCertStatus: "No OCSP response received",
            gnutls: "The certificate requires the server to include an OCSP status in its response, but the OCSP status is missing"),
        Row(name: "ocsp-unreachable", ocsp: "refused", crl: "ok", staple: "none", mustStaple: false,
            curlCertStatus: "No OCSP response received", gnutls: nil),
        Row(name: "crl-revoked", ocsp: "none", crl: "certificate revoked", staple: "none", mustStaple: false,
            curlCertStatus: "No OCSP response received", gnutls: nil),
    ]

    static var store: CertificateStore { TestEnvironment.suiteStore("Revocation") }

    @Test("the table covers the catalog's revocation group")
    func coversTheGroup() {
        #expect(Set(Self.rows.map(\.name)) == Set(ScenarioCatalog.builtIn.scenarios.filter { $0.group == .revocation }.map(\.name)))
    }

    @Test("each scenario file states what the clients find", arguments: rows)
    func fileExpectations(_ row: Row) throws {
        let expected = try #require(try ScenarioCatalog.builtIn.scenario(named: row.name).expect.revocation)
        #expect(expected.ocsp == row.ocsp && expected.crl == row.crl && expected.staple == row.staple, "\(row.name): \(expected)")
    }

    @Test("openssl ocsp, verify -crl_check, s_client -status, curl --cert-status and gnutls-cli agree with the table",
          arguments: rows)
    func clients(_ row: Row) async throws {
        try await withFixture(row.name, store: Self.store) { fixture in
            let services = try #require(fixture.revocationServices, "\(row.name): no OCSP responder or CRL endpoint of its own")
            let credential = try #require(fixture.prepared.credential)
            let issuer = try #require(credential.intermediates.first, "\(row.name): the leaf is not from an intermediate")
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let issuerFile = try External.pemFile([issuer], name: "issuer.pem")

            // The chain and the staple as s_client sees them.
            let transcript = try await SClient.connect(port: fixture.port, extra: ["-status", "-CAfile", caFile])
            // -status prints the stapled response, signer certificate included, before the chain: the chain is what follows
            // s_client's "Certificate chain" heading.
            let chainPart = transcript.output.components(separatedBy: "Certificate chain").last ?? ""
            let pems = SClientTranscript(output: chainPart, status: transcript.status).certificatesPEM
            #expect(pems.count == 2, "\(row.name): s_client saw \(pems.count) certificates")
            let leafPEM = try #require(pems.first)
            let leafFile = try External.file(Data(leafPEM.utf8), name: "leaf.pem")
            switch row.staple {
            case "none":
                #expect(transcript.output.contains("OCSP response: no response sent"), "\(row.name): \(transcript.output.suffix(800))")
            default:
                #expect(transcript.output.contains("OCSP Response Status: successful"), "\(row.name): no stapled response")
                #expect(transcript.output.contains("Cert Status: \(row.staple)"), "\(row.name): staple \(transcript.output.suffix(1200))")
            }

            // What the leaf names, as openssl prints it.
            let uri = try await External.openssl(["x509", "-in", leafFile, "-noout", "-ocsp_uri"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let extensions = try await External.openssl(["x509", "-in", leafFile, "-noout", "-ext", "crlDistributionPoints,tlsfeature"]).stdout
            #expect(extensions.contains("status_request") == row.mustStaple, "\(row.name): TLS Feature in\n\(extensions)")
            let crlURL = try #require(extensions.components(separatedBy: .newlines).first { $0.contains("URI:") }?
                .components(separatedBy: "URI:").last?.trimmingCharacters(in: .whitespaces), "\(row.name): no CRL distribution point")
            #expect(crlURL == services.endpoints.crlURL(for: .intermediate), "\(row.name): CRL at \(crlURL)")

            // openssl ocsp against the URL the leaf names, verifying the signer is the issuer.
            switch row.ocsp {
            case "none":
                #expect(uri.isEmpty, "\(row.name): names an OCSP responder \(uri)")
            case "refused":
                #expect(uri == services.endpoints.unreachableOCSPURL, "\(row.name): OCSP URL \(uri)")
                // No -timeout: with one, openssl retries a refused connection until the time is up.
                let asked = try await External.openssl(["ocsp", "-issuer", issuerFile, "-CAfile", caFile, "-cert", leafFile, "-url", uri])
                #expect(asked.status != 0 && asked.combined.contains("Connection refused"), "\(row.name): \(asked.combined)")
                let python = try await External.run(["python3", "-c", "import socket,sys\ntry:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n print('connected')\nexcept ConnectionRefusedError:\n print('refused')", String(services.refusingPort ?? 0)])
                #expect(python.stdout.contains("refused"), "\(row.name): python: \(python.combined)")
                let port = try #require(services.refusingPort)
                #expect(!Ports.accepts(port), "\(row.name): the refusing port \(port) accepts connections")
            default:
                #expect(uri == services.endpoints.ocspURL, "\(row.name): OCSP URL \(uri)")
                let asked = try await External.openssl(["ocsp", "-issuer", issuerFile, "-CAfile", caFile, "-cert", leafFile, "-url", uri,
                                                        "-resp_text", "-timeout", "10"])
                #expect(asked.status == 0, "\(row.name): \(asked.combined)")
                #expect(asked.stdout.contains("\(leafFile): \(row.ocsp)"), "\(row.name): \(asked.combined)")
                #expect(asked.combined.contains("Response verify OK"), "\(row.name): \(asked.combined)")
                // Signed by the issuing CA itself: the responder ID is the issuer's name.
                let subject = try await External.openssl(["x509", "-in", issuerFile, "-noout", "-subject"]).stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "subject=", with: "")
                #expect(asked.stdout.contains("Responder Id: \(subject)"), "\(row.name): responder is not \(subject):\n\(asked.stdout.prefix(600))")
                if row.ocsp == "revoked" { #expect(asked.stdout.contains("Reason: keyCompromise"), "\(row.name)") }
            }

            // The CRL from the leaf's distribution point, judged by openssl verify -crl_check.
            let crlDER = try await External.run(["curl", "-fsS", "--max-time", "20", "-o", "-", crlURL])
            #expect(crlDER.status == 0, "\(row.name): curl \(crlURL): \(crlDER.stderr)")
            let crlFile = try External.file(crlDER.stdoutData, name: "crl.der")
            let crlPEM = try await External.openssl(["crl", "-inform", "DER", "-in", crlFile])
            let crlPEMFile = try External.file(Data(crlPEM.stdout.utf8), name: "crl.pem")
            let signedCRL = try await External.openssl(["crl", "-in", crlPEMFile, "-CAfile", issuerFile, "-noout"])
            #expect(signedCRL.combined.contains("verify OK"), "\(row.name): the CRL is not signed by the issuer: \(signedCRL.combined)")
            let checked = try await External.openssl(["verify", "-crl_check", "-CAfile", caFile, "-untrusted", issuerFile,
                                                      "-CRLfile", crlPEMFile, leafFile])
            #expect(OpenSSLVerify.verdict(checked.combined, file: leafFile) == row.crl, "\(row.name): \(checked.combined)")

            // curl insisting on a good staple; GnuTLS, a second TLS stack, with its own OCSP and must-staple checks.
            async let curled = External.run(["curl", "-sS", "--max-time", "20", "--cert-status", "--cacert", caFile,
                                             "https://localhost:\(fixture.port)/"])
            async let gnutls = External.run(["gnutls-cli", "--x509cafile=\(caFile)", "-p", "\(fixture.port)", "localhost"],
                                            stdin: Data("GET / HTTP/1.0\r\n\r\n".utf8), timeout: 30)
            let curlResult = try await curled
            if let problem = row.curlCertStatus {
                #expect(curlResult.status == 91 && curlResult.stderr.contains(problem), "\(row.name): curl said \(curlResult.combined)")
            } else {
                #expect(curlResult.status == 0 && curlResult.stdout.contains("\"scenario\":\"\(row.name)\""), "\(row.name): \(curlResult.combined)")
            }
            let gnutlsResult = try await gnutls
            if let problem = row.gnutls {
                #expect(gnutlsResult.combined.contains(problem) && gnutlsResult.combined.contains("NOT trusted"), "\(row.name): \(gnutlsResult.combined)")
            } else {
                #expect(gnutlsResult.combined.contains("The certificate is trusted"), "\(row.name): \(gnutlsResult.combined)")
            }

            // Our probe reads the same staple, and checks its signature against the issuer.
            var options = ProbeOptions()
            options.trustRoots = [fixture.caCertificate]
            let probed = try await TLSProbe(options: options).probe(ProbeTarget(host: "localhost", port: fixture.port))
            #expect((probed.stapledOCSP?.certificateStatus ?? "none") == row.staple, "\(row.name): probe \(String(describing: probed.stapledOCSP))")
            if probed.stapledOCSP != nil { #expect(probed.stapledOCSP?.signedByIssuer == true) }
        }
    }

    @Test("the responder answers unknown for an unlisted serial, unauthorized for another issuer, malformedRequest for junk, and GET requests")
    func responderAnswers() async throws {
        try await withFixture("revoked", store: Self.store) { fixture in
            let services = try #require(fixture.revocationServices)
            let url = services.endpoints.ocspURL
            let issuer = try #require(fixture.prepared.credential?.intermediates.first)
            let caFile = try External.pemFile([fixture.caCertificate], name: "ca.pem")
            let issuerFile = try External.pemFile([issuer], name: "issuer.pem")

            // A certificate of the same issuer that the responder has no record of.
            let stranger = try Self.store.credential(named: "revocation-stranger", profile: .server(hosts: ["localhost"]),
                                                     keyName: "revocation-stranger", keySpec: .ec(.p256), issuer: .authority(.intermediate))
            let strangerFile = try External.pemFile([stranger.certificate], name: "stranger.pem")
            let unknown = try await External.openssl(["ocsp", "-issuer", issuerFile, "-CAfile", caFile, "-cert", strangerFile, "-url", url])
            #expect(unknown.stdout.contains("\(strangerFile): unknown"), "\(unknown.combined)")

            // A certificate of another issuer (the root's own leaf): this responder is not authoritative.
            let other = try Self.store.prepare(try ScenarioCatalog.builtIn.scenario(named: "ats-compliant"))
            let otherFile = try External.pemFile([try #require(other.credential?.certificate)], name: "other.pem")
            let unauthorized = try await External.openssl(["ocsp", "-issuer", caFile, "-cert", otherFile, "-url", url])
            #expect(unauthorized.combined.contains("unauthorized"), "\(unauthorized.combined)")

            // Junk instead of a request, and the RFC 6960 GET form of a real one.
            let junk = try await External.run(["curl", "-sS", "--max-time", "20", "--data-binary", "not a request", "-H",
                                               "Content-Type: application/ocsp-request", "-o", "-", url])
            let junkFile = try External.file(junk.stdoutData, name: "junk.der")
            let junkText = try await External.openssl(["ocsp", "-respin", junkFile, "-resp_text", "-noverify"])
            #expect(junkText.combined.contains("malformedrequest") || junkText.combined.contains("malformedRequest"), "\(junkText.combined)")

            let leafFile = try External.pemFile([try #require(fixture.prepared.credential?.certificate)], name: "leaf.pem")
            let requestFile = TestEnvironment.temporaryDirectory("ocsp-get").appendingPathComponent("request.der").path
            _ = try await External.openssl(["ocsp", "-issuer", issuerFile, "-cert", leafFile, "-no_nonce", "-reqout", requestFile])
            let request = try Data(contentsOf: URL(fileURLWithPath: requestFile))
            let encoded = request.base64EncodedString().addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let got = try await External.run(["curl", "-fsS", "--max-time", "20", "-o", "-", "\(url)/\(encoded)"])
            let responseFile = try External.file(got.stdoutData, name: "response.der")
            let read = try await External.openssl(["ocsp", "-respin", responseFile, "-issuer", issuerFile, "-CAfile", caFile, "-cert", leafFile])
            #expect(read.stdout.contains("\(leafFile): revoked") && read.combined.contains("Response verify OK"), "\(read.combined)")
        }
    }

    @Test("a preparation for serve's responder is kept; one naming an in-process fixture's own responder is not")
    func inProcessPreparationsAreNotKept() throws {
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "revoked")
        let own = RevocationEndpoints(host: "127.0.0.1", responderPort: 1, refusingPort: 2)
        let first = try Self.store.prepare(scenario, revocationEndpoints: own)
        let again = try Self.store.prepare(scenario, revocationEndpoints: own)
        #expect(first.revocationEndpoints == own && again.revocationEndpoints == own)
        #expect(first !== again, "a preparation for one fixture's own responder was kept")
        let served = try Self.store.prepare(scenario)
        #expect(served.revocationEndpoints == .serveDefault)
        #expect(served === (try Self.store.prepare(scenario)), "serve's preparation is made again on every request")
        let control = try ScenarioCatalog.builtIn.scenario(named: "ats-compliant")
        #expect((try Self.store.prepare(control, revocationEndpoints: own)) === (try Self.store.prepare(control)),
                "a scenario without revocation is prepared again because of endpoints it does not use")
    }

    @Test("a fixture stops its responder and frees the refusing port")
    func servicesStopWithTheFixture() async throws {
        let fixture = try await FixtureServer.start("ocsp-unreachable", store: Self.store)
        let services = try #require(fixture.revocationServices)
        let responder = try #require(services.responderPort)
        let refusing = try #require(services.refusingPort)
        #expect(Ports.accepts(responder) && !Ports.accepts(refusing))
        #expect(!Ports.canListen(refusing), "the refusing port \(refusing) is not held")
        #expect(services.isRunning)
        await fixture.stop()
        // From the client side this is the next test's: these ports came from the ephemeral range, where another test's
        // fixture or connection may take them the moment they are free.
        #expect(!services.isRunning, "stop() left the responder listening or the refusing port held")
    }

    @Test("stopping the services closes the responder and gives the refusing port back")
    func servicesFreeTheirPorts() async throws {
        // Below the ephemeral range and apart from every other test's ports, so nothing takes them once free.
        let responder = try Ports.freeRange(count: 1)
        let refusing = try Ports.freeRange(count: 1)
        let services = try await RevocationServices.start(bindAddresses: nil, responderPort: responder, refusingPort: refusing)
        #expect(services.responderPort == responder && services.refusingPort == refusing)
        #expect(Ports.accepts(responder), "the responder does not listen on \(responder)")
        #expect(!Ports.accepts(refusing) && !Ports.canListen(refusing), "the refusing port \(refusing) is not held")
        await services.stop()
        #expect(!Ports.accepts(responder), "the responder still listens on \(responder)")
        // Twice in full runs under load (never alone) the port could not be bound right after stop(), with the kit's
        // sockets closed: a second to settle, and what holds the port named in the failure, so the cause is seen.
        var free = Ports.canListen(refusing)
        for _ in 0..<9 where !free {
            try await Task.sleep(for: .milliseconds(100))
            free = Ports.canListen(refusing)
        }
        let holders = free ? "" : ((try? await Subprocess.runAwaiting(["ss", "-tanpe", "sport = :\(refusing) or dport = :\(refusing)"]).combined) ?? "ss failed")
        #expect(free, "the refusing port \(refusing) is still held after stop(): \(holders)")
    }
}
