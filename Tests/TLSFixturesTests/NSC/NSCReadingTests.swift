import Foundation
import Testing
@testable import TLSFixtures

/// How the model reads what it is given: the manifest's switches, a config that is not XML, the warnings for what has
/// no effect, the pin formats Android apps paste, and docs/android.md's table of rules against the code.
@Suite("NSC model: reading manifests and configs, writing pins, the rule table")
struct NSCReadingTests {
    static func manifest(_ application: String, sdk: String = "<uses-sdk android:minSdkVersion=\"24\" "
                         + "android:targetSdkVersion=\"35\"/>", prefix: String = "android") throws -> NSCManifest {
        try NSCManifest.parse(Data("""
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:\(prefix)="http://schemas.android.com/apk/res/android" package="com.example">
                \(sdk.replacingOccurrences(of: "android:", with: "\(prefix):"))
                <application \(application.replacingOccurrences(of: "android:", with: "\(prefix):"))/>
            </manifest>
            """.utf8))
    }

    @Test("the manifest's switches, under whatever prefix binds Android's namespace")
    func manifestSwitches() throws {
        let plain = try Self.manifest("android:usesCleartextTraffic=\"true\" android:debuggable=\"true\"")
        #expect(plain.usesCleartextTraffic == true && plain.debuggable == true && plain.targetSdkVersion == 35)
        #expect(plain.networkSecurityConfig == nil)
        let other = try Self.manifest("android:networkSecurityConfig=\"@xml/network_security_config\"", prefix: "a")
        #expect(other.networkSecurityConfig == "@xml/network_security_config" && other.usesCleartextTraffic == nil)
        let app = NSCApp(manifest: plain)
        #expect(app.build == .debug && app.targetSdk == 35 && app.cleartextFlag)
        // Without targetSdkVersion Android takes minSdkVersion.
        let minOnly = try Self.manifest("", sdk: "<uses-sdk android:minSdkVersion=\"21\"/>")
        #expect(NSCApp(manifest: minOnly).targetSdk == 21 && NSCApp(manifest: minOnly).cleartextFlag)
        // What the command line gives wins over the manifest.
        #expect(NSCApp(manifest: plain, targetSdk: 27, build: .release).build == .release)
    }

