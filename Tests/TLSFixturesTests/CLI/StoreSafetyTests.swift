import Foundation
import Testing
@testable import TLSFixtures

/// Issue 29, items 1–5: a `cert issue` or `ca init` that is refused leaves the store exactly as it was (every file
/// hashed before and after), names the option at fault, and refuses what no certificate can carry.
@Suite("Store safety and validation (cert issue, ca init)", .ownThreads)
struct StoreSafetyTests {
    /// Every entry under `directory` (files, folders, links) with its mode and the SHA-256 of its bytes: equal
    /// snapshots mean nothing was written, made, moved or re-permissioned.
    static func snapshot(_ directory: URL) throws -> [String: String] {
        var result: [String: String] = [:]
        let base = directory.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return [:] }
        for case let relative as String in walker {
            let path = base + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let mode = String(info.st_mode, radix: 8)
            switch info.st_mode & S_IFMT {
            case S_IFREG: result[relative] = "\(mode) " + Digest.sha256(try Data(contentsOf: URL(fileURLWithPath: path))).hexString
            case S_IFLNK: result[relative] = "\(mode) -> " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")
            default: result[relative] = mode
            }
        }
        return result
    }

    /// A store with a CA and one certificate `api` (a.test) also written to `out/`.
    static func prepared() throws -> (store: String, out: URL) {
        let root = TestEnvironment.temporaryDirectory("safety")
        let store = root.appendingPathComponent("store").path
        let out = root.appendingPathComponent("out")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store]).status == 0)
        let first = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "api", "--host", "a.test", "--out-dir", out.path])
        #expect(first.status == 0, "\(first.stderr)")
        return (store, out)
    }

    @Test("every refused command leaves the store and the user's files byte-identical")
    func refusalsChangeNothing() throws {
        let (store, out) = try Self.prepared()
        let root = out.deletingLastPathComponent()
        let aFile = try TestEnvironment.file(Data("not a folder".utf8), name: "plain")
        let otherFile = root.appendingPathComponent("other.pem")
        try Data("someone else's certificate".utf8).write(to: otherFile)
        let badCSR = try TestEnvironment.file(Data("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n".utf8),
                                              name: "bad.csr")
        let issue = ["cert", "issue", "--dir", store]
        let refused: [(arguments: [String], says: String)] = [
            // Item 2: the store used to re-issue api before --out-dir refused.
            (issue + ["--name", "api", "--host", "b.test", "--out-dir", out.path], "--out-dir: \(out.path)/api.pem exists and differs"),
            (issue + ["--name", "fresh", "--host", "a.test", "--cert-file", otherFile.path], "--cert-file: \(otherFile.path) exists and differs"),
            (issue + ["--name", "api", "--host", "a.test", "--out-dir", "\(store)/certs"], "inside the certificate store"),
            // Item 3: --out-dir problems name --out-dir, never the store.
            (issue + ["--name", "fresh", "--host", "a.test", "--out-dir", aFile], "--out-dir: cannot write to \(aFile)"),
            (issue + ["--name", "fresh", "--host", "a.test", "--out-dir", "\(aFile)/below"], "is a file, not a folder"),
            // Item 1: the store's own names.
            (issue + ["--name", "client", "--host", "x.test"], "the client identity"),
            (issue + ["--name", "backup", "--host", "x.test"], "backup pin's key"),
            (issue + ["--name", "pinned", "--host", "x.test"], "pinned scenario"),
            (issue + ["--name", "tls-v1-0.domains-0123abcd", "--host", "x.test"], "under serve --domain"),
            (issue + ["--name", "mine", "--host", "x.test", "--reuse-key-of", "backup"], "--reuse-key-of backup"),
            // Items 4 and 5.
            (issue + ["--name", "fresh", "--host", "a.test", "--issuer", "nobody", "--out-dir", out.path], "unknown issuer"),
            (issue + ["--name", "fresh", "--host", "999.1.1.1"], "not an IP address"),
            (issue + ["--name", "fresh", "--csr", badCSR, "--cert-file", root.appendingPathComponent("csr.pem").path], "--csr"),
            (["ca", "init", "--dir", store], "a CA already exists"),
            (["ca", "init", "--dir", store, "--force", "--days", "1"], "expired as it is made"),
        ]
        for (arguments, says) in refused {
            let storeBefore = try Self.snapshot(URL(fileURLWithPath: store))
            let filesBefore = try Self.snapshot(root)
            let result = try TestEnvironment.tlsFixtures(arguments)
            CLIInputTests.expectOneLineError(result, mentioning: [says])
            #expect(!result.stderr.contains("certificate store \(store)") || says.contains("inside"),
                    "blamed the store: \(result.stderr)")
            #expect(try Self.snapshot(URL(fileURLWithPath: store)) == storeBefore, "the store changed: \(arguments)")
            #expect(try Self.snapshot(root) == filesBefore, "the user's files changed: \(arguments)")
        }
        // And with --force the first one goes through: the store and out/ both change.
        let forced = try TestEnvironment.tlsFixtures(issue + ["--name", "api", "--host", "b.test", "--out-dir", out.path, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        let leaf = try TestEnvironment.openssl(["x509", "-in", "\(store)/certs/api.pem", "-noout", "-ext", "subjectAltName"]).stdout
        #expect(leaf.contains("DNS:b.test"), "\(leaf)")
    }

    @Test("an --out-dir this user cannot write is named as --out-dir, before the store is touched", .requires(Tools.setpriv))
    func unwritableOutDir() async throws {
        // Root ignores permissions: run as nobody, with a store nobody may use (its own, with a CA, so issuing would
        // change it) and an out-dir nobody may not write.
        let root = TestEnvironment.temporaryDirectory("ro-out")
        let readOnly = root.appendingPathComponent("readonly")
        try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: true)
        chmod(readOnly.path, 0o555)
        let store = TestEnvironment.temporaryDirectory("ro-store").appendingPathComponent("store")
        #expect(try await TestEnvironment.tlsFixturesAwaiting(["ca", "init", "--dir", store.path]).status == 0)
        let asNobody = getuid() == 0
        if asNobody {
            for path in [store.path] + (FileManager.default.subpaths(atPath: store.path) ?? []).map({ "\(store.path)/\($0)" }) {
                #expect(chown(path, 65534, 65534) == 0, "chown \(path)")
            }
        }
        let before = try Self.snapshot(store)
        #expect(before.keys.contains("ca/root.pem"), "\(before.keys)")
        let result = try await TestEnvironment.tlsFixturesAwaiting(asNobody: asNobody, [
            "cert", "issue", "--dir", store.path, "--name", "x", "--host", "a.test",
            "--out-dir", readOnly.appendingPathComponent("certs").path])
        CLIInputTests.expectOneLineError(result, mentioning: ["--out-dir: cannot write to", "is not writable", "choose a folder you can write to"])
        #expect(!result.stderr.contains("--dir or TLS_FIXTURES_CERTS"), "\(result.stderr)")
        // Before the store is touched: no key, no certificate, nothing re-permissioned, byte for byte.
        #expect(try Self.snapshot(store) == before, "the store changed before --out-dir was refused")
    }

    @Test("an unchanged re-run reuses the certificate and leaves the user's files as they were")
    func unchangedRerunWritesNothing() throws {
        let (store, out) = try Self.prepared()
        let before = try Self.snapshot(out)
        let again = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "api", "--host", "a.test", "--out-dir", out.path])
        #expect(again.status == 0 && again.stdout.contains("Reused api"), "\(again.combined)")
        #expect(try Self.snapshot(out) == before, "an unchanged re-run rewrote the user's files")
    }

    // MARK: Item 4

    /// A store whose root CA ended yesterday, made through the library (as a CA made years ago would be).
    static func expiredStore() throws -> String {
        let directory = TestEnvironment.temporaryDirectory("expired-ca")
        let ca = directory.appendingPathComponent("ca")
        try FileManager.default.createDirectory(at: ca, withIntermediateDirectories: true)
        chmod(ca.path, 0o700)
        let key = try KeySpec.ec(.p256).generate()
        var profile = CertificateProfile.authority(commonName: "old CA", nameConstraints: .localDevelopment)
        profile.validity = Validity(notBefore: .daysFromNow(-30), notAfter: .daysFromNow(-1))
        let certificate = try CertificateAuthority.selfSigned(profile, key: key).certificate
        try FileSystem.writeAtomically(try key.pem, to: ca.appendingPathComponent("root.key"), mode: 0o600)
        try FileSystem.writeAtomically(certificate.pem, to: ca.appendingPathComponent("root.pem"), mode: 0o644)
        return directory.path
    }

    @Test("ca init refuses a CA that would be expired; one of a few days is made with a warning")
    func caInitDays() throws {
        for days in ["1", "0", "-5"] {
            let store = TestEnvironment.temporaryDirectory("days").appendingPathComponent("store")
            CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path, "--days", days]),
                                             mentioning: ["--days \(days)", "expired as it is made", "at least 2"])
            #expect(!FileManager.default.fileExists(atPath: store.path), "a refused ca init made the store")
        }
        let store = TestEnvironment.temporaryDirectory("days").path
        let short = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store, "--days", "5"])
        #expect(short.status == 0 && short.stderr.contains("expires on") && short.stderr.contains("ca init --force"), "\(short.stderr)")
        // The library refuses it too, whatever calls it.
        #expect(throws: PKIError(code: .expiredCA, reason: "")) {
            try CertificateStore(directory: TestEnvironment.temporaryDirectory("lib")).initializeCA(CAOptions(days: 1))
        }
    }

    @Test("every command that uses an expired CA says so, with the fix", arguments: [
        ["ca", "show"], ["cert", "issue", "--name", "x", "--host", "a.test"], ["prepare", "tls-v1-2"], ["pins"],
    ])
    func expiredCAWarned(_ command: [String]) throws {
        let store = try Self.expiredStore()
        let result = try TestEnvironment.tlsFixtures(command + ["--dir", store])
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("expired on") }
        #expect(warnings.count == 1, "\(command): \(result.stderr)")
        #expect(warnings.first?.contains("tls-fixtures ca init --force") == true && warnings.first?.contains("certificate has expired") == true,
                "\(result.stderr)")
    }

    // MARK: Item 5

    @Test("values no certificate can carry are one-line errors, not silently changed or misread", arguments: [
        (["--not-after", "2021-02-30"], ["--not-after", "\"2021-02-30\"", "real ISO 8601 date"]),
        (["--not-before", "2024-13-01"], ["--not-before", "real ISO 8601 date"]),
        (["--host", "999.1.1.1"], ["invalid host \"999.1.1.1\"", "not an IP address"]),
        (["--host", "a.test."], ["invalid host \"a.test.\"", "trailing dot"]),
        (["--host", "-a.test"], ["invalid host \"-a.test\"", "starts nor ends with '-'"]),
        (["--host", "a.test", "--days", "-5"], ["--days must be positive, not -5"]),
        (["--host", "a.test", "--days", "five"], ["--days takes a whole number"]),
        (["--host", "a.test", "--serial", "0"], ["--serial", "positive"]),
        (["--host", "a.test", "--serial", "0x" + String(repeating: "f", count: 42)], ["--serial", "at most 20 octets"]),
        (["--host", "a.test", "--country", "Germany"], ["invalid country \"Germany\""]),
        (["--email", "no-at-sign"], ["invalid host \"no-at-sign\"", "local@domain"]),
        (["--uri", "not a uri"], ["invalid host \"not a uri\"", "absolute"]),
    ])
    func invalidValues(_ extra: [String], _ fragments: [String]) throws {
        let store = TestEnvironment.temporaryDirectory("values").path
        var arguments = ["cert", "issue", "--dir", store, "--name", "x"]
        if !extra.contains("--host") && !extra.contains("--email") && !extra.contains("--uri") { arguments += ["--host", "a.test"] }
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(arguments + extra), mentioning: fragments)
        CLIInputTests.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store, "--days", "-5"]),
                                         mentioning: ["--days -5"])
    }

    @Test("real dates and names still pass: Feb 29 of a leap year, a wildcard, an IDN, an IPv6 address")
    func validValues() throws {
        let store = TestEnvironment.temporaryDirectory("valid").path
        let result = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store, "--name", "ok", "--host", "*.a.test",
                                                      "--host", "::1", "--host", "bücher.test", "--not-before", "2024-02-29",
                                                      "--not-after", "2030-01-01T00:00:00Z"])
        #expect(result.status == 0, "\(result.stderr)")
        let text = try TestEnvironment.openssl(["x509", "-in", "\(store)/certs/ok.pem", "-noout", "-text"]).stdout
        #expect(text.contains("Feb 29 00:00:00 2024 GMT") && text.contains("DNS:xn--bcher-kva.test"), "\(text)")
    }
}
