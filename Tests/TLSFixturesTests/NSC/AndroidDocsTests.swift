import Foundation
import Testing
@testable import TLSFixtures

/// docs/android.md shows `nsc check` on three sample configs: each sample is run as the page writes it, and the output
/// must be the page's, so the page cannot drift from the command. Also `pins --android` as the page describes it.
@Suite("docs/android.md: the nsc check samples and pins --android, run", .ownThreads)
struct AndroidDocsTests {
    static let store = TestEnvironment.suiteStore("AndroidDocs")

    static func page() throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/android.md"), encoding: .utf8)
    }

    /// The `<!-- nsc-sample NAME -->` files and the `<!-- nsc-check -->` blocks (a `$ tls-fixtures …` line, then the
    /// output) of the page.
    static func blocks() throws -> (samples: [String: String], checks: [(command: [String], output: String)]) {
        let lines = try page().components(separatedBy: "\n")
        var samples: [String: String] = [:]
        var checks: [(command: [String], output: String)] = []
        var index = 0
        func fenced(from start: Int) -> (body: [String], end: Int) {
            var end = start + 1
            while lines[end] != "```" { end += 1 }
            return (Array(lines[(start + 1)..<end]), end)
        }
        while index < lines.count {
            let line = lines[index]
            if line.hasPrefix("<!-- nsc-sample "), let name = line.split(separator: " ").dropFirst(2).first {
                let (body, end) = fenced(from: index + 1)
                samples[String(name)] = body.joined(separator: "\n") + "\n"
                index = end
            } else if line == "<!-- nsc-check -->" {
                let (body, end) = fenced(from: index + 1)
                let command = body[0].split(separator: " ").dropFirst(2).map(String.init)
                checks.append((command, body.dropFirst().joined(separator: "\n")))
                index = end
            }
            index += 1
        }
        return (samples, checks)
    }

    @Test("three sample configs (strict, debug-overrides, legacy cleartext), and nsc check prints what the page shows")
    func samplesRunAsShown() throws {
        let (samples, checks) = try Self.blocks()
        #expect(Set(samples.keys) == ["strict.xml", "debug-overrides.xml", "legacy-cleartext.xml"])
        #expect(checks.count == 4)
        let folder = TestEnvironment.temporaryDirectory("android-docs")
        for (name, text) in samples { try Data(text.utf8).write(to: folder.appendingPathComponent(name)) }
        for check in checks {
            // The file argument, as the page names it, lives in the scratch folder; the output names it as given.
            let arguments = check.command.map { samples[$0] != nil ? folder.appendingPathComponent($0).path : $0 }
            let result = try TestEnvironment.tlsFixtures(arguments + ["--dir", Self.store.directory.path,
                                                                       "--today", "2026-06-01"])
            #expect(result.status == 0, "\(check.command): \(result.stderr)")
            let stderr = result.stderr.trimmingCharacters(in: .newlines)
            let shown = (result.stdout.trimmingCharacters(in: .newlines) + (stderr.isEmpty ? "" : "\n" + stderr))
                .replacingOccurrences(of: folder.path + "/", with: "")
            #expect(shown == check.output,
                    "docs/android.md shows another output for \(check.command.joined(separator: " "))")
        }
    }

    @Test("a config Android refuses: exit 1, the line and the reason, no verdicts")
    func refusedConfig() throws {
        let file = try TestEnvironment.file(Data(nsc("<base-config><domain>a.com</domain></base-config>").utf8),
                                            name: "network_security_config.xml")
        let result = try TestEnvironment.tlsFixtures(["nsc", "check", file, "--dir", Self.store.directory.path])
        #expect(result.status == 1 && result.stdout.isEmpty, "\(result.combined)")
        #expect(result.stderr.contains("line 2: <domain> is not allowed in <base-config>"), "\(result.stderr)")
        #expect(result.stderr.contains("Failed to parse XML configuration"))
        let manifest = try TestEnvironment.file(Data("""
            <manifest xmlns:android="http://schemas.android.com/apk/res/android">
            <application android:networkSecurityConfig="@xml/network_security_config"/></manifest>
            """.utf8), name: "AndroidManifest.xml")
        let unnamed = try TestEnvironment.tlsFixtures(["nsc", "check", "--manifest", manifest,
                                                       "--dir", Self.store.directory.path])
        #expect(unnamed.status != 0 && unnamed.stderr.contains("give its file"), "\(unnamed.combined)")
        let badOption = try TestEnvironment.tlsFixtures(["nsc", "check", "--ca-in", "somewhere", file])
        #expect(badOption.status != 0
                    && badOption.stderr.contains("--ca-in somewhere is not @raw/NAME, user or system"))
    }

    @Test("nsc check --json: one row a scenario, each verdict with its rules")
    func json() throws {
        let result = try TestEnvironment.tlsFixtures(["nsc", "check", "--scenario", "http,ats-compliant", "--json",
                                                      "--dir", Self.store.directory.path])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any]
        let rows = object?["rows"] as? [[String: Any]]
        #expect(rows?.map { $0["scenario"] as? String } == ["http", "ats-compliant"])
        let http = rows?.first?["verdict"] as? [String: Any]
        #expect(http?["connects"] as? Bool == false && http?["step"] as? String == "beforeConnecting",
                "\(String(describing: http))")
        #expect((http?["rules"] as? [String])?.contains("cleartext-before-connecting") == true)
    }

    @Test("pins --android: the same keys as the iOS output, a pin-set that parses, OkHttp's pinner")
    func pinsAndroid() throws {
        let ios = try TestEnvironment.tlsFixtures(["pins", "--json", "--dir", Self.store.directory.path])
        let android = try TestEnvironment.tlsFixtures(["pins", "--android", "--expiration", "2027-06-30", "--json",
                                                       "--dir", Self.store.directory.path])
        #expect(ios.status == 0 && android.status == 0, "\(ios.stderr) \(android.stderr)")
        let iosPins = try JSONSerialization.jsonObject(with: ios.stdoutData) as? [String: Any]
        let report = try JSONSerialization.jsonObject(with: android.stdoutData) as? [String: Any]
        for key in ["leaf", "ca", "backup", "domain"] {
            #expect(report?[key] as? String == iosPins?[key] as? String, "\(key) differs from the iOS output")
        }
        let xml = try #require(report?["networkSecurityConfig"] as? String)
        let document = try NSCDocument.parse(Data(nsc(xml).utf8), build: .release)
        let leaf = try #require(report?["leaf"] as? String)
        let backup = try #require(report?["backup"] as? String)
        #expect(document.domainConfigs.first?.pinSet == NSCPinSet(pins: [leaf, backup],
                                                                    expiration: NSCDay(year: 2027, month: 6, day: 30)))
        #expect((report?["okHttpCertificatePinner"] as? String)?.contains("\"sha256/\(leaf)\"") == true)
        let text = try TestEnvironment.tlsFixtures(["pins", "pin-rotated-key", "--android", "--dir",
                                                    Self.store.directory.path])
        #expect(text.stdout.contains("Pins for pin-rotated-key.fixtures.test"), "\(text.combined)")
        #expect(text.stdout.contains("<pin-set expiration=\""), "\(text.stdout)")
        #expect(text.stdout.contains("CertificatePinner.Builder()"))
        #expect(text.stdout.contains("res/raw/tls_fixtures_ca.cer"))
        let misplaced = try TestEnvironment.tlsFixtures(["pins", "--expiration", "2027-06-30"])
        #expect(misplaced.status != 0 && misplaced.stderr.contains("--expiration is for --android"))
    }
}
