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
@Suite("Validation gaps (issue 16)")
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

    @Test("a directory, a named pipe or /dev/zero given as a file gets the real reason, and a pipe never blocks")
    func notRegularFiles() throws {
        let folder = TestEnvironment.temporaryDirectory("notafile")
        let fifo = folder.appendingPathComponent("pipe")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases = [(folder.path, "it is a directory, not a file"), (fifo.path, "it is a named pipe (FIFO), not a regular file"),
                     ("/dev/zero", "it is a device, not a regular file")]
        for (path, reason) in cases {
            Self.expectLine(try TestEnvironment.tlsFixtures(["cert", "show", path], timeout: 20), "cannot read \(path): \(reason)")
            Self.expectLine(try TestEnvironment.tlsFixtures(["ats", "check", "--plist", path, "https://x.fixtures.test/"], timeout: 20),
                            "cannot read \(path): \(reason)")
            Self.expectLine(try TestEnvironment.tlsFixtures(["probe", "127.0.0.1:9", "--ca", path], timeout: 20), "cannot read \(path): \(reason)")
        }
        // A scenario folder holding a pipe named like a scenario file.
        let scenarios = TestEnvironment.temporaryDirectory("fifoscenario")
        #expect(mkfifo(scenarios.appendingPathComponent("a.json").path, 0o600) == 0)
        Self.expectLine(try TestEnvironment.tlsFixtures(["scenarios", "list", "--scenarios", scenarios.path], timeout: 20),
                        "cannot read scenarios from \(scenarios.path)/a.json: it is a named pipe (FIFO), not a regular file")
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
        Self.expectLine(try TestEnvironment.tlsFixtures(["cert", "issue", "--dir", store.path, "--name", "root", "--host", "localhost",
                                                         "--out-dir", outDir, "--force"]),
                        "--out-dir \(outDir) is inside the certificate store \(store.path), whose files are the kit's own (writing there could replace the CA's key); write it elsewhere")
        #expect(try Data(contentsOf: key) == keyBefore)
        // Outside the store, export works as before.
        let outside = TestEnvironment.temporaryDirectory("exportout").appendingPathComponent("ca.pem").path
        #expect(try TestEnvironment.tlsFixtures(["ca", "export", "--dir", store.path, "--out", outside]).status == 0)
    }
}
