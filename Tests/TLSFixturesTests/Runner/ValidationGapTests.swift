import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 16, item 6: bad input that passed validation, crashed or was blamed on the wrong thing. Each case gets the
/// exact one line the CLI prints on standard error, and exit 1.
@Suite("Validation gaps (issue 16)", .ownThreads)
struct ValidationGapTests {
    static func expectLine(_ result: Subprocess.Result, _ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!result.timedOut, "the command hung", sourceLocation: sourceLocation)
        #expect(result.status == 1, "exit \(result.status): \(result.combined)", sourceLocation: sourceLocation)
        #expect(result.stderr == "Error: \(line)\n", sourceLocation: sourceLocation)
    }

    /// A folder holding one user scenario file `a.json` with `json`.
    static func scenarioFolder(_ json: String) throws -> URL {
        let folder = TestEnvironment.temporaryDirectory("userscenario")
        try Data(json.utf8).write(to: folder.appendingPathComponent("a.json"))
        return folder
    }

    static let rest = #""group": "custom", "summary": "x", "expect": {"ats": "allow"}"#

    @Test("a user scenario on the dashboard's port is refused when the catalog loads, not by serve's bind")
    func dashboardPort() throws {
        let folder = try Self.scenarioFolder(#"{"name": "a", "port": 9800, \#(Self.rest)}"#)
        let line = "\(folder.path)/a.json: port 9800 is the dashboard's (serve puts it on --port-base, 9800 by default); choose another port, or leave \"port\" out to get the next free one"
        Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", folder.path]), line)
        // serve fails in validation, before anything listens or is prepared; with --port-base the slot moves along.
        Self.expectLine(try TestEnvironment.tlsFixtures(["serve", "--scenarios", folder.path, "--port-base", "\(try Ports.unused())"]), line)
    }

    @Test("JSON numbers, duplicate keys and wrong shapes are named by key", arguments: [
        (#"{"name": "a", "port": 9900.5, \#(rest)}"#, "at port: 9900.5 is not a whole number"),
        (#"{"name": "a", "port": 12345678901234567890123, \#(rest)}"#, "at port: 12345678901234567890123 is too large a number"),
        (#"{"name": "a", "tls": {"securityLevel": 1e400}, \#(rest)}"#, "at tls.securityLevel: 1e400 is too large a number"),
        (#"[{"name": "a"}]"#, "a scenario file holds one JSON object ({…}), not an array"),
        (#"{"name": "a", "tls": [], \#(rest)}"#, "at tls: expected an object ({…}), found an array"),
        (#"{"name": "a", "name": "b", \#(rest)}"#, "the key \"name\" appears twice; keep one"),
        (#"{"name": "a", "tls": {"minVersion": "TLSv1.2", "minVersion": "TLSv1.3"}, \#(rest)}"#, "at tls: the key \"minVersion\" appears twice; keep one"),
        (#"{"name": "a", "certificate": {"hosts": ["a.test", "b.test", "a.test"], "hosts": []}, \#(rest)}"#, "at certificate: the key \"hosts\" appears twice; keep one"),
    ])
    func jsonShapes(json: String, problem: String) throws {
        let folder = try Self.scenarioFolder(json)
        Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", folder.path]), "\(folder.path)/a.json: \(problem)")
        // The library says the same.
        #expect { try ScenarioCatalog.decode(Data(json.utf8), source: "a.json") } throws: {
            ($0 as? ScenarioError)?.code == .malformed && "\($0)" == "a.json: \(problem)"
        }
    }

    /// The pre-pass reads any bytes: what is not JSON it leaves to the decoder (which says where), and it never
    /// nests deeper than a scenario file needs.
    @Test("the JSON pre-pass: deep nesting, lone surrogates, raw control bytes and garbage")
    func precheckEdges() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(ScenarioJSONPrecheck.problem(in: Array(("{\"a\": " + deep + "}").utf8))
                == "at a[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested more than 32 levels deep; a scenario file needs four")
        #expect(ScenarioJSONPrecheck.problem(in: Array(#"{"a": "\ud800 lone"}"#.utf8)) == nil)
        #expect(ScenarioJSONPrecheck.problem(in: Array("{\"a\": \"raw\u{07}bell\"}".utf8))
                == "at a: control character U+0007 in a string; scenario text is printed to terminals, so write it without escape sequences")
        #expect(ScenarioJSONPrecheck.problem(in: Array(#"{"a": "tab\tinside"}"#.utf8))
                == "at a: control character U+0009 in a string; scenario text is printed to terminals, so write it without escape sequences")
        for garbage in ["", "{", "{\"a\"", "{\"a\": }", "{\"a\": 1,}", "{\"a\": tru}", "\u{0}\u{ff}", "{\"a\": \"\\u12\"}", "{\"a\": 1e}"] {
            #expect(ScenarioJSONPrecheck.problem(in: Array(garbage.utf8)) == nil, "\(garbage)")
        }
        #expect(ScenarioJSONPrecheck.problem(in: Array(#"{"a": [1, -2, 3e2, 4.0], "b": {"c": null, "d": true}}"#.utf8)) == nil)
    }

    @Test("escape sequences in a scenario's text never reach the terminal: scenarios list and serve refuse the file")
    func controlCharacters() throws {
        for (json, code) in [(#"{"name": "a", "summary": "\u001b]0;pwned\u0007 ok", "group": "custom", "expect": {"ats": "allow"}}"#, "U+001B"),
                             (#"{"name": "a", "summary": "fine", "group": "custom", "expect": {"ats": "allow", "note": "\u009b31m"}}"#, "U+009B")] {
            let folder = try Self.scenarioFolder(json)
            let key = code == "U+001B" ? "summary" : "expect.note"
            let line = "\(folder.path)/a.json: at \(key): control character \(code) in a string; scenario text is printed to terminals, so write it without escape sequences"
            for command in [["scenarios", "list"], ["serve", "--port-base", "\(try Ports.unused())"]] {
                let result = try TestEnvironment.tlsFixtures(command + ["--scenarios", folder.path])
                Self.expectLine(result, line)
                #expect(!result.combined.contains("\u{1b}") && !result.combined.contains("\u{9b}"))
            }
        }
    }

    @Test("a directory, a named pipe or /dev/zero given as a file gets the real reason, and a pipe never blocks")
    func notRegularFiles() throws {
        let folder = TestEnvironment.temporaryDirectory("notafile")
        let fifo = folder.appendingPathComponent("pipe")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases = [(folder.path, "it is a directory, not a file"), (fifo.path, "it is a named pipe (FIFO), not a regular file"),
                     ("/dev/zero", "it is a device, not a regular file")]
        for (path, reason) in cases {
            Self.expectLine(try TestEnvironment.tlsFixtures(["cert", "show", path], timeout: 20), "cannot read \(path): \(reason)")
            // A file a flag names: the flag, then what to give instead.
            Self.expectLine(try TestEnvironment.tlsFixtures(["ats", "check", "--plist", path, "https://x.fixtures.test/"], timeout: 20),
                            "--plist \(path): \(reason); give the path of a file")
            Self.expectLine(try TestEnvironment.tlsFixtures(["probe", "127.0.0.1:9", "--ca", path], timeout: 20),
                            "--ca \(path): \(reason); give the path of a file")
        }
        // A scenario folder holding a pipe named like a scenario file.
        let scenarios = TestEnvironment.temporaryDirectory("fifoscenario")
        #expect(mkfifo(scenarios.appendingPathComponent("a.json").path, 0o600) == 0)
        Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", scenarios.path], timeout: 20),
                        "--scenarios: cannot read scenarios from \(scenarios.path)/a.json: it is a named pipe (FIFO), not a regular file; "
                            + "give a folder of scenario files (NAME.json) this user can read")
    }

    @Test("a binary plist nested 1,000 deep is named for what it is, not \"Unexpected character b\"")
    func deepBinaryPlist() throws {
        let script = """
        import plistlib, sys
        sys.setrecursionlimit(100000)
        v = "x"
        for _ in range(1000): v = [v]
        sys.stdout.buffer.write(plistlib.dumps({"NSAppTransportSecurity": {"A": v}}, fmt=plistlib.FMT_BINARY))
        """
        let made = try Subprocess.run(["python3", "-c", script])
        let plist = try TestEnvironment.file(made.stdoutData, name: "deep.plist")
        Self.expectLine(try TestEnvironment.tlsFixtures(["ats", "check", "--plist", plist, "https://x.fixtures.test/"]),
                        "malformed property list (the binary plist nests arrays or dictionaries more than 64 levels deep; an Info.plist needs a handful); fix the file, e.g. check it with `plutil -lint Info.plist`")
    }

    @Test("hosts --address takes an IP address only: nothing else reaches a file users pipe to sudo tee")
    func hostsAddress() throws {
        for address in ["127.0.0.1 www.google.com\n6.6.6.6", "localhost", "127.0.0.1\tevil.test", "1.2.3.4.5", ""] {
            let escaped = address.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t")
            let result = try TestEnvironment.tlsFixtures(["hosts", "--address", address])
            Self.expectLine(result, "--address: \"\(escaped)\" is not an IP address; the hosts file maps the names to one, such as 127.0.0.1 or ::1")
            #expect(result.stdout.isEmpty)
        }
        let v6 = try TestEnvironment.tlsFixtures(["hosts", "--address", "::1"])
        #expect(v6.status == 0 && v6.stdout.contains("::1\tats-compliant.fixtures.test\n"))
        #expect(throws: InvalidHostsAddress.self) { try HostsFile.lines(for: [], address: "6.6.6.6\n") }
    }

    @Test("one limit of 10,000 subject alternative names, for listed and generated hosts and cert issue alike")
    func sanLimit() throws {
        let tooMany = "subject alternative names, but at most 10000 go in one certificate: far more make it megabytes long, and clients refuse it"
        let listed = (0..<10_001).map { "\"h\($0).test\"" }.joined(separator: ",")
        // The baseline leaf names localhost and NAME.fixtures.test: two names besides those a file lists.
        for (certificate, count, key) in [("\"generatedHosts\": 100000", 100_002, "generatedHosts"),
                                          ("\"hosts\": [\(listed)]", 10_001, "hosts"),
                                          ("\"extraHosts\": [\(listed)]", 10_003, "extraHosts"),
                                          ("\"hosts\": [\"a.test\"], \"generatedHosts\": 10000", 10_001, "generatedHosts")] {
            let folder = try Self.scenarioFolder(#"{"name": "a", "certificate": {\#(certificate)}, \#(Self.rest)}"#)
            Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", folder.path]),
                            "\(folder.path)/a.json: at certificate.\(key): \(count) \(tooMany); hosts, extraHosts and generatedHosts count together")
        }
        // Exactly 10,000 (the two baseline hosts and 9,998 generated) is accepted; one more is not.
        // A certificate needs "tls" (or the scenario is plain HTTP and refused).
        let fits = try Self.scenarioFolder(#"{"name": "a", "tls": {}, "certificate": {"generatedHosts": 9998}, "#
                                           + #"\#(Self.rest)}"#)
        #expect(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", fits.path]).status == 0)
        let over = try Self.scenarioFolder(#"{"name": "a", "certificate": {"generatedHosts": 9999}, \#(Self.rest)}"#)
        Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", over.path]),
                        "\(over.path)/a.json: at certificate.generatedHosts: 10001 \(tooMany); hosts, extraHosts and generatedHosts count together")
        // cert issue: the same limit, before any key is generated. (Through the library: ArgumentParser takes minutes
        // to parse 10,001 repeated --host options, so the CLI cannot be the way to test this limit.)
        let store = TestEnvironment.temporaryDirectory("sans").appendingPathComponent("store")
        var request = CertificateRequest(name: "many")
        request.hosts = (0..<10_001).map { "h\($0).test" }
        #expect(throws: PKIError.tooManyNames(10_001)) { try CertificateStore(directory: store).issue(request) }
        #expect("\(PKIError.tooManyNames(10_001))" == "10001 \(tooMany)")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("keys").path), "a key was generated first")
        // Under the limit, the CLI issues as before (a few hundred names: parsing repeated options is slow).
        let hosts = (0..<300).flatMap { ["--host", "h\($0).test"] }
        let issued = try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store.path, "--name", "many", "--key", "ec:p256"] + hosts)
        #expect(issued.status == 0, "\(issued.stderr)")
    }

    @Test("ca export --out and cert issue --out-dir refuse any path inside the store, through links too")
    func exportIntoTheStore() throws {
        let store = TestEnvironment.temporaryDirectory("exportin").appendingPathComponent("store")
        #expect(try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path]).status == 0)
        let key = store.appendingPathComponent("ca/root.key")
        let keyBefore = try Data(contentsOf: key)
        let link = TestEnvironment.temporaryDirectory("linkintostore").appendingPathComponent("ca")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: store.appendingPathComponent("ca"))
        for out in [key.path, "\(store.path)/../store/ca/root.pem", store.appendingPathComponent("exports/x.cer").path,
                    link.appendingPathComponent("root.key").path] {
            for format in ["pem", "der"] {
                Self.expectLine(try TestEnvironment.tlsFixtures(["ca", "export", "--dir", store.path, "--format", format, "--out", out, "--force"]),
                                "--out \(out) is inside the certificate store \(store.path), whose files are the kit's own (writing there could replace the CA's key); write it elsewhere")
            }
        }
        #expect(try Data(contentsOf: key) == keyBefore, "the CA's key was overwritten")
        let outDir = store.appendingPathComponent("ca").path
        // (--name root, which would have written ca/root.key, is refused before that now: a reserved name.)
        Self.expectLine(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store.path, "--name", "mine", "--host", "localhost",
                                                         "--out-dir", outDir, "--force"]),
                        "--out-dir \(outDir) is inside the certificate store \(store.path), whose files are the kit's own (writing there could replace the CA's key); write it elsewhere")
        #expect(try Data(contentsOf: key) == keyBefore)
        // Outside the store, export works as before.
        let outside = TestEnvironment.temporaryDirectory("exportout").appendingPathComponent("ca.pem").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "export", "--dir", store.path, "--out", outside]).status == 0)
    }
}