    @Test("a manifest aapt2 would refuse, or that is not a manifest, is refused with the line")
    func manifestErrors() throws {
        let notBoolean = #expect(throws: NSCConfigError.self) {
            try Self.manifest("android:usesCleartextTraffic=\"yes\"")
        }
        #expect(notBoolean?.code == .invalidManifest && notBoolean?.reason.hasPrefix("line ") == true)
        #expect(throws: NSCConfigError.self) {
            try Self.manifest("", sdk: "<uses-sdk android:targetSdkVersion=\"V\"/>")
        }
        let wrong = #expect(throws: NSCConfigError.self) {
            try NSCManifest.parse(Data("<network-security-config/>".utf8))
        }
        #expect(wrong?.code == .wrongRoot)
        // A resource reference cannot be resolved here: absent, with a warning.
        let reference = try Self.manifest("android:usesCleartextTraffic=\"@bool/cleartext\"")
        #expect(reference.usesCleartextTraffic == nil && reference.warnings.count == 1)
    }

    @Test("a file that is not XML is refused in one line, with the line number and the fix")
    func notXML() {
        let error = #expect(throws: NSCConfigError.self) {
            try NSCDocument.parse(Data("<network-security-config>\n<base-config>\n</network-security-config>".utf8),
                                  build: .release)
        }
        #expect(error?.code == .notXML && error?.reason.contains("line") == true, "\(String(describing: error))")
        #expect(error?.description.contains("\n") == false)
        #expect(throws: NSCConfigError.self) { try NSCDocument.parse(Data(), build: .release) }
    }

    @Test("what has no effect is said: an unknown element, a value read as its default, a prefixed attribute")
    func warnings() throws {
        let document = try NSCDocument.parse(Data(nsc("""
            <base-config android:cleartextTrafficPermitted="true" hstsEnforced="yes"><trust-anchor/></base-config>
            <debug-overrides/>
            """).utf8), build: .release)
        let text = document.warnings.joined(separator: "\n")
        #expect(text.contains("<trust-anchor> in <base-config>"), "\(text)")
        #expect(text.contains("hstsEnforced=\"yes\" is not true or false: Android reads it as false"), "\(text)")
        #expect(text.contains("android:cleartextTrafficPermitted on <base-config> is not read"), "\(text)")
        #expect(text.contains("<debug-overrides> is skipped unread in a release build"), "\(text)")
        #expect(document.base?.cleartextTrafficPermitted == nil)
    }

    @Test("android.util.Base64 as pins are decoded: padding optional, stray characters skipped, half padding refused")
    func base64() {
        #expect(AndroidBase64.decode("TWFu") == Data("Man".utf8))
        #expect(AndroidBase64.decode("TWE") == Data("Ma".utf8))
        #expect(AndroidBase64.decode("TWE=") == Data("Ma".utf8))
        #expect(AndroidBase64.decode("TQ") == Data("M".utf8))
        #expect(AndroidBase64.decode("TQ==") == Data("M".utf8))
        #expect(AndroidBase64.decode("T Q\n=\t=") == Data("M".utf8))
        #expect(AndroidBase64.decode("TQ=") == nil, "one '=' where two are due")
        #expect(AndroidBase64.decode("T") == nil, "six bits make no byte")
        #expect(AndroidBase64.decode("TQ==TQ") == nil, "data after the padding")
        #expect(AndroidBase64.decode("=") == nil)
        #expect(AndroidBase64.decode("") == Data())
    }

    @Test("a pin-set and a CertificatePinner: the leaf and the backup pinned, the CA only offered, the host escaped")
    func pinFormats() throws {
        let pins = NSCPinFormats.Pins(host: "pinned.fixtures.test", leaf: "LEAF", backup: "BACKUP", ca: "CA")
        let xml = NSCPinFormats.pinSetXML(pins, expiration: NSCDay(year: 2027, month: 1, day: 31))
        #expect(xml.contains("<pin-set expiration=\"2027-01-31\">"))
        #expect(xml.contains("<pin digest=\"SHA-256\">LEAF</pin>"))
        #expect(xml.contains("<pin digest=\"SHA-256\">BACKUP</pin>"))
        #expect(xml.contains("<!-- or the CA's key") && xml.contains("<pin digest=\"SHA-256\">CA</pin> -->"))
        let kotlin = NSCPinFormats.okHttpCertificatePinner(pins)
        #expect(kotlin.contains(".add(\"pinned.fixtures.test\", \"sha256/LEAF\")"))
        #expect(kotlin.contains(".add(\"pinned.fixtures.test\", \"sha256/BACKUP\")"))
        #expect(kotlin.contains("// .add(\"pinned.fixtures.test\", \"sha256/CA\")"))
        // The pin-set Android reads back holds exactly the two pins, CA commented out.
        let real = NSCPinFormats.Pins(host: "a&b.test", leaf: NSCFacts.androidComChainPin, backup: NSCFacts.g2Pin,
                                      ca: "zzzz")
        let document = try NSCDocument.parse(Data(nsc(NSCPinFormats.pinSetXML(real, expiration: NSCDay(
            year: 2027, month: 1, day: 31))).utf8), build: .release)
        #expect(document.domainConfigs.first?.domains == [NSCDomain("a&b.test")])
        #expect(document.domainConfigs.first?.pinSet == NSCPinSet(pins: [NSCFacts.androidComChainPin, NSCFacts.g2Pin],
                                                                    expiration: NSCDay(year: 2027, month: 1, day: 31)))
        #expect(NSCPinFormats.defaultExpiration(from: NSCDay(year: 2028, month: 2, day: 29))
                    == NSCDay(year: 2029, month: 2, day: 28))
    }

    static func androidDoc() throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("docs/android.md"), encoding: .utf8)
    }

    @Test("every model rule has one row in docs/android.md, with the code's confidence",
          arguments: NSCModelRule.allCases)
    func ruleRow(rule: NSCModelRule) throws {
        let rows = try Self.androidDoc().split(separator: "\n").filter { $0.hasPrefix("| `\(rule.rawValue)` |") }
        try #require(rows.count == 1, "docs/android.md has \(rows.count) rows for \(rule.rawValue)")
        let cells = rows[0].split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(cells.last == rule.confidence.rawValue, "\(rule.rawValue): the docs say \(cells.last ?? "?")")
        #expect(cells.count == 4 && !cells[2].isEmpty, "\(rule.rawValue): the row needs a source: \(rows[0])")
    }

    @Test("docs/android.md's rule table has no row for a rule the code does not know")
    func noStaleRows() throws {
        let known = Set(NSCModelRule.allCases.map(\.rawValue))
        let table = try Self.androidDoc().components(separatedBy: "## Every rule")[1]
            .components(separatedBy: "\n## ")[0]
        let ids = table.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        }
        #expect(ids.count == known.count)
        for id in ids { #expect(known.contains(id), "docs/android.md lists \(id), which is not an NSCModelRule") }
    }
}
