import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, item 12: what mkcert, `openssl req`/`x509 -req` and `step certificate create` users look for in
/// `cert issue`, each checked by three judges we did not write: `openssl x509 -text` (what is in it), `openssl verify`
/// (OpenSSL's chain verifier) and pyca/cryptography's RFC 5280 verifier (a second, stricter stack).
@Suite("cert issue: CSRs, your own CA and key, every name kind, subject fields, serial, revocation URLs, file names", .ownThreads)
struct CertIssueFeatureTests {
    /// pyca/cryptography's verifier (cryptography 43+): OK, or its error. A server name verifies as a server
    /// certificate for that name; `-client` as a client certificate.
    static let pycaScript = """
        import sys, ipaddress
        from cryptography import x509
        from cryptography.x509.verification import PolicyBuilder, Store
        roots = x509.load_pem_x509_certificates(open(sys.argv[1], 'rb').read())
        chain = x509.load_pem_x509_certificates(open(sys.argv[2], 'rb').read())
        builder = PolicyBuilder().store(Store(roots))
        try:
            if sys.argv[3] == '-client':
                builder.build_client_verifier().verify(chain[0], chain[1:])
            else:
                try:
                    name = x509.IPAddress(ipaddress.ip_address(sys.argv[3]))
                except ValueError:
                    name = x509.DNSName(sys.argv[3])
                builder.build_server_verifier(name).verify(chain[0], chain[1:])
            print('OK')
        except Exception as error:
            print('FAILED', error)
            sys.exit(1)
        """

    /// The python3 that has pyca's verifier: the system's, or the matrix's venv (scripts/matrix-python.sh).
    static let pycaPython: String? = {
        let venv = TestEnvironment.packageRoot.appendingPathComponent(".build-matrix/venv/bin/python").path
        for python in [Tools.pythonSSL.path, venv].compactMap({ $0 }) where FileManager.default.isExecutableFile(atPath: python) {
            if (try? Subprocess.runUnchecked([python, "-c", "import cryptography.x509.verification"], timeout: 30))?.status == 0 { return python }
        }
        return nil
    }()

    /// All three judges on `chain` (leaf first) against `roots`: the text for the caller to read, after checking that
    /// both verifiers accept it for `name`.
    static func judge(_ chain: String, roots: String, name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let text = try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-text"]).stdout
        var verify = ["verify", "-CAfile", roots, "-untrusted", chain]
        if name == "-client" { verify += ["-purpose", "sslclient"] } else if IPAddress.parse(name) != nil { verify += ["-verify_ip", name] }
        else { verify += ["-verify_hostname", name] }
        let openssl = try TestEnvironment.openssl(verify + [chain])
        #expect(openssl.status == 0 && openssl.stdout.contains(": OK"), "openssl verify: \(openssl.combined)", sourceLocation: sourceLocation)
        let python = try #require(pycaPython, "pyca/cryptography's verifier is needed (make test installs it: scripts/matrix-python.sh)")
        let pyca = try Subprocess.runUnchecked([python, "-c", pycaScript, roots, chain, name], timeout: 60)
        #expect(pyca.status == 0 && pyca.stdout.contains("OK"), "pyca: \(pyca.combined)", sourceLocation: sourceLocation)
        return text
    }

    static func newStore() throws -> (store: String, root: String, out: URL) {
        let directory = TestEnvironment.temporaryDirectory("features")
        let store = directory.appendingPathComponent("store").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let out = directory.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        return (store, "\(store)/ca/root.pem", out)
    }

