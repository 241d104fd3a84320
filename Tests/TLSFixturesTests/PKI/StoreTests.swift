import Foundation
import Testing
@testable import TLSFixtures

@Suite("Certificate store", .ownThreads)
struct StoreTests {
    /// Three rounds: the window between "is there a CA?" and "make one" is small, and one round on two cores can miss it.
    @Test("8 processes on one empty directory end with one CA and an intact store", .requires(Tools.openssl), arguments: 1...3)
    func concurrentInit(round: Int) throws {
        let directory = TestEnvironment.temporaryDirectory("race\(round)").appendingPathComponent("store")
        // All eight are launched before any is waited on, so they really run at once (a thread pool of two cores
        // would run blocking calls two at a time).
        let launched = try (0..<8).map { _ in try Subprocess.launch([TestEnvironment.cli, "ca", "init", "--if-missing", "--json", "--dir", directory.path]) }
        let results = launched.map { $0.wait(timeout: 120) }
        let fingerprints = try results.map { result -> String in
            #expect(result.status == 0, "\(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any]
            let summary = try #require(object?["summary"] as? [String: Any])
            return try #require(summary["sha256Fingerprint"] as? String)
        }
        #expect(fingerprints.count == 8)
        #expect(Set(fingerprints).count == 1, "different CAs: \(Set(fingerprints))")
        #expect(results.filter { $0.stdout.contains("\"created\" : true") }.count == 1)
        // The store on disk is that CA, readable by openssl, key matching certificate.
        let rootPEM = directory.appendingPathComponent("ca/root.pem").path
        let fingerprint = try TestEnvironment.openssl(["x509", "-in", rootPEM, "-noout", "-fingerprint", "-sha256"])
        // openssl prints AB:CD:…; the JSON gives lowercase hex, as probe --json does.
        #expect(fingerprint.stdout.replacingOccurrences(of: ":", with: "").lowercased().contains(fingerprints[0]))
        let certificateKey = try TestEnvironment.openssl(["x509", "-in", rootPEM, "-noout", "-pubkey"])
        let storedKey = try TestEnvironment.openssl(["pkey", "-in", directory.appendingPathComponent("ca/root.key").path, "-pubout"])
        #expect(certificateKey.status == 0 && storedKey.status == 0 && certificateKey.stdout == storedKey.stdout,
                "\(certificateKey.combined)\n\(storedKey.combined)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("ca").path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test("ca init refuses to replace a CA and leaves it byte-identical; --force moves it aside")
    func initRefuses() throws {
        let directory = TestEnvironment.temporaryDirectory("refuse").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", directory]).status == 0)
        let pem = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/root.pem"))
        let key = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/root.key"))
        let again = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", directory, "--key", "rsa:2048"])
        #expect(again.status != 0)
        #expect(again.stderr.contains("a CA already exists") && again.stderr.contains("--force"))
        #expect(again.stderr.split(separator: "\n").count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/root.pem")) == pem)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/root.key")) == key)

        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", directory, "--force"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/root.pem")) != pem)
        let replaced = try FileManager.default.contentsOfDirectory(atPath: "\(directory)/ca").filter { $0.hasPrefix("replaced-") }
        #expect(replaced.count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/ca/\(replaced[0])/root.key")) == key)
    }

    @Test("after the CA is replaced, a scenario is served under the new CA, not from the old preparation", .requires(Tools.openssl))
    func preparationFollowsTheCA() throws {
        let store = CertificateStore(directory: TestEnvironment.temporaryDirectory("replaced").appendingPathComponent("s"))
        let scenario = try ScenarioCatalog.builtIn.scenario(named: "tls-v1-3")
        let before = try store.prepare(scenario)
        let replaced = try store.initializeCA(ifExists: .replace).ca
        let after = try store.prepare(scenario)
        #expect(before.caCertificate.sha256Fingerprint != replaced.certificate.sha256Fingerprint)
        #expect(after.caCertificate.sha256Fingerprint == replaced.certificate.sha256Fingerprint)
        // openssl, not our own code, confirms the served chain builds to the new root.
        let root = try TestEnvironment.file(replaced.certificate.pem, name: "root.pem")
        let chain = try TestEnvironment.file(Certificate.pem(after.chainSent), name: "chain.pem")
        let verified = try TestEnvironment.openssl(["verify", "-CAfile", root, "-untrusted", chain, chain])
        #expect(verified.status == 0, "\(verified.combined)")
    }

    @Test("key files are 0600, store directories 0700")
    func modes() throws {
        let store = CertificateStore(directory: TestEnvironment.temporaryDirectory("modes").appendingPathComponent("s"))
        var request = CertificateRequest(name: "leaf")
        request.hosts = ["localhost"]
        _ = try store.issue(request)
        #expect(FileSystem.mode(of: store.directory) == 0o700)
        for sub in ["ca", "keys", "certs", "locks"] { #expect(FileSystem.mode(of: store.directory.appendingPathComponent(sub)) == 0o700, "\(sub)") }
        #expect(FileSystem.mode(of: store.directory.appendingPathComponent("ca/root.key")) == 0o600)
        #expect(FileSystem.mode(of: store.directory.appendingPathComponent("keys/leaf.ec-p256.key")) == 0o600)
    }

    @Test("exporting into the user's own folder leaves that folder's permissions alone")
    func exportKeepsFolderModes() throws {
        let parent = TestEnvironment.temporaryDirectory("export-modes")
        let folder = parent.appendingPathComponent("private")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o700)
        let ca = try CertificateAuthority.ephemeral()
        try ExportWriter.write(ca.certificate.der, to: folder.appendingPathComponent("ca.cer"), force: false)
        _ = try ExportWriter.write(try ca.issueServerCertificate(), name: "leaf", to: folder, force: false)
        #expect(FileSystem.mode(of: folder) == 0o700, "`ca export --out ~/ca.cer` must not open up ~")
        // A folder it has to create (an out-dir: a file's folder must exist) is made readable (0755, less what the umask
        // takes), as exports are meant to be shared: not the store's 0700.
        _ = try ExportWriter.write(try ca.issueServerCertificate(), name: "leaf", to: parent.appendingPathComponent("new"), force: false)
        #expect(FileSystem.mode(of: parent.appendingPathComponent("new")) == 0o755 & ~Self.umask)
    }

    /// This process's umask, read without changing it (umask(2) would, for every thread): Linux's /proc/self/status;
    /// elsewhere the usual 022.
    static var umask: mode_t {
        #if os(Linux)
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        let value = line.map { $0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces) }
        return value.flatMap { mode_t($0, radix: 8) } ?? 0o022
        #else
        return 0o022
        #endif
    }

    @Test("an unchanged profile generates no key and signs nothing the second time; a change re-issues on the same key")
    func reuse() throws {
        let directory = TestEnvironment.temporaryDirectory("reuse")
        let store = CertificateStore(directory: directory)
        var request = CertificateRequest(name: "api")
        request.hosts = ["api.fixtures.test"]
        request.key = .rsa(bits: 1024)
        let first = try store.issue(request)

        // A second process-like view of the same directory: nothing cached in memory. Counted per store, because
        // other tests generate keys in this process at the same time.
        let fresh = CertificateStore(directory: directory)
        let second = try fresh.issue(request)
        #expect(fresh.keysGenerated == 0)
        #expect(fresh.certificatesIssued == 0)
        #expect(second.certificate == first.certificate)

        request.digest = .sha1
        let third = CertificateStore(directory: directory)
        let reissued = try third.issue(request)
        #expect(reissued.certificate != first.certificate)
        #expect(reissued.certificate.spkiSHA256 == first.certificate.spkiSHA256, "re-issue keeps the key (SPKI pins survive)")
        #expect(third.keysGenerated == 0 && third.certificatesIssued == 1)
    }

    @Test("the CLI reports zero keys generated on an unchanged second run")
    func cliReuse() throws {
        let directory = TestEnvironment.temporaryDirectory("clireuse").path
        let arguments = ["cert", "issue", "--dir", directory, "--name", "web", "--host", "localhost", "--key", "rsa:2048", "--json"]
        let first = try TestEnvironment.tlsFixtures(arguments)
        let second = try TestEnvironment.tlsFixtures(arguments)
        func generated(_ r: Subprocess.Result) throws -> Int {
            try #require((try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])?["keysGenerated"] as? Int)
        }
        #expect(try generated(first) == 2, "the CA key and the leaf key")
        #expect(try generated(second) == 0)
    }

    @Test("a damaged leaf is reported with its path and re-issued; a damaged CA is reported, never replaced")
    func damage() throws {
        let directory = TestEnvironment.temporaryDirectory("damage")
        var request = CertificateRequest(name: "leaf")
        request.hosts = ["localhost"]
        _ = try CertificateStore(directory: directory).issue(request)
        let leaf = directory.appendingPathComponent("certs/leaf.pem")
        try Data("-----BEGIN CERTIFICATE-----\ngarbage\n".utf8).write(to: leaf)
        let store = CertificateStore(directory: directory)
        let reissued = try store.issue(request)
        #expect(store.warnings.contains { $0.contains(leaf.path) })
        #expect(try Certificate.all(pem: try Data(contentsOf: leaf)).first == reissued.certificate)

        let rootKey = directory.appendingPathComponent("ca/root.key")
        let truncated = try Data(contentsOf: rootKey).prefix(40)
        try truncated.write(to: rootKey)
        #expect { try CertificateStore(directory: directory).ca() } throws: { "\($0)".contains(rootKey.path) && "\($0)".contains("damaged") }
        #expect(try Data(contentsOf: rootKey) == truncated, "the CA is never regenerated over")
    }
}

