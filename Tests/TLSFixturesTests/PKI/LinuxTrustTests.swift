import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, items 11 and 12 (`ca install`): trusting the built-in CA on Linux as `ca init` and docs/cli.md say, each
/// way checked with the client it is for; `ca install`/`uninstall` into a stand-in root and HOME (never this machine's
/// own stores), with Debian's real `update-ca-certificates` and NSS's real `certutil`; the macOS keychain through the
/// seam (its program exists only on macOS).
@Suite("Trusting the CA on Linux, and ca install", .ownThreads)
struct LinuxTrustTests {
    @Test("ca init and ca show say how to trust the CA on Linux: the CA file, the system store, NSS, Java")
    func instructions() throws {
        let store = TestEnvironment.temporaryDirectory("linux-trust").path
        for command in [["ca", "init"], ["ca", "show"]] {
            let text = try TestEnvironment.tlsFixtures(command + ["--dir", store]).stdout
            for fragment in ["curl --cacert '\(store)/ca/root.pem'", "SSL_CERT_FILE=", "CURL_CA_BUNDLE=", "NODE_EXTRA_CA_CERTS=",
                             "ca install --system", "update-ca-certificates", "ca install --nss", "-N", "keytool -importcert",
                             "FoundationNetworking", "ca uninstall"] {
                #expect(text.contains(fragment), "\(command): missing \(fragment)")
            }
        }
    }

    @Test("each environment variable the instructions name makes its client trust a fixture, and nothing else does",
          .requires(Tools.curl), .requires(Tools.openssl), .requires(Tools.pythonSSL))
    func environmentVariables() async throws {
        let caFile = TestEnvironment.sharedStore.certificatePath(.root).path
        _ = try TestEnvironment.sharedStore.ca()
        try await withFixture("ats-compliant", store: TestEnvironment.sharedStore) { fixture in
            let url = "https://localhost:\(fixture.port)/"
            let python = ["python3", "-c", "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).status)", url]
            let curl = ["curl", "-sS", "-o", "/dev/null", url]
            let openssl = ["sh", "-c", "echo | openssl s_client -connect localhost:\(fixture.port) -verify_return_error -verify_hostname localhost"]
            // Without the variable each client refuses (the CA is in no store it reads), with it each one connects.
            for (command, variable) in [(python, "SSL_CERT_FILE"), (curl, "CURL_CA_BUNDLE"), (openssl, "SSL_CERT_FILE")] {
                let without = try await Subprocess.runAwaiting(command, environment: ["SSL_CERT_FILE": "/nonexistent", "CURL_CA_BUNDLE": "/nonexistent"], timeout: 30)
                let with = try await Subprocess.runAwaiting(command, environment: [variable: caFile], timeout: 30)
                #expect(without.status != 0, "\(command[0]) trusted the fixture without \(variable)")
                #expect(with.status == 0, "\(command[0]) with \(variable): \(with.combined)")
            }
        }
    }