    static func issue(_ store: String, _ arguments: [String]) throws -> Subprocess.Result {
        let result = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store] + arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result
    }

    @Test("email and URI names, and IDN hosts as the A-labels Python's own IDNA codec gives")
    func nameKinds() throws {
        let (store, root, out) = try Self.newStore()
        let chain = out.appendingPathComponent("names.pem").path
        _ = try Self.issue(store, ["--name", "names", "--host", "bücher.test", "--host", "münchen.example", "--email", "alice@example.test",
                                   "--uri", "spiffe://example.test/svc", "--eku", "both", "--cert-file", chain])
        // Python's "idna" codec (RFC 3490) is the independent reference for the A-labels.
        let python = try Subprocess.run(["python3", "-c", "print('bücher.test'.encode('idna').decode(), 'münchen.example'.encode('idna').decode())"],
                                        timeout: 30)
        let expected = python.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").map(String.init)
        #expect(expected == ["xn--bcher-kva.test", "xn--mnchen-3ya.example"], "\(python.combined)")
        let text = try Self.judge(chain, roots: root, name: expected[0])
        for name in expected.map({ "DNS:\($0)" }) + ["email:alice@example.test", "URI:spiffe://example.test/svc"] {
            #expect(text.contains(name), "missing \(name) in\n\(text)")
        }
        _ = try Self.judge(chain, roots: root, name: expected[1])
    }

    @Test("subject fields beyond CN and O, in the conventional order")
    func subjectFields() throws {
        let (store, root, out) = try Self.newStore()
        let chain = out.appendingPathComponent("subject.pem").path
        _ = try Self.issue(store, ["--name", "subject", "--host", "s.test", "--country", "DE", "--state", "Berlin", "--locality", "Kreuzberg",
                                   "--org", "Acme QA", "--ou", "Mobile", "--cert-file", chain])
        _ = try Self.judge(chain, roots: root, name: "s.test")
        let subject = try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-subject", "-nameopt", "RFC2253"]).stdout
        #expect(subject.contains("subject=CN=s.test,OU=Mobile,O=Acme QA,L=Kreuzberg,ST=Berlin,C=DE"), "\(subject)")
    }

    @Test("a serial number of your choosing, decimal or hex", arguments: [("1000", "03E8"), ("0x0123456789abcdef", "0123456789ABCDEF"),
                                                                         ("04:d2", "04D2")])
    func serial(_ given: String, _ printed: String) throws {
        let (store, root, out) = try Self.newStore()
        let chain = out.appendingPathComponent("serial.pem").path
        _ = try Self.issue(store, ["--name", "serial", "--host", "n.test", "--serial", given, "--cert-file", chain])
        _ = try Self.judge(chain, roots: root, name: "n.test")
        #expect(try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-serial"]).stdout.contains("serial=\(printed)"))
    }

    @Test("OCSP and caIssuers (authorityInfoAccess), a CRL distribution point and must-staple")
    func revocationPointers() throws {
        let (store, root, out) = try Self.newStore()
        let chain = out.appendingPathComponent("status.pem").path
        _ = try Self.issue(store, ["--name", "status", "--host", "r.test", "--ocsp-url", "http://127.0.0.1:9898/ocsp",
                                   "--ca-issuers-url", "http://127.0.0.1:9898/ca.cer", "--crl-url", "http://127.0.0.1:9898/ca.crl",
                                   "--must-staple", "--cert-file", chain])
        let text = try Self.judge(chain, roots: root, name: "r.test")
        for fragment in ["OCSP - URI:http://127.0.0.1:9898/ocsp", "CA Issuers - URI:http://127.0.0.1:9898/ca.cer",
                         "URI:http://127.0.0.1:9898/ca.crl", "TLS Feature:", "status_request"] {
            #expect(text.contains(fragment), "missing \(fragment) in\n\(text)")
        }
        #expect(try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-ocsp_uri"]).stdout.contains("http://127.0.0.1:9898/ocsp"))
    }

    @Test("--issuer NAME signs with a CA you issued into the store, below the built-in root or self-signed")
    func ownCA() throws {
        let (store, root, out) = try Self.newStore()
        // Below the built-in root: the chain written is leaf + the team CA; the root verifies it.
        _ = try Self.issue(store, ["--name", "team-ca", "--ca", "--cn", "Team CA", "--permit", "team.test", "--path-len", "0"])
        let chain = out.appendingPathComponent("svc.pem").path
        _ = try Self.issue(store, ["--name", "svc", "--host", "svc.team.test", "--issuer", "team-ca", "--cert-file", chain])
        let text = try Self.judge(chain, roots: root, name: "svc.team.test")
        #expect(text.contains("Issuer: O = swift-tls-fixtures, CN = Team CA"), "\(text)")
        let count = try String(contentsOfFile: chain, encoding: .utf8).components(separatedBy: "BEGIN CERTIFICATE").count - 1
        #expect(count == 2, "leaf and the team CA")
        // A name outside the team CA's constraints is issued with a warning, as for the built-in CA.
        let outside = try Self.issue(store, ["--name", "svc2", "--host", "other.test", "--issuer", "team-ca"])
        #expect(outside.stderr.contains("outside the name constraints of Team CA"), "\(outside.stderr)")
        // Self-signed: that CA is the root.
        _ = try Self.issue(store, ["--name", "own-root", "--ca", "--self-signed", "--cn", "Own Root"])
        let own = out.appendingPathComponent("own.pem").path
        _ = try Self.issue(store, ["--name", "own", "--host", "own.test", "--issuer", "own-root", "--cert-file", own])
        _ = try Self.judge(own, roots: "\(store)/certs/own-root.pem", name: "own.test")
        // A leaf is no issuer.
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "x", "--host", "x.test",
                                                                          "--issuer", "svc"]), mentioning: ["is not a CA certificate"])
    }

    @Test("--issuer-cert/--issuer-key: a CA made by openssl req signs, and --use-key: a key made by openssl genpkey is used")
    func externalCAAndKey() throws {
        let (store, _, out) = try Self.newStore()
        let caKey = out.appendingPathComponent("ext-ca.key").path
        let caPEM = out.appendingPathComponent("ext-ca.pem").path
        let made = try TestEnvironment.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                "-keyout", caKey, "-out", caPEM, "-days", "30", "-subj", "/CN=openssl CA",
                                                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try #require(made.status == 0, "\(made.combined)")
        let leafKey = out.appendingPathComponent("leaf.key").path
        try #require(try TestEnvironment.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", leafKey]).status == 0)
        let chain = out.appendingPathComponent("ext.pem").path
        _ = try Self.issue(store, ["--name", "ext", "--host", "ext.test", "--issuer-cert", caPEM, "--issuer-key", caKey,
                                   "--use-key", leafKey, "--cert-file", chain])
        let text = try Self.judge(chain, roots: caPEM, name: "ext.test")
        #expect(text.contains("Issuer: CN = openssl CA"), "\(text)")
        let certificateKey = try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-pubkey"]).stdout
        let givenKey = try TestEnvironment.openssl(["pkey", "-in", leafKey, "-pubout"]).stdout
        #expect(!certificateKey.isEmpty && certificateKey == givenKey, "the certificate does not carry the given key")
        let keys = (try? FileManager.default.contentsOfDirectory(atPath: "\(store)/keys")) ?? []
        #expect(!keys.contains { $0.hasPrefix("ext.") }, "the user's key was copied into the store: \(keys)")
        // A key that is not the CA's is refused.
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "bad", "--host", "b.test",
                                                                          "--issuer-cert", caPEM, "--issuer-key", leafKey]),
                                         mentioning: ["not the private key of"])
    }

    @Test("--csr signs a request made by openssl req: its key, subject and names; a request whose signature fails is refused")
    func signCSR() throws {
        let (store, root, out) = try Self.newStore()
        let key = out.appendingPathComponent("web.key").path
        let csr = out.appendingPathComponent("web.csr").path
        let made = try TestEnvironment.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                                                "-out", csr, "-subj", "/C=US/O=Req Org/CN=web.test",
                                                "-addext", "subjectAltName=DNS:web.test,IP:127.0.0.1"])
        try #require(made.status == 0, "\(made.combined)")
        let chain = out.appendingPathComponent("web.pem").path
        let signed = try Self.issue(store, ["--name", "web", "--csr", csr, "--cert-file", chain])
        #expect(signed.stdout.contains("nothing is kept in the store"))
        let text = try Self.judge(chain, roots: root, name: "web.test")
        _ = try Self.judge(chain, roots: root, name: "127.0.0.1")
        #expect(text.contains("DNS:web.test, IP Address:127.0.0.1"), "\(text)")
        let subject = try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-subject", "-nameopt", "RFC2253"]).stdout
        #expect(subject.contains("CN=web.test,O=Req Org,C=US"), "\(subject)")
        let fromCSR = try TestEnvironment.openssl(["req", "-in", csr, "-noout", "-pubkey"]).stdout
        #expect(try TestEnvironment.openssl(["x509", "-in", chain, "-noout", "-pubkey"]).stdout == fromCSR)
        #expect(!FileManager.default.fileExists(atPath: "\(store)/certs/web.pem"), "a CSR's certificate was kept without its key")
        // The same request with one byte of its signature changed.
        let der = try TestEnvironment.openssl(["req", "-in", csr, "-outform", "DER"]).stdoutData
        var tampered = der
        tampered[tampered.count - 3] ^= 0x01
        let bad = try TestEnvironment.file(tampered, name: "tampered.csr")
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "bad", "--csr", bad,
                                                                          "--cert-file", out.appendingPathComponent("bad.pem").path]),
                                         mentioning: ["--csr", "not signed by the key in it"])
    }

    @Test("file names of your choosing, and a key + chain bundle (0600) that openssl reads both ways")
    func outputFiles() throws {
        let (store, root, out) = try Self.newStore()
        let files = ["crt": out.appendingPathComponent("site.crt").path, "key": out.appendingPathComponent("private/site.key").path,
                     "p12": out.appendingPathComponent("site.pfx").path, "bundle": out.appendingPathComponent("site-bundle.pem").path]
        // A file's folder must exist (a missing one is refused: CLINewUserTrialTests.outputFolders); the user makes it.
        try FileManager.default.createDirectory(at: out.appendingPathComponent("private"), withIntermediateDirectories: true)
        _ = try Self.issue(store, ["--name", "site", "--host", "site.test", "--issuer", "intermediate", "--cert-file", files["crt"]!,
                                   "--key-file", files["key"]!, "--p12-file", files["p12"]!, "--bundle-file", files["bundle"]!])
        _ = try Self.judge(files["crt"]!, roots: root, name: "site.test")
        for (name, mode) in [("key", 0o600), ("bundle", 0o600), ("p12", 0o600), ("crt", 0o644)] {
            #expect(FileSystem.mode(of: URL(fileURLWithPath: files[name]!)) == mode_t(mode), "\(name)")
        }
        let fromBundle = try TestEnvironment.openssl(["pkey", "-in", files["bundle"]!, "-pubout"]).stdout
        let fromKey = try TestEnvironment.openssl(["pkey", "-in", files["key"]!, "-pubout"]).stdout
        let fromCertificate = try TestEnvironment.openssl(["x509", "-in", files["bundle"]!, "-noout", "-pubkey"]).stdout
        #expect(!fromBundle.isEmpty && fromBundle == fromKey && fromKey == fromCertificate)
        // The bundle's chain verifies as the leaf and its intermediate.
        let bundleChain = try TestEnvironment.openssl(["verify", "-CAfile", root, "-untrusted", files["bundle"]!, files["crt"]!])
        #expect(bundleChain.status == 0, "\(bundleChain.combined)")
        let p12 = try TestEnvironment.openssl(["pkcs12", "-in", files["p12"]!, "-passin", "pass:tls-fixtures", "-nokeys"])
        #expect(p12.status == 0 && p12.stdout.contains("BEGIN CERTIFICATE"), "\(p12.combined)")
        // Naming one file twice is refused before anything is written.
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "twice", "--host", "t.test",
                                                                          "--cert-file", files["crt"]!, "--key-file", files["crt"]!]),
                                         mentioning: ["--cert-file and --key-file both name"])
    }
}
