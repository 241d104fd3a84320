import Foundation
import Testing

// darwin-lint: file allows spawn-init, pthread-init, glibc-module, proc, msg-nosignal, raw-constant, glibc-private, stat-time, host-lookup — the Linux-only lines here are the lint's test data

/// scripts/lint-darwin.py, the Linux-side check that the package still compiles on macOS: each pattern it knows is
/// caught in a file of its own, and the same code is accepted inside a branch Darwin never compiles.
@Suite("macOS: the Darwin source lint", .requires(Tools.python), .ownThreads)
struct DarwinLintTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/lint-darwin.py").path

    static func lint(_ source: String, name: String = "Sample.swift") throws -> Subprocess.Result {
        let file = TestEnvironment.temporaryDirectory("lint").appendingPathComponent(name)
        try source.write(to: file, atomically: true, encoding: .utf8)
        return try run([file.path])
    }

    /// Any python3 runs the script (no TLS involved), so the checked interpreter is named by its path.
    static func run(_ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run([try #require(Tools.python.path), script] + arguments)
    }

    /// One line of Linux-only Swift per rule, as it was (or would be) written before the lint existed.
    static let badLines: [(rule: String, line: String)] = [
        ("spawn-init", "var actions = posix_spawn_file_actions_t()"),
        ("spawn-init", "var attributes = posix_spawnattr_t()"),
        ("pthread-init", "var mutex = pthread_mutex_t()"),
        ("pthread-init", "var thread = pthread_t()"),
        ("glibc-module", "_ = Glibc.close(fd)"),
        ("proc", "let status = try String(contentsOfFile: \"/proc/self/status\", encoding: .utf8)"),
        ("proc", "let fds = try FileManager.default.contentsOfDirectory(atPath: \"/proc/self/fd/\\(pid)\")"),
        ("msg-nosignal", "let flags = Int32(MSG_NOSIGNAL)"),
        ("raw-constant", "let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)"),
        ("raw-constant", "let resource = Int32(RLIMIT_NOFILE.rawValue)"),
        ("glibc-private", "let resource = __rlimit_resource_t(1)"),
        ("glibc-private", "if current.__sigaction_handler.sa_handler == nil {}"),
        ("stat-time", "let seconds = info.st_mtim.tv_sec"),
        ("host-lookup", "let host = ProcessInfo.processInfo.hostName"),
        ("host-lookup", "let name = \"CA \\(Host.current().name ?? \"\")\""),
        ("host-lookup", "let host = NSHost.current()"),
    ]

    @Test("each Linux-only pattern fails the lint with its rule, file and line", arguments: badLines)
    func flagged(rule: String, line: String) throws {
        let result = try Self.lint("import Foundation\n\nfunc sample() throws {\n    \(line)\n}\n")
        #expect(result.status == 1, "\(result.combined)")
        #expect(result.stdout.contains("Sample.swift:4: [\(rule)]"), "\(result.combined)")
        #expect(result.stdout.split(separator: "\n").count == 1, "one finding per line: \(result.stdout)")
    }

    /// Branches Darwin never compiles, each around every bad line at once.
    static let linuxOnlyBranches: [(String, String)] = [
        ("#if canImport(Glibc)", "#endif"),
        ("#if os(Linux)", "#endif"),
        ("#if canImport(Darwin)\nlet unused = 0\n#else", "#endif"),
        ("#if canImport(Darwin)\nlet unused = 0\n#elseif canImport(Glibc)", "#else\nlet other = 0\n#endif"),
        ("#if os(Linux) || os(Android)", "#endif"),
        ("#if canImport(Glibc) && compiler(>=6.0)", "#endif"),
        ("#if !canImport(Darwin)", "#endif"),
        ("#if os(macOS) || os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)\nlet unused = 0\n#else", "#endif"),
        ("#if DEBUG\n#if canImport(Glibc)", "#endif\n#endif"),
    ]

    @Test("the same code inside a branch Darwin never compiles passes", arguments: linuxOnlyBranches)
    func acceptedInLinuxOnlyBranches(open: String, close: String) throws {
        let body = Self.badLines.map(\.line).joined(separator: "\n")
        let result = try Self.lint("import Foundation\n\(open)\nfunc sample() throws {\n\(body)\n}\n\(close)\n")
        #expect(result.status == 0, "\(open): \(result.combined)")
    }

    /// Branches a Darwin OS does compile: the lint must still see into them.
    static let darwinBranches: [(String, String)] = [
        ("#if canImport(Glibc)\nlet unused = 0\n#else", "#endif"),
        ("#if os(macOS)\nlet unused = 0\n#else", "#endif"),   // iOS compiles the #else
        ("#if compiler(>=6.0)", "#endif"),
        ("#if !os(Linux)", "#endif"),
        ("#if canImport(Glibc) || canImport(Darwin)", "#endif"),
    ]

    @Test("code a Darwin OS compiles is still checked", arguments: darwinBranches)
    func checkedInDarwinBranches(open: String, close: String) throws {
        let result = try Self.lint("import Foundation\n\(open)\nlet thread = pthread_t()\n\(close)\n")
        #expect(result.status == 1 && result.stdout.contains("[pthread-init]"), "\(open): \(result.combined)")
    }

    @Test("comments and prose are not code; string literals that are /proc paths are")
    func commentsAndStrings() throws {
        let clean = try Self.lint("""
            // Glibc.close(fd) and posix_spawnattr_t() in a comment
            /* MSG_NOSIGNAL, /* nested */ SOCK_STREAM.rawValue */
            /// reads /proc/self on Linux
            let comment = "reads /proc/self"                      // prose in a string
            let url = "https://example.test/proc/x"               // not a /proc path
            let note = \"\"\"
                Glibc.close is only a word here
                \"\"\"
            """)
        #expect(clean.status == 0, "\(clean.combined)")
        let hidden = try Self.lint("let url = \"https://x.test/\" ; let path = \"/proc/self/fd\"\n")
        #expect(hidden.status == 1 && hidden.stdout.contains("Sample.swift:1: [proc]"), "\(hidden.combined)")
    }

    @Test("a waiver needs a known rule and a reason; with both, the line (or the file) passes")
    func waivers() throws {
        // Spelled in two pieces so that this file's own lint does not read these as waivers.
        let marker = "darwin" + "-lint:"
        let line = "let status = try String(contentsOfFile: \"/proc/self/status\", encoding: .utf8)"
        let waived = try Self.lint("// \(marker) allow proc — the benchmark runs on Linux only\n\(line)\n")
        #expect(waived.status == 0, "\(waived.combined)")
        let fileWide = try Self.lint("// \(marker) file allows proc — every suite here is enabled on Linux only\n\n\n\(line)\n")
        #expect(fileWide.status == 0, "\(fileWide.combined)")
        let noReason = try Self.lint("\(line) // \(marker) allow proc\n")
        #expect(noReason.status == 1 && noReason.stdout.contains("[waiver]") && noReason.stdout.contains("[proc]"), "\(noReason.combined)")
        let unknownRule = try Self.lint("\(line) // \(marker) allow procfs — typo\n")
        #expect(unknownRule.status == 1 && unknownRule.stdout.contains("unknown rule \"procfs\""), "\(unknownRule.combined)")
        // A waiver for one rule does not hide another.
        let other = try Self.lint("let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) // \(marker) allow proc — wrong rule\n")
        #expect(other.status == 1 && other.stdout.contains("[raw-constant]"), "\(other.combined)")
    }

    @Test("#available at or below the deployment targets of Package.swift is flagged: Darwin warns it is unnecessary")
    func availabilityAtTheFloor() throws {
        let folder = TestEnvironment.temporaryDirectory("lint-available")
        let manifest = folder.appendingPathComponent("Package.swift")
        try "// swift-tools-version:6.2\nimport PackageDescription\nlet package = Package(\n    name: \"x\",\n    platforms: [.macOS(.v14), .iOS(.v15)]\n)\n"
            .write(to: manifest, atomically: true, encoding: .utf8)
        func lint(_ line: String) throws -> Subprocess.Result {
            let file = folder.appendingPathComponent("Sample.swift")
            try "import Foundation\nfunc sample() {\n    \(line)\n}\n".write(to: file, atomically: true, encoding: .utf8)
            return try Self.run(["--package", manifest.path, file.path])
        }
        // What FixtureProxy.swift said: macOS 14 is the deployment target already, iOS 17 is above iOS 15.
        let proxy = try lint("if #available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, *) {}")
        #expect(proxy.status == 1 && proxy.stdout.contains("Sample.swift:3: [available] #available(macOS 14.0, …)"), "\(proxy.combined)")
        #expect(!proxy.stdout.contains("iOS 17"), "\(proxy.stdout)")
        for below in ["guard #available(macOS 13, *) else { return }", "if #unavailable(iOS 15) {}", "if #available(OSX 10.15, *) {}"] {
            let result = try lint(below)
            #expect(result.status == 1 && result.stdout.contains("[available]"), "\(below): \(result.combined)")
        }
        for needed in ["if #available(iOS 17.0, tvOS 17.0, watchOS 10.0, *) {}", "if #available(macOS 15, iOS 16, *) {}",
                       "// if #available(macOS 14, *) in a comment", "let text = \"#available(macOS 14, *)\""] {
            let result = try lint(needed)
            #expect(result.status == 0, "\(needed): \(result.combined)")
        }
    }

    @Test("an unbalanced #if is reported rather than silently ending the check")
    func unbalanced() throws {
        let result = try Self.lint("#if canImport(Glibc)\nlet x = 1\n")
        #expect(result.status == 1 && result.stdout.contains("[condition]"), "\(result.combined)")
    }

    @Test("the package's own sources, tests and fuzzers pass (as `make test` checks before building)")
    func repository() throws {
        let result = try Self.run([])
        #expect(result.status == 0, "\(result.combined)")
        #expect(result.stdout.contains("nothing Linux-only outside Linux-only code"))
    }
}