    /// A stand-in for `/` as Debian lays out its trust store, holding one other CA so the bundle is never empty.
    static func fakeRoot() throws -> URL {
        let root = TestEnvironment.temporaryDirectory("trust-root")
        for folder in ["usr/share/ca-certificates/other", "etc/ssl/certs", "etc/ca-certificates/update.d", "usr/local/share/ca-certificates"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let other = try CertificateAuthority.ephemeral(commonName: "some other CA")
        try other.certificate.pem.write(to: root.appendingPathComponent("usr/share/ca-certificates/other/other.crt"))
        try Data("other/other.crt\n".utf8).write(to: root.appendingPathComponent("etc/ca-certificates.conf"))
        return root
    }

    static var updateCACertificates: String? {
        ["/usr/sbin/update-ca-certificates", "/sbin/update-ca-certificates", "/usr/bin/update-ca-certificates"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("ca install --system --nss: the bundle verifies a leaf, a fresh HOME gets an NSS database; uninstall undoes both", .requires(Tools.certutil), .requires(Tools.openssl))
    func installAndUninstall() throws {
        try #require(Self.updateCACertificates != nil, "Debian's ca-certificates package (update-ca-certificates) is needed")
        let store = TestEnvironment.temporaryDirectory("install-store").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let leaf = TestEnvironment.temporaryDirectory("install-leaf").appendingPathComponent("leaf.pem").path
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "leaf", "--host", "leaf.test",
                                                 "--cert-file", leaf]).status == 0)
        let root = try Self.fakeRoot()
        let home = TestEnvironment.temporaryDirectory("install-home")   // no ~/.pki: the SEC_ERROR_BAD_DATABASE case
        let bundle = root.appendingPathComponent("etc/ssl/certs/ca-certificates.crt").path
        let stores = ["--dir", store, "--system", "--nss", "--trust-root", root.path]
        let installed = try TestEnvironment.tlsFixtures(["ca", "install"] + stores, environment: ["HOME": home.path])
        #expect(installed.status == 0 && installed.stdout.contains("system: installed") && installed.stdout.contains("nss: installed"),
                "\(installed.combined)")
        #expect(try TestEnvironment.openssl(["verify", "-CAfile", bundle, leaf]).status == 0, "the system bundle does not trust the CA")
        let database = "sql:\(home.path)/.pki/nssdb"
        let listed = try Subprocess.run(["certutil", "-d", database, "-L"], timeout: 30)
        #expect(listed.stdout.contains("swift-tls-fixtures CA") && listed.stdout.contains("C,,"), "\(listed.combined)")
        // NSS's own verifier (vfychain, usage 1 = SSL server) trusts the leaf through that database: not OpenSSL's judgement.
        let leafDER = try TestEnvironment.file(try TestEnvironment.openssl(["x509", "-in", leaf, "-outform", "DER"]).stdoutData, name: "leaf.der")
        let nss = try Subprocess.run(["vfychain", "-d", database, "-p", "-u", "1", leafDER], timeout: 30)
        #expect(nss.status == 0 && nss.combined.contains("Chain is good"), "\(nss.combined)")
        // Twice is harmless.
        let again = try TestEnvironment.tlsFixtures(["ca", "install"] + stores, environment: ["HOME": home.path])
        #expect(again.status == 0 && again.stdout.contains("nss: already installed"), "\(again.combined)")

