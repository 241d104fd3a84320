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
}
