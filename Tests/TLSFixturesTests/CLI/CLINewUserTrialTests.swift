import Foundation
import NIOEmbedded
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet

/// What a new user's trial of the CLI met: each defect here, with the one line it now gets (or the behaviour it now has).
@Suite("CLI: the new-user trial")
struct CLINewUserTrialTests {
    static func cli(_ arguments: [String], timeout: TimeInterval = 120) throws -> Subprocess.Result {
        try TestEnvironment.tlsFixtures(arguments, timeout: timeout)
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
            let withPlist = try Self.cli(["ats", "check", "--plist", plist] + target)
            let without = try Self.cli(["ats", "check"] + target)
            #expect(withPlist.status == 0, "\(withPlist.combined)")
            #expect(withPlist.stdout == without.stdout, "the same verdict as no --plist")
            let lines = withPlist.stderr.split(separator: "\n")
            #expect(lines.count == 1 && withPlist.stderr.hasPrefix("note: ") && withPlist.stderr.contains("ATS's defaults"),
                    "\(withPlist.stderr)")
            #expect(!withPlist.stderr.contains("Error") && !withPlist.stderr.contains("ATSPolicy"), "\(withPlist.stderr)")
            // Not a plist, or a key of the wrong type: still errors.
            let garbage = try TestEnvironment.file(Data("not a plist <".utf8), name: "Info.plist")
            CLIInputTests.expectOneLineError(try Self.cli(["ats", "check", "--plist", garbage] + target), mentioning: ["malformed"])
            let wrongType = try TestEnvironment.file(Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>NSAppTransportSecurity</key><string>yes</string></dict></plist>
                """.utf8), name: "Info.plist")
            CLIInputTests.expectOneLineError(try Self.cli(["ats", "check", "--plist", wrongType] + target),
                                             mentioning: ["NSAppTransportSecurity is a string"])
        }
    }

    // MARK: 3. ats diagnose on localhost

    @Test("ats diagnose warns, as ats check does and in its words, that ATS does not apply to localhost")
    func diagnoseLocalhost() async throws {
        try await withFixture("tls-v1-2", store: TestEnvironment.sharedStore) { fixture in
            let ca = try TestEnvironment.file(fixture.caCertificate.pem)
            let url = "https://localhost:\(fixture.port)/"
            let diagnose = try Self.cli(["ats", "diagnose", "--trust-ca", ca, url])
            #expect(diagnose.status == 0 && diagnose.stdout.contains("Result : PASS"), "\(diagnose.combined)")
            let warning = try #require(diagnose.stderr.split(separator: "\n").first { $0.hasPrefix("warning: ") })
                .dropFirst("warning: ".count)
            #expect(warning.contains("ATS does not apply") && warning.contains("NAME.fixtures.test"), "\(warning)")
            let check = try Self.cli(["ats", "check", "--trust-ca", ca, url])
            #expect(check.stdout.contains("!! \(warning)"), "one wording for both: \(check.stdout)")
            // A qualified name ATS applies to: no warning.
            let qualified = try Self.cli(["ats", "diagnose", "--trust-ca", ca, "--resolve", "tls-v1-2.fixtures.test:\(fixture.port):127.0.0.1",
                                          "https://tls-v1-2.fixtures.test:\(fixture.port)/"])
            #expect(!qualified.stderr.contains("ATS does not apply"), "\(qualified.stderr)")
        }
    }
}
