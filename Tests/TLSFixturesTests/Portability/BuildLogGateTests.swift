import Foundation
import Testing

/// Issue 39, item 2: the macOS workflow's build steps read their `swift build` log with scripts/check-build-log.py.
/// No Mac links anything here, so the script is held to logs written as Xcode's linker words them: it passes the one
/// `ld` warning docs/macos.md expects (macOS 14 against Homebrew's OpenSSL, built for the Mac's own macOS), fails on
/// any other and on a warning in our code, and fails when the expected one is missing where it is asked for.
@Suite("macOS: the build log's gate for warnings", .requires(Tools.python), .ownThreads)
struct BuildLogGateTests {
    static let script = TestEnvironment.packageRoot.appendingPathComponent("scripts/check-build-log.py").path
    static let openSSLWarning = "ld: warning: building for macOS-14.0, but linking with dylib "
        + "'/opt/homebrew/opt/openssl@3/lib/libssl.3.dylib' which was built for newer version 26.0"

    static func gate(_ lines: [String], expecting: Bool = true) throws -> Subprocess.Result {
        let log = TestEnvironment.temporaryDirectory("build-log").appendingPathComponent("build.log")
        try (["Building for debugging...", "[12/300] Compiling TLSFixturesWire CodedError.swift"] + lines
             + ["Build complete! (61.20s)"]).joined(separator: "\n").write(to: log, atomically: true, encoding: .utf8)
        return try Subprocess.run([try #require(Tools.python.path), script]
                                  + (expecting ? ["--expect-openssl-link-warning"] : []) + [log.path])
    }

    @Test("Homebrew's OpenSSL built for a newer macOS passes, in either linker's words; a dependency's warning too")
    func expected() throws {
        let clean = try Self.gate([
            Self.openSSLWarning,
            "ld: warning: dylib (/usr/local/Cellar/openssl@3/3.6.0/lib/libcrypto.3.dylib) was built for newer macOS "
                + "version (15.0) than being linked (14.0)",
            "/Users/runner/work/x/x/.build/checkouts/swift-nio/Sources/NIOCore/A.swift:3:5: warning: deprecated",
        ])
        #expect(clean.status == 0 && clean.stdout.contains("2 expected ld warning(s)"), "\(clean.combined)")
    }

    @Test("a warning in our code, another ld warning, or the expected one missing fails, naming the line")
    func failures() throws {
        let ours = try Self.gate([Self.openSSLWarning,
                                  "/Users/runner/work/x/x/Sources/TLSFixturesPKI/Store.swift:9:1: warning: unused"])
        #expect(ours.status == 1 && ours.stdout.contains("a warning in our code: /Users/runner/work/x/x/Sources/"),
                "\(ours.combined)")
        let other = "ld: warning: building for macOS-14.0, but linking with dylib "
            + "'/Applications/Xcode.app/Contents/Developer/Library/Frameworks/XCTest.framework/XCTest' "
            + "which was built for newer version 15.0"
        let xctest = try Self.gate([Self.openSSLWarning, other])
        #expect(xctest.status == 1 && xctest.stdout.contains("does not expect: \(other)"), "\(xctest.combined)")
        let duplicates = try Self.gate([Self.openSSLWarning, "ld: warning: ignoring duplicate libraries: '-lssl'"])
        #expect(duplicates.status == 1, "\(duplicates.combined)")
        let missing = try Self.gate([])
        #expect(missing.status == 1 && missing.stdout.contains("no `ld: warning` about Homebrew's OpenSSL"),
                "\(missing.combined)")
        #expect(try Self.gate([], expecting: false).status == 0)
    }
}
