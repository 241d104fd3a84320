import Foundation
import Testing
@testable import TLSFixtures

/// This suite's store (TestEnvironment.suiteStore): its own CA, keys and leaves for this run.
private var cliInputStore: CertificateStore { TestEnvironment.suiteStore("CLIInput") }

/// Bad input: one line on standard error, a non-zero exit, never a crash or a stack trace.
@Suite("CLI bad input", .ownThreads)
struct CLIInputTests {
    static func expectOneLineError(_ result: Subprocess.Result, mentioning fragments: [String]) {
        #expect(result.status != 0 && !result.timedOut)
        // A crash in Swift exits through a signal (status > 128 from env) and prints "Fatal error" or a backtrace.
        #expect(result.status < 128, "crashed: \(result.stderr)")
        #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump") && !result.stderr.contains("backtrace"))
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "expected one line, got: \(result.stderr)")
        for fragment in fragments { #expect(result.stderr.contains(fragment), "missing \(fragment) in \(result.stderr)") }
    }

    @Test("invalid options", arguments: [
        // Typed options: the parser's line, naming the option and its values.
        (["--key", "dsa:1024"], ["'dsa:1024' is invalid for '--key <spec>'", "rsa:BITS", "ed25519"]),
        (["--key", "rsa:100"], ["rsa:100", "512–8192"]),
        (["--key", "ec:p999"], ["ec:p999", "p256"]),
        (["--digest", "sha3"], ["'sha3' is invalid for '--digest <digest>'", "md5, sha1, sha224, sha256, sha384, sha512"]),
        (["--eku", "flying"], ["unknown extended key usage", "serverAuth"]),
        // --issuer also takes the name of a CA issued into the store, so an unknown name is ours to report, with every value.
        (["--issuer", "nobody"], ["unknown issuer \"nobody\"", "self, root", "rsa-intermediate", "cert issue --ca"]),
        (["--host", "bad host,DNS:evil"], ["invalid host"]),
        (["--days", "5", "--not-after", "3"], ["either --days"]),
        (["--not-after", "yesterday"], ["ISO 8601"]),
    ])
    func invalidOptions(extra: [String], fragments: [String]) throws {
        let directory = TestEnvironment.temporaryDirectory("bad").path
        var arguments = ["cert", "issue", "--dir", directory, "--name", "x"]
        if !extra.contains("--host") { arguments += ["--host", "localhost"] }
        let result = try TestEnvironment.tlsFixtures(arguments + extra)
        Self.expectOneLineError(result, mentioning: fragments)
    }

    @Test("cert issue does not replace a scenario's certificate without --force")
    func scenarioCertificateProtected() throws {
        let directory = TestEnvironment.temporaryDirectory("reserved").path
        #expect(try TestEnvironment.tlsFixtures(["prepare", "--dir", directory, "pinned"]).status == 0)
        let stored = URL(fileURLWithPath: "\(directory)/certs/pinned.pem")
        let before = try Data(contentsOf: stored)
        let arguments = ["cert", "issue", "--dir", directory, "--name", "pinned", "--host", "foo.test"]
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(arguments), mentioning: ["pinned scenario", "--force"])
        #expect(try Data(contentsOf: stored) == before, "an app pinning this certificate would break")
        #expect(try TestEnvironment.tlsFixtures(arguments + ["--force"]).status == 0)
        #expect(try Data(contentsOf: stored) != before)
    }

    @Test("serve with nothing this OpenSSL can serve stops at once with the reason")
    func nothingToServe() async throws {
        let sslv3Served: Bool
        do {
            await (try await FixtureServer.start("ssl-v3", store: cliInputStore)).stop()
            sslv3Served = true
        } catch is ScenarioUnsupported {
            sslv3Served = false
        }
        // Below the ephemeral range: serve holds every named scenario's port before it learns which it cannot serve.
        let base = try ServeEndToEndTests.freePortBase()
        let result = try await TestEnvironment.tlsFixturesAwaiting(["serve", "--dir", cliInputStore.directory.path,
                                                      "--port-base", "\(base)", "ssl-v3"], timeout: sslv3Served ? 5 : 60)
        if sslv3Served {
            #expect(result.timedOut, "an OpenSSL with SSLv3 serves it until stopped: \(result.stderr)")
        } else {
            Self.expectOneLineError(result, mentioning: ["nothing to serve", "ssl-v3"])
        }
    }

    @Test("probe against a closed port says what is probably not running")
    func connectionRefused() throws {
        let port = try Ports.unused()   // nothing listens: connecting is refused
        let result = try TestEnvironment.tlsFixtures(["probe", "127.0.0.1:\(port)"])
        Self.expectOneLineError(result, mentioning: ["Connection refused", "tls-fixtures serve"])
    }

    @Test("probe --builtin-ca with no CA says so and makes none")
    func builtinCAMissing() throws {
        let directory = TestEnvironment.temporaryDirectory("noca-probe").path
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["probe", "127.0.0.1:9", "--builtin-ca", "--dir", directory]),
                                mentioning: ["no CA", "ca init"])
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/ca/root.pem"))
    }

    @Test("a truncated CA key in the store")
    func truncatedKey() throws {
        let directory = TestEnvironment.temporaryDirectory("trunc").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", directory]).status == 0)
        let key = URL(fileURLWithPath: "\(directory)/ca/root.key")
        try Data(try Data(contentsOf: key).prefix(30)).write(to: key)
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", directory]), mentioning: [key.path, "damaged"])
    }

    @Test("an unreadable certificate file and a missing one")
    func unreadableFiles() throws {
        let garbage = try TestEnvironment.file(Data("not a certificate".utf8))
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "show", garbage]), mentioning: [garbage])
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["cert", "show", "/nonexistent/x.pem"]), mentioning: ["no such file"])
    }

    @Test("a store directory without permission", .requires(asRoot: Tools.setpriv))
    func noPermission() throws {
        let parent = TestEnvironment.temporaryDirectory("perm")
        let locked = parent.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        chmod(locked.path, 0o000)
        defer { chmod(locked.path, 0o755) }
        chmod(parent.path, 0o755)
        // Root ignores permission bits, so the command runs as "nobody" then.
        let result = try TestEnvironment.tlsFixtures(asNobody: TestEnvironment.isRoot,
                                                     ["ca", "init", "--dir", locked.appendingPathComponent("store").path])
        Self.expectOneLineError(result, mentioning: ["cannot use the certificate store", "Permission denied", "--dir"])
    }

    @Test("no CA yet: show and export say how to make one")
    func noCA() throws {
        let directory = TestEnvironment.temporaryDirectory("noca").path
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "show", "--dir", directory]), mentioning: ["no CA", "ca init"])
        Self.expectOneLineError(try TestEnvironment.tlsFixtures(["ca", "export", "--dir", directory, "--out", "\(directory)/x.pem"]), mentioning: ["no CA"])
    }
}