        let removed = try TestEnvironment.tlsFixtures(["ca", "uninstall"] + stores, environment: ["HOME": home.path])
        #expect(removed.status == 0 && removed.stdout.contains("system: removed") && removed.stdout.contains("nss: removed"), "\(removed.combined)")
        #expect(try TestEnvironment.openssl(["verify", "-CAfile", bundle, leaf]).status != 0, "still trusted after uninstall")
        let bundleText = try String(contentsOfFile: bundle, encoding: .utf8)
        #expect(bundleText.components(separatedBy: "BEGIN CERTIFICATE").count == 2, "the other CA must stay in the bundle")
        #expect(!(try Subprocess.run(["certutil", "-d", database, "-L"], timeout: 30)).stdout.contains("swift-tls-fixtures CA"))
        let untrusted = try Subprocess.run(["vfychain", "-d", database, "-p", "-u", "1", leafDER], timeout: 30)
        #expect(untrusted.status != 0 && untrusted.combined.contains("issuer is not recognized"), "\(untrusted.combined)")
    }

    @Test("never implicit: ca install names its stores, needs a CA, and refuses clearly without permission", .requires(Tools.setpriv))
    func refusals() throws {
        let store = TestEnvironment.temporaryDirectory("install-refuse").path
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "install", "--dir", store, "--nss"]),
                                         mentioning: ["no CA in", "ca init"])
        #expect(!FileManager.default.fileExists(atPath: "\(store)/ca"), "ca install made a CA")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "install", "--dir", store]),
                                         mentioning: ["name the trust stores", "--system", "--nss", "--keychain"])
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "install", "--dir", store, "--keychain"]),
                                         mentioning: ["macOS only"])
        // As a user who may not write the system store's folder (root ignores permissions: run as nobody).
        try #require(Self.updateCACertificates != nil)
        let root = try Self.fakeRoot()
        chmod(root.appendingPathComponent("usr/local/share/ca-certificates").path, 0o755)
        let readable = TestEnvironment.temporaryDirectory("install-nobody")
        let nobodyStore = readable.appendingPathComponent("store").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", nobodyStore]).status == 0)
        // nobody must read the store it installs from: hand it over (0700 folders stay 0700, now nobody's).
        _ = try Subprocess.run(["chown", "-R", "65534:65534", nobodyStore], timeout: 30)
        let before = try StoreSafetyTests.snapshot(root)
        let refused = try TestEnvironment.tlsFixtures(asNobody: getuid() == 0, ["ca", "install", "--dir", nobodyStore, "--system",
                                                                                 "--trust-root", root.path])
        CLIInputTests.expectOneLineError(refused, mentioning: ["cannot write", "usr/local/share/ca-certificates", "sudo tls-fixtures ca install --system --dir"])
        #expect(try StoreSafetyTests.snapshot(root) == before, "a refused install changed the system store")
    }

    /// A root update-ca-certificates cannot work in (here: etc/ssl/certs is a file, so it cannot enter it) fails the
    /// install with the tool's own words, and the certificate file written for it is taken back out: left there, the
    /// next update of that store, by anyone, would trust the CA unasked.
    @Test("a system install the update tool refuses fails in one line and leaves no certificate file behind")
    func refusedUpdateRollsBack() throws {
        try #require(Self.updateCACertificates != nil, "Debian's ca-certificates package (update-ca-certificates) is needed")
        let store = TestEnvironment.temporaryDirectory("install-rollback").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let root = TestEnvironment.temporaryDirectory("trust-root-broken")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("etc/ssl"), withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: root.appendingPathComponent("etc/ssl/certs"))
        let before = try StoreSafetyTests.snapshot(root)
        let refused = try TestEnvironment.tlsFixtures(["ca", "install", "--dir", store, "--system", "--trust-root", root.path])
        CLIInputTests.expectOneLineError(refused, mentioning: ["update-ca-certificates", "failed", "etc/ssl/certs"])
        let left = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".crt") }
        #expect(left == [], "a refused install left \(left ?? []) in the system store")
        // Nor the folders and files it made for it: the root is as it was.
        #expect(try StoreSafetyTests.snapshot(root) == before, "a refused install left things in \(root.path)")
        // A file of that name that was there before, with other bytes (the same CA with CRLF line ends, say), is put
        // back as it was, not deleted.
        let ca = try CertificateStore(directory: URL(fileURLWithPath: store)).ca().certificate
        let file = root.appendingPathComponent("usr/local/share/ca-certificates/\(TrustStores().fileName(ca))")
        let earlier = Data(String(decoding: ca.pem, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try earlier.write(to: file)
        let again = try TestEnvironment.tlsFixtures(["ca", "install", "--dir", store, "--system", "--trust-root", root.path])
        #expect(again.status != 0, "\(again.combined)")
        #expect(try Data(contentsOf: file) == earlier, "the file that was there before was not put back as it was")
    }

    /// Issue 36, item 12: an empty --trust-root used to fail inside the tool ("can't cd to …"), and with only this CA
    /// in a root, uninstall said "removed" while the bundle (which Debian's tool rewrites only when it adds a
    /// certificate) and so every client still trusted it.
    @Test("an empty --trust-root: install makes the store's folders and trusts the CA; uninstall leaves nothing trusting it",
          .requires(Tools.openssl))
    func emptyTrustRoot() throws {
        try #require(Self.updateCACertificates != nil, "Debian's ca-certificates package (update-ca-certificates) is needed")
        let store = TestEnvironment.temporaryDirectory("install-empty").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let leaf = TestEnvironment.temporaryDirectory("install-empty-leaf").appendingPathComponent("leaf.pem").path
        #expect(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "leaf", "--host", "leaf.test",
                                                 "--cert-file", leaf]).status == 0)
        // Empty, and with the tool's folders but no other CA (where the bundle was left as it was).
        let empty = TestEnvironment.temporaryDirectory("trust-root-empty")
        let bare = TestEnvironment.temporaryDirectory("trust-root-bare")
        for folder in ["etc/ssl/certs", "usr/share/ca-certificates", "etc/ca-certificates/update.d"] {
            try FileManager.default.createDirectory(at: bare.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try Data().write(to: bare.appendingPathComponent("etc/ca-certificates.conf"))
        for root in [empty, bare] {
            let stores = ["--dir", store, "--system", "--trust-root", root.path]
            let installed = try TestEnvironment.tlsFixtures(["ca", "install"] + stores)
            #expect(installed.status == 0 && installed.stdout.contains("system: installed"), "\(installed.combined)")
            let certs = root.appendingPathComponent("etc/ssl/certs")
            #expect(try TestEnvironment.openssl(["verify", "-CAfile", certs.path + "/ca-certificates.crt", leaf]).status == 0)
            #expect(try TestEnvironment.openssl(["verify", "-CApath", certs.path, leaf]).status == 0, "no hash link")
            let removed = try TestEnvironment.tlsFixtures(["ca", "uninstall"] + stores)
            #expect(removed.status == 0 && removed.stdout.contains("system: removed"), "\(removed.combined)")
            #expect(try TestEnvironment.openssl(["verify", "-CAfile", certs.path + "/ca-certificates.crt", leaf]).status != 0,
                    "\(root.lastPathComponent): the bundle still trusts the CA")
            #expect(try TestEnvironment.openssl(["verify", "-CApath", certs.path, leaf]).status != 0,
                    "\(root.lastPathComponent): a hash link still trusts the CA")
        }
    }

    @Test("the macOS keychain: add-trusted-cert to the login keychain, then remove-trusted-cert and delete-certificate by SHA-1 (seam)")
    func keychainThroughTheSeam() throws {
        let ca = try CertificateAuthority.ephemeral()
        let pem = URL(fileURLWithPath: "/store/ca/root.pem")
        let calls = Calls()
        let environment = TrustStores.Environment(
            root: URL(fileURLWithPath: "/"), home: URL(fileURLWithPath: "/Users/dev"), isMacOS: true,
            locate: { $0 == "security" ? "/usr/bin/security" : nil },
            run: { path, arguments in
                calls.append([path] + arguments)
                return .init(status: 0, stdout: Data(), stderr: "")
            })
        let stores = TrustStores(environment: environment)
        let installed = try stores.install(ca.certificate, pemFile: pem, into: [.keychain])
        #expect(installed.map { "\($0.store.rawValue) \($0.action) \($0.location)" }
                == ["keychain installed /Users/dev/Library/Keychains/login.keychain-db"])
        _ = try stores.uninstall(ca.certificate, pemFile: pem, from: [.keychain])
        // SHA-1 as `openssl x509 -fingerprint -sha1` prints it, without colons: what delete-certificate -Z takes.
        let sha1 = try TestEnvironment.openssl(["x509", "-noout", "-fingerprint", "-sha1"], stdin: ca.certificate.pem).stdout
            .components(separatedBy: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "")
        #expect(calls.all == [
            ["/usr/bin/security", "add-trusted-cert", "-r", "trustRoot", "-k", "/Users/dev/Library/Keychains/login.keychain-db", pem.path],
            ["/usr/bin/security", "remove-trusted-cert", pem.path],
            ["/usr/bin/security", "delete-certificate", "-Z", sha1 ?? "?", "/Users/dev/Library/Keychains/login.keychain-db"],
        ])
        // On macOS the system store is the keychain's, and the keychain store exists only there.
        #expect(throws: PKIError(code: .trustStoreUnavailable, reason: "")) { try stores.install(ca.certificate, pemFile: pem, into: [.system]) }
        var linux = environment
        linux.isMacOS = false
        #expect(throws: PKIError(code: .trustStoreUnavailable, reason: "")) {
            try TrustStores(environment: linux).install(ca.certificate, pemFile: pem, into: [.keychain])
        }
    }
}

/// What the fake `security` was asked to do, from whichever thread ran it.
final class Calls: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [[String]] = []
    func append(_ call: [String]) { lock.withLock { list.append(call) } }
    var all: [[String]] { lock.withLock { list } }
}
