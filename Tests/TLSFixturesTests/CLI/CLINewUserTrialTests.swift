import Foundation
import NIOEmbedded
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet

/// What a new user's trial of the CLI met: each defect here, with the one line it now gets (or the behaviour it now has).
@Suite("CLI: the new-user trial")
struct CLINewUserTrialTests {
    static func cli(_ arguments: [String], timeout: TimeInterval = 120) async throws -> Subprocess.Result {
        try await TestEnvironment.tlsFixturesAwaiting(arguments, timeout: timeout)
    }

    /// Words of the Swift API a CLI user cannot act on.
    static let apiWords = ["ScenarioCatalog", "RemoteFixtures", "BuiltinAuthority", "initializeCA(", "FixtureConfiguration"]

    static func expectNoAPIWords(_ text: String, _ context: String) {
        for word in apiWords { #expect(!text.contains(word), "\(context): \(word) in \(text)") }
    }

    // MARK: 1. ats check --plist without NSAppTransportSecurity

    @Test("ats check --plist: an Info.plist without NSAppTransportSecurity is ATS's defaults, said in one line")
    func plistWithoutATSKey() async throws {
        try await withFixture("tls-v1-2", store: TestEnvironment.sharedStore) { fixture in
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            let host = "tls-v1-2.fixtures.test"
            let target = ["--trust-ca", ca, "--resolve", "\(host):\(fixture.port):127.0.0.1", "https://\(host):\(fixture.port)/"]
            let plist = try TestEnvironment.file(Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>CFBundleName</key><string>MyApp</string></dict></plist>
                """.utf8), name: "Info.plist")
            let withPlist = try await Self.cli(["ats", "check", "--plist", plist] + target)
            let without = try await Self.cli(["ats", "check"] + target)
            #expect(withPlist.status == 0, "\(withPlist.combined)")
            #expect(withPlist.stdout == without.stdout, "the same verdict as no --plist")
            let lines = withPlist.stderr.split(separator: "\n")
            #expect(lines.count == 1 && withPlist.stderr.hasPrefix("note: ") && withPlist.stderr.contains("ATS's defaults"),
                    "\(withPlist.stderr)")
            #expect(!withPlist.stderr.contains("Error") && !withPlist.stderr.contains("ATSPolicy"), "\(withPlist.stderr)")
            // Not a plist, or a key of the wrong type: still errors.
            let garbage = try TestEnvironment.file(Data("not a plist <".utf8), name: "Info.plist")
            CLIInputTests.expectOneLineError(try await Self.cli(["ats", "check", "--plist", garbage] + target), mentioning: ["malformed"])
            let wrongType = try TestEnvironment.file(Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>NSAppTransportSecurity</key><string>yes</string></dict></plist>
                """.utf8), name: "Info.plist")
            CLIInputTests.expectOneLineError(try await Self.cli(["ats", "check", "--plist", wrongType] + target),
                                             mentioning: ["NSAppTransportSecurity is a string"])
        }
    }

    // MARK: 2. Swift API names in CLI and control API errors

    @Test("every command that takes scenario names says `tls-fixtures scenarios list`, serve included")
    func unknownScenarioEverywhere() async throws {
        let directory = TestEnvironment.temporaryDirectory("trial-names").path
        for arguments in [["serve", "--dir", directory, "nosuch"], ["prepare", "--dir", directory, "nosuch"],
                          ["pins", "nosuch"], ["ats", "exception", "--dir", directory, "nosuch"],
                          ["scenarios", "show", "nosuch"]] {
            let result = try await Self.cli(arguments)
            CLIInputTests.expectOneLineError(result, mentioning: ["unknown scenario \"nosuch\"", "tls-fixtures scenarios list"])
            Self.expectNoAPIWords(result.stderr, "\(arguments)")
        }
    }

