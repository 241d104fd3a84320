import Foundation
import Testing

/// scripts/check-public-docs.py (run by `make lint`, before every `make test`) keeps every public declaration of the
/// library documented: a user reading Xcode's Quick Help for `import TLSFixtures` sees what a name does not say. Here it
/// judges a small temporary source tree whose findings are known, so each rule is shown to fail and to pass, and then
/// this package's own sources.
@Suite("The public-docs check", .requires(Tools.python), .ownThreads)
struct PublicDocsCheckTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-public-docs.py").path

    /// Writes `files` (path → text) under a fresh temporary root and runs the check on its Sources/.
    static func check(_ files: [String: String]) throws -> Subprocess.Result {
        let root = TestEnvironment.temporaryDirectory("public-docs")
        for (path, text) in files {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        return try Subprocess.run([try #require(Tools.python.path), script, "--root", root.path])
    }

    static let documented = """
        /// Seconds a fixture waits for a client's first byte.
        public struct Documented: CustomStringConvertible {
            /// The wait, in seconds; 0 means no limit.
            @available(*, deprecated)
            public var seconds: Int
            public var description: String { "\\(seconds) s" }
            public init(from decoder: Decoder) throws { seconds = 0 }
            package func plumbing() {}
            func internalHelper() {}
        }

        """

    @Test("documented, package, internal and protocol-witness declarations pass")
    func passes() throws {
        let result = try Self.check(["Sources/Lib/Documented.swift": Self.documented])
        #expect(result.status == 0, "\(result.combined)")
    }

    @Test("an undocumented public declaration fails, named by file and line; executables are not judged")
    func fails() throws {
        let result = try Self.check([
            "Sources/Lib/Documented.swift": Self.documented,
            "Sources/Lib/Bare.swift": "import Foundation\n\n// An ordinary comment is not documentation.\npublic func bare() {}\n",
            "Sources/tls-fixtures/Main.swift": "public func commandLineOnly() {}\n",
        ])
        #expect(result.status == 1, "\(result.combined)")
        #expect(result.stdout.contains("Sources/Lib/Bare.swift:4: bare"), "\(result.combined)")
        #expect(result.stdout.contains("1 public declaration(s) without a doc comment"), "\(result.combined)")
        #expect(!result.stdout.contains("commandLineOnly"), "\(result.combined)")
    }

    @Test("this package's own Sources pass: every public declaration is documented or package")
    func packagePasses() throws {
        let result = try Subprocess.run([try #require(Tools.python.path), Self.script, "--root", TestEnvironment.packageRoot.path])
        #expect(result.status == 0, "\(result.combined)")
    }
}