@Suite("A prepared store that cannot be written", .requires(asRoot: Tools.setpriv), .ownThreads)
struct ReadOnlyStoreTests {
    @Test("reads work without locks; anything that needs writing fails with the reason")
    func preparedReadOnlyStore() throws {
        let directory = TestEnvironment.temporaryDirectory("ro").appendingPathComponent("store")
        let arguments = ["cert", "issue", "--dir", directory.path, "--name", "api", "--host", "localhost"]
        #expect(try TestEnvironment.tlsFixtures(arguments).status == 0)
        // Readable by everyone (keys included: this is a throwaway copy), writable by no one but its owner.
        #expect(try Subprocess.run(["chmod", "-R", "a+rX,go-w", directory.deletingLastPathComponent().path]).status == 0)
        // Root ignores permission bits, so the CLI runs as "nobody" then; otherwise the owner loses write access.
        let asNobody = TestEnvironment.isRoot
        if !asNobody {
            #expect(try Subprocess.run(["chmod", "-R", "a-w", directory.path]).status == 0)
        }
        defer { _ = try? Subprocess.run(["chmod", "-R", "u+w", directory.path]) }
        let reused = try TestEnvironment.tlsFixtures(asNobody: asNobody, arguments)
        #expect(reused.status == 0, "\(reused.stderr)")
        #expect(reused.stdout.contains("Reused api"))
        let fresh = try TestEnvironment.tlsFixtures(asNobody: asNobody,
                                                    ["cert", "issue", "--dir", directory.path, "--name", "other", "--host", "localhost"])
        // Keys others can read are used only when root made them so, and each is named in a warning first.
        let (warnings, error) = Self.splitWarnings(fresh)
        #expect(warnings.allSatisfy { $0.hasSuffix("root made it so, so it is used as it is, but any user here can read this key") },
                "\(warnings)")
        #expect(warnings.count == (asNobody ? 1 : 0), "one warning for the CA key when others read root's store: \(warnings)")
        CLIInputTests.expectOneLineError(error, mentioning: ["cannot use the certificate store", "Permission denied"])
    }

    static func splitWarnings(_ result: Subprocess.Result) -> ([Substring], Subprocess.Result) {
        var rest = result
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        let warnings = lines.filter { $0.hasPrefix("warning: ") }
        rest.stderr = lines.filter { !$0.hasPrefix("warning: ") }.joined(separator: "\n")
        return (warnings, rest)
    }
}