    @Test("an inline scenario an EC issuer cannot sign: the control API's fix is in the scenario file's keys")
    func inlineDigestInFileWords() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let fleet = try await FleetTests.fleet(on: loop, origin: Date())
        do {
            let json = #"{"name": "md5-mine", "group": "custom", "summary": "s", "tls": {}, "#
                + #""certificate": {"issuer": "root", "key": "ec:p256", "digest": "md5"}, "expect": {"ats": "block"}}"#
            let scenario = try ScenarioCatalog.decode(Data(json.utf8), source: "scenario")
            _ = try await fleet.startLeased(LeaseRequest(scenario: .inline(scenario)))
            Issue.record("an EC issuer signed with md5")
        } catch {
            let text = "\(error)"
            #expect(text.contains("ECDSA-with-MD5") && text.contains("\"issuer\": \"rsa-intermediate\""), "\(text)")
            Self.expectNoAPIWords(text, "control API")
        }
        await fleet.stop()
    }

    // MARK: 3. ats diagnose on localhost

    @Test("ats diagnose warns, as ats check does and in its words, that ATS does not apply to localhost")
    func diagnoseLocalhost() async throws {
        try await withFixture("tls-v1-2", store: TestEnvironment.sharedStore) { fixture in
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            let url = "https://localhost:\(fixture.port)/"
            let diagnose = try await Self.cli(["ats", "diagnose", "--trust-ca", ca, url])
            #expect(diagnose.status == 0 && diagnose.stdout.contains("Result : PASS"), "\(diagnose.combined)")
            let warning = try #require(diagnose.stderr.split(separator: "\n").first { $0.hasPrefix("warning: ") })
                .dropFirst("warning: ".count)
            #expect(warning.contains("ATS does not apply") && warning.contains("NAME.fixtures.test"), "\(warning)")
            let check = try await Self.cli(["ats", "check", "--trust-ca", ca, url])
            #expect(check.stdout.contains("!! \(warning)"), "one wording for both: \(check.stdout)")
            // A qualified name ATS applies to: no warning.
            let qualified = try await Self.cli(["ats", "diagnose", "--trust-ca", ca, "--resolve", "tls-v1-2.fixtures.test:\(fixture.port):127.0.0.1",
                                          "https://tls-v1-2.fixtures.test:\(fixture.port)/"])
            #expect(!qualified.stderr.contains("ATS does not apply"), "\(qualified.stderr)")
        }
    }

    // MARK: 4. A CA key default clients refuse

    @Test("ca init refuses an RSA key below 2048 bits unless --allow-weak-key; a weak CA is named by probe and prepare")
    func weakCAKey() async throws {
        for bits in [512, 1024] {
            let store = TestEnvironment.temporaryDirectory("trial-weak").appendingPathComponent("store").path
            let refused = try await Self.cli(["ca", "init", "--dir", store, "--key", "rsa:\(bits)"])
            CLIInputTests.expectOneLineError(refused, mentioning: ["RSA-\(bits)", "CA certificate key too weak", "--allow-weak-key", "rsa:2048"])
            #expect(!FileManager.default.fileExists(atPath: "\(store)/ca/root.pem"), "no CA made")
        }
        let store = TestEnvironment.temporaryDirectory("trial-weak").appendingPathComponent("store").path
        let made = try await Self.cli(["ca", "init", "--dir", store, "--key", "rsa:1024", "--allow-weak-key"])
        #expect(made.status == 0, "\(made.combined)")
        #expect(made.stderr.contains("CA certificate key too weak") && made.stderr.contains("ca init --force"), "\(made.stderr)")
        let port = try Ports.unused()
        let probe = try await Self.cli(["probe", "--builtin-ca", "--dir", store, "127.0.0.1:\(port)"])
        #expect(probe.stderr.contains("RSA-1024") && probe.stderr.contains("CA certificate key too weak"), "\(probe.stderr)")
        let prepare = try await Self.cli(["prepare", "--dir", store, "tls-v1-2"])
        #expect(prepare.status == 0 && prepare.stderr.contains("CA certificate key too weak"), "\(prepare.combined)")
        #expect(try await Self.cli(["ca", "init", "--dir", TestEnvironment.temporaryDirectory("trial-strong").path, "--key", "rsa:2048"]).status == 0)
    }

    // MARK: 5. File flags that did not say which flag

    @Test("a file a flag names that cannot be read: the line names the flag and a fix")
    func fileFlags() async throws {
        let directory = TestEnvironment.temporaryDirectory("trial-files")
        let store = directory.appendingPathComponent("store").path
        let folder = directory.path   // a folder where a file belongs
        #expect(try await Self.cli(["cert", "issue", "--dir", store, "--name", "c", "--host", "localhost", "--out-dir", folder]).status == 0)
        let cert = "\(folder)/c.pem"
        let cases: [([String], [String])] = [
            (["probe", "localhost:1", "--ca", "/nonexistent.pem"], ["--ca /nonexistent.pem", "no such file", "check the path"]),
            (["cert", "issue", "--dir", store, "--name", "u", "--host", "localhost", "--use-key", "/nope.key"],
             ["--use-key /nope.key", "no such file"]),
            (["cert", "issue", "--dir", store, "--name", "u", "--host", "localhost", "--use-key", folder], ["--use-key \(folder)", "directory"]),
            (["cert", "issue", "--dir", store, "--name", "u", "--host", "localhost", "--issuer-cert", cert, "--issuer-key", folder],
             ["--issuer-key \(folder)", "directory"]),
            (["probe", "localhost:1", "--client-cert", cert, "--client-key", folder], ["--client-key \(folder)", "directory"]),
            (["serve", "--dir", store, "--scenarios", "\(folder)/nonexist"], ["--scenarios", "no such folder", "scenario files"]),
            (["serve", "--dir", store, "--connection-log", ""], ["--connection-log", "empty"]),
        ]
        for (arguments, fragments) in cases {
            let result = try await Self.cli(arguments)
            CLIInputTests.expectOneLineError(result, mentioning: fragments)
            #expect(!result.stderr.contains("The file doesn’t exist"), "Foundation's words: \(result.stderr)")
        }
        // Unreadable: as "nobody" when root, which ignores permission bits.
        let key = "\(folder)/secret.key"
        try Data("-----BEGIN PRIVATE KEY-----\n".utf8).write(to: URL(fileURLWithPath: key))
        chmod(key, 0o000)
        chmod(cert, 0o644)
        let unreadable = try await TestEnvironment.tlsFixturesAwaiting(
            asNobody: getuid() == 0, ["probe", "localhost:1", "--client-cert", cert, "--client-key", key])
        CLIInputTests.expectOneLineError(unreadable, mentioning: ["--client-key \(key)", "permission denied", "readable"])
    }

    @Test("serve --bind with an address this machine does not have names --bind and the addresses to use")
    func bindElsewhere() async throws {
        let base = try ServeEndToEndTests.freePortBase()
        let result = try await Self.cli(["serve", "--dir", TestEnvironment.sharedStore.directory.path, "--port-base", "\(base)",
                                   "--bind", "10.255.255.1", "tls-v1-2"], timeout: 60)
        CLIInputTests.expectOneLineError(result, mentioning: ["--bind 10.255.255.1", "not an address of this machine", "127.0.0.1, ::1", "ip addr"])
    }

    // MARK: 6. --proxy-port in use

    @Test("serve --proxy-port on a port in use names --proxy-port, not --port-base")
    func proxyPortInUse() async throws {
        try await withFixture("tls-v1-2", store: TestEnvironment.sharedStore) { fixture in
            let base = try ServeEndToEndTests.freePortBase()
            let result = try await Self.cli(["serve", "--dir", TestEnvironment.sharedStore.directory.path, "--port-base", "\(base)",
                                       "--proxy-port", "\(fixture.port)", "tls-v1-2"], timeout: 60)
            CLIInputTests.expectOneLineError(result, mentioning: ["port \(fixture.port)", "already in use", "--proxy-port"])
            #expect(!result.stderr.contains("--port-base"), "\(result.stderr)")
        }
    }

    // MARK: 7. Output files in folders that do not exist

    @Test("an output file's folder must exist (nothing is made); --out-dir is made, as documented")
    func outputFolders() async throws {
        let directory = TestEnvironment.temporaryDirectory("trial-out")
        let store = directory.appendingPathComponent("store").path
        #expect(try await Self.cli(["ca", "init", "--dir", store]).status == 0)
        let missing = directory.appendingPathComponent("missing/dir")
        let issue = ["cert", "issue", "--dir", store, "--name", "w", "--host", "localhost"]
        for (arguments, flag) in [(["ca", "export", "--dir", store, "--out", "\(missing.path)/x.pem"], "--out"),
                                  (issue + ["--cert-file", "\(missing.path)/w.pem"], "--cert-file"),
                                  (issue + ["--key-file", "\(missing.path)/w.key"], "--key-file"),
                                  (issue + ["--p12-file", "\(missing.path)/w.p12"], "--p12-file"),
                                  (issue + ["--bundle-file", "\(missing.path)/w-bundle.pem"], "--bundle-file")] {
            let result = try await Self.cli(arguments)
            CLIInputTests.expectOneLineError(result, mentioning: [flag, "no such folder", "mkdir -p"])
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("missing").path), "\(flag) made the folder")
        }
        let outDir = directory.appendingPathComponent("new/out")
        #expect(try await Self.cli(issue + ["--out-dir", outDir.path]).status == 0)
        #expect(FileManager.default.fileExists(atPath: outDir.appendingPathComponent("w.pem").path))
        let help = try await Self.cli(["cert", "issue", "--help"])
        #expect(help.stdout.contains("made if missing"), "--out-dir's making is documented")
    }

    // MARK: 8. --port-base and the ports above the scenarios

    @Test("serve --port-base counts the OCSP responder at base + 99, and warns from 32768 on")
    func portBase() async throws {
        // The highest offset from the base serve listens on: the last scenario's, or the OCSP responder's above them.
        let highest = max((ScenarioCatalog.builtIn.scenarios.compactMap(\.port).max() ?? 0) - ScenarioCatalog.defaultPortBase,
                          ScenarioCatalog.revocationResponderOffset)
        let over = try await Self.cli(["serve", "--port-base", "\(65_536 - highest)", "tls-v1-2"])
        CLIInputTests.expectOneLineError(over, mentioning: ["above 65535", "base + \(highest)", "at most \(65_535 - highest)"])
        // In the ephemeral range: served, with one line of warning.
        let base = try #require((0..<40).lazy.map { _ in Int.random(in: 40_000...(65_435 - highest)) }
            .first { base in (base...(base + highest)).allSatisfy { Ports.canListen($0) } })
        let result = try await Self.cli(["serve", "--dir", TestEnvironment.sharedStore.directory.path, "--port-base", "\(base)", "tls-v1-2"],
                                  timeout: 20)
        #expect(result.timedOut, "\(result.combined)")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("ephemeral range") }
        #expect(warnings.count == 1 && warnings[0].hasPrefix("warning: --port-base \(base)") && warnings[0].contains("32767"),
                "\(result.stderr)")
        // 11. The Control API line is a command that works: the JSON content type the API requires.
        #expect(result.stdout.contains("curl -H 'Content-Type: application/json' -d '{\"scenario\": \"NAME\"}'"), "\(result.stdout)")
        // 10. One scenario, not "1 scenarios".
        #expect(result.stdout.contains("Serving 1 scenario."), "\(result.stdout)")
    }

    // MARK: 9. probe's rough edges

    @Test("probe: a key that is not the certificate's is a usage error naming both flags, before connecting")
    func clientKeyMismatch() async throws {
        let directory = TestEnvironment.temporaryDirectory("trial-client")
        let store = directory.appendingPathComponent("store").path
        for name in ["one", "two"] {
            #expect(try await Self.cli(["cert", "issue", "--dir", store, "--name", name, "--host", "localhost", "--out-dir", directory.path]).status == 0)
        }
        let port = try Ports.unused()   // nothing listens: a connection attempt would say "Connection refused"
        let result = try await Self.cli(["probe", "127.0.0.1:\(port)", "--client-cert", "\(directory.path)/one.pem",
                                   "--client-key", "\(directory.path)/two.key"])
        CLIInputTests.expectOneLineError(result, mentioning: ["--client-key", "--client-cert", "not the key"])
        #expect(result.status == 1 && !result.stderr.contains("refused"), "\(result.combined)")
    }

    @Test("probe https:// against a plain HTTP port says to use http://")
    func plainHTTPPort() async throws {
        try await withFixture("http", store: TestEnvironment.sharedStore) { fixture in
            let result = try await Self.cli(["probe", "https://localhost:\(fixture.port)/"])
            #expect(result.status == 2)
            #expect(result.stdout.contains("plain HTTP") && result.stdout.contains("use http://localhost:\(fixture.port)/"), "\(result.stdout)")
        }
    }

    @Test("probe --help: the pin example trusts the built-in CA, and the exit statuses include the parser's 64")
    func probeHelp() async throws {
        let help = try await Self.cli(["probe", "--help"])
        let flat = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(flat.contains("probe localhost:9838 --builtin-ca --pin"), "\(flat)")
        #expect(flat.contains("64 a flag or value the parser does not take"), "\(flat)")
        #expect(try await Self.cli(["probe", "x:1", "--tls-min", "0.9"]).status == 64)
    }

    // MARK: 10. Wording

    @Test("wording: one scenario, one unsupported, whole seconds")
    func wording() async throws {
        let directory = TestEnvironment.temporaryDirectory("trial-words").path
        let prepared = try await Self.cli(["prepare", "--dir", directory, "tls-v1-2"])
        #expect(prepared.stdout.contains("Prepared 1 scenario in"), "\(prepared.stdout)")
        let why = FixtureFleet.why(.unsupported(reason: "unsupported by the linked OpenSSL (x): no SSLv3"))
        #expect(!why.contains("unsupported: unsupported"), "\(why)")
        CLIInputTests.expectOneLineError(try await Self.cli(
            ["connections", "--wait", "31.0", "http://localhost:1/", "x"]),
            mentioning: ["--wait 31 is out of range"])
    }

    // MARK: 11. POST examples

    @Test("every POST example with curl in the documentation sends the JSON content type the control API requires")
    func documentedPostExamples() async throws {
        let text = try Documentation.pages().map(\.text).joined(separator: "\n")
        let posts = text.components(separatedBy: "curl ").dropFirst().map { String($0.prefix(300)) }
            .filter { $0.contains("api/fixtures") && ($0.contains("-d ") || $0.contains("POST")) }
        #expect(!posts.isEmpty)
        for post in posts { #expect(post.contains("Content-Type: application/json"), "\(post)") }
    }
}
