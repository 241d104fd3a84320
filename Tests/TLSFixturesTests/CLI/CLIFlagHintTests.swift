import Foundation
import Testing
@testable import TLSFixtures

/// Issue 14: the library's errors name properties and arguments; the CLI's one-line errors name the flag instead
/// (FlagHints, one place in the CLI). And options with a fixed set of values are typed: `--help` lists the values, and a
/// bad value gets the parser's line naming them.
@Suite("CLI flag hints and typed options", .ownThreads)
struct CLIFlagHintTests {
    static func cli(_ arguments: [String]) throws -> Subprocess.Result { try TestEnvironment.tlsFixtures(arguments) }

    @Test("cert issue: each library refusal comes back naming the flag that fixes it", arguments: [
        // (extra arguments, the flag the line must name, a word of the library's reason that must stay)
        ([String](), "--host", "server certificate"),
        (["--host", "a.test", "--permit", "a.test"], "add --ca", "name constraints"),
        (["--host", "a.test", "--path-len", "1"], "add --ca", "path length"),
        (["--host", "a.test", "--issuer", "self", "--key", "ec:p256", "--digest", "md5"], "--issuer rsa-intermediate", "ECDSA-with-MD5"),
    ] as [([String], String, String)])
    func certIssue(extra: [String], flag: String, reason: String) throws {
        let directory = TestEnvironment.temporaryDirectory("hints").path
        let result = try Self.cli(["cert", "issue", "--dir", directory, "--name", "x"] + extra)
        CLIInputTests.expectOneLineError(result, mentioning: [flag, reason])
        #expect(!result.stderr.contains("omitSubjectAltNames") && !result.stderr.contains("isCA"), "the library's words: \(result.stderr)")
    }

    @Test("an unknown scenario: the library points at ScenarioCatalog's names, the CLI at `scenarios list`")
    func unknownScenario() throws {
        #expect { try ScenarioCatalog.builtIn.scenario(named: "expird") } throws: {
            "\($0)".contains("did you mean \"expired\"") && "\($0)".contains("ScenarioCatalog.builtIn.names") && !"\($0)".contains("tls-fixtures")
        }
        // One command checks the name in validate() (pins), one in run() (scenarios show): both get the CLI's words.
        for arguments in [["pins", "expird"], ["scenarios", "show", "expird"]] {
            let result = try Self.cli(arguments)
            CLIInputTests.expectOneLineError(result, mentioning: ["did you mean \"expired\"", "tls-fixtures scenarios list"])
            #expect(!result.stderr.contains("ScenarioCatalog"), "\(arguments): \(result.stderr)")
        }
        // The probe's hint for an unresolved fixture name speaks of the target's property; the CLI says --resolve.
        let unresolved = ProbeError.unresolvedFixtureName("expired.fixtures.test:9806", host: "expired.fixtures.test", "not known")
        #expect(unresolved.description.contains("connectAddress") && !unresolved.description.contains("--"), "\(unresolved)")
        let probe = try Self.cli(["probe", "no-such-fixture.fixtures.test:9806"])
        CLIInputTests.expectOneLineError(probe, mentioning: ["cannot resolve no-such-fixture.fixtures.test",
                                                             "--resolve no-such-fixture.fixtures.test:9806:127.0.0.1"])
        #expect(!probe.stderr.contains("connectAddress"), "\(probe.stderr)")
    }

    @Test("ca init twice and ca export over a different file: --force")
    func force() throws {
        let directory = TestEnvironment.temporaryDirectory("hints-force")
        let store = directory.appendingPathComponent("store").path
        #expect(try Self.cli(["ca", "init", "--dir", store]).status == 0)
        let again = try Self.cli(["ca", "init", "--dir", store])
        CLIInputTests.expectOneLineError(again, mentioning: ["a CA already exists", "--force", "--if-missing"])
        #expect(!again.stderr.contains("initializeCA"))

        let out = directory.appendingPathComponent("ca.pem")
        try Data("something else".utf8).write(to: out)
        let export = try Self.cli(["ca", "export", "--dir", store, "--out", out.path])
        CLIInputTests.expectOneLineError(export, mentioning: [out.path, "--force"])
        #expect(!export.stderr.contains("force: true"))
        #expect(try Self.cli(["ca", "export", "--dir", store, "--out", out.path, "--force"]).status == 0)
    }

    @Test("ca show on an empty store: ca init and --dir")
    func noCA() throws {
        let store = TestEnvironment.temporaryDirectory("hints-noca").appendingPathComponent("store").path
        CLIInputTests.expectOneLineError(try Self.cli(["ca", "show", "--dir", store]), mentioning: ["no CA in", "tls-fixtures ca init", "--dir"])
    }

    @Test("--help lists the values of typed options", arguments: [
        // --key has no parser default (given, it conflicts with --use-key and --csr): its help says the default.
        (["cert", "issue"], ["(values: md5, sha1, sha224, sha256, sha384, sha512; default: sha256)", "ed25519 (default ec:p256)"]),
        (["ca", "export"], ["(values: pem, der, p12; default: pem)"]),
        (["probe"], ["(values: 1.0, 1.1, 1.2, 1.3; default: 1.0)", "(values: trustkit, leaf, ca; default: trustkit)"]),
        (["ats", "exception"], ["(values: fewest-keys, domain-scoped-first; default: fewest-keys)", "(values: all, one-label; default: all)"]),
    ] as [([String], [String])])
    func helpListsValues(command: [String], fragments: [String]) throws {
        let help = try Self.cli(command + ["--help"])
        #expect(help.status == 0)
        // ArgumentParser wraps help at the terminal's width: compare with the line breaks and indentation taken out.
        let flat = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        for fragment in fragments { #expect(flat.contains(fragment), "missing \(fragment) in \(command) --help") }
    }

    @Test("a bad value gets the parser's one line naming the valid ones", arguments: [
        (["probe", "localhost:1", "--tls-min", "0.9"], ["'0.9' is invalid for '--tls-min <version>'", "'1.0', '1.1', '1.2' or '1.3'"]),
        (["ca", "export", "--out", "-", "--format", "jks"], ["'jks' is invalid for '--format <format>'", "'pem', 'der' or 'p12'"]),
        (["ats", "check", "https://a.test/", "--subdomains", "some"], ["'some' is invalid for '--subdomains <reading>'", "'all' and 'one-label'"]),
        (["ats", "exception", "https://a.test/", "--strategy", "cheapest"], ["'cheapest'", "'fewest-keys' and 'domain-scoped-first'"]),
    ] as [([String], [String])])
    func badValue(arguments: [String], fragments: [String]) throws {
        let result = try Self.cli(arguments)
        #expect(result.status == 64, "\(result.combined)")
        CLIInputTests.expectOneLineError(result, mentioning: fragments)
    }
}
