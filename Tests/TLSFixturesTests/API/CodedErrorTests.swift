import Foundation
import Testing
@testable import TLSFixtures
import TLSFixturesClient

/// Issue 14: every public error of the library has one shape, swift-certificates' `CertificateError`'s: a stable code,
/// a one-line reason, a fix in the library's words (never a flag), and equality by code. The CLI's flag words are
/// tested in CLIFlagHintTests.
@Suite("Public errors: one shape (CodedError)")
struct CodedErrorTests {
    /// One error of each public type, made by the factories the library throws with.
    static let samples: [(any CodedError, code: String)] = [
        (PKIError.noCA(path: "/tmp/store"), "noCA"),
        (FixtureError.portInUse(port: 9801, address: "127.0.0.1"), "portInUse"),
        (FixtureError.invalidConnectionLimit(0), "invalidConnectionLimit"),
        (ScenarioError.unknown("expird", suggestion: "expired"), "unknown"),
        (ScenarioError.malformed("a.json", "at tls.minVersion: unknown version"), "malformed"),
        (ScenarioError.dashboardPortTaken("a.json", 9800), "dashboardPortTaken"),
        (ScenarioError.certificateNameTaken("pinned"), "certificateNameTaken"),
        (ProbeError.unresolvedFixtureName("expired.fixtures.test:9806", host: "expired.fixtures.test", "not known"), "unresolvedFixtureName"),
        (ProbeError.invalidTarget("x:y:z", "use HOST:PORT or a URL"), "invalidTarget"),
        (RemoteFixtureError.runnerUnreachable(url: URL(string: "http://localhost:9800")!, reason: "refused"), "runnerUnreachable"),
        (RemoteFixtureError.noSession, "noSession"),
        (PinFormatError.trustKitNeedsTwoPins(found: 1), "trustKitNeedsTwoPins"),
        (ATSPolicyError.atsNotADictionary(found: "string"), "atsNotADictionary"),
        (NSCConfigError.noDomain(line: 3), "noDomain"),
        (OpenSSLError(operation: "set the cipher list", reasons: ["SSL routines: no cipher match"]), "callFailed"),
        (ScenarioUnsupported(code: .linkedOpenSSL, scenario: "rc4", why: "unsupported by the linked OpenSSL",
                             fix: "build one"), "linkedOpenSSL"),
        (InvalidTimeout(name: "the probe's timeout", value: "0"), "outOfRange"),
        (PEMError(.notBase64, "block 1 (CERTIFICATE) is not base64"), "notBase64"),
        (UserFileError(path: "/tmp/x", kind: .directory), "notRegular"),
        (UnsupportedByOpenSSL("no cipher match"), "unsupported"),
        (SimulatorTrustError.nothingBooted(known: 2), "nothingBooted"),
        (FixtureDomainError.invalid("a..b", "no empty labels"), "invalid"),
        (InvalidHostsAddress(address: "x"), "notAnIPAddress"),
        (LegacyHelperError(helper: "/bin/false", why: "it exited"), "didNotStart"),
    ]

    /// A CodedError of the test's own, with words written here: what the protocol's description makes of them.
    struct Sample: CodedError {
        var code: ErrorCode<Sample> { ErrorCode("sample") }
        var reason: String
        var fix: String?
    }

    @Test("the description is the reason, then `; ` and the fix when there is one: as localizedDescription too")
    func descriptionRule() {
        let both = Sample(reason: "the port is taken", fix: "choose another port")
        #expect(both.description == "the port is taken; choose another port")
        #expect(both.localizedDescription == "the port is taken; choose another port")
        #expect("\(both)" == "the port is taken; choose another port")
        #expect(Sample(reason: "nothing to add", fix: nil).description == "nothing to add")
    }

    @Test("code, reason and fix: every public error type keeps that description, on one line, naming no flag")
    func shape() {
        for (error, code) in Self.samples {
            #expect("\(error.code)" == code, "\(type(of: error))")
            // No type replaces the rule above: its reason comes first, its fix (if any) after "; ", and nothing else.
            #expect(error.description.hasPrefix(error.reason), "\(error)")
            #expect(error.description.count == error.reason.count + (error.fix.map { $0.count + 2 } ?? 0), "\(error)")
            if let fix = error.fix { #expect(error.description.hasSuffix("; " + fix), "\(error)") }
            #expect(!error.description.contains("\n") && !error.description.contains("--"), "\(error)")
            #expect(error.localizedDescription == error.description, "\(type(of: error)): \(error.localizedDescription)")
        }
    }

    /// docs/macos.md's example of branching on a code (the region below is copied there): a second `initializeCA()`
    /// refuses with `.caExists`, which the example catches, and the CA stays the one devices trust.
    @Test("the documentation's caExists example keeps the existing CA")
    func caExistsExample() throws {
        let store = CertificateStore.at(TestEnvironment.temporaryDirectory("coded-error-example"))
        let first = try store.initializeCA().ca.certificate
        #expect(throws: PKIError.caExists(path: "", fingerprint: "")) { try store.initializeCA() }
        // README: coded-error-example begin
        do { try store.initializeCA() } catch let error as PKIError where error.code == .caExists {
            // A CA exists already: devices trust it and apps pin it, so keep it.
        }
        // README: coded-error-example end
        #expect(try store.ca().certificate.sha256Fingerprint == first.sha256Fingerprint)
    }

    @Test("equality is by code, as CertificateError's: a test names the kind of failure, not its wording")
    func equality() {
        #expect(FixtureError.portInUse(port: 1, address: "::1") == FixtureError.portInUse(port: 2, address: "127.0.0.1"))
        #expect(FixtureError.portInUse(port: 1, address: "::1") != FixtureError.cannotBind(address: "::1", port: 1, reason: "x"))
        #expect(Set([ScenarioError.unknown("a", suggestion: nil), ScenarioError.unknown("b", suggestion: "c")]).count == 1)
        // The values stay reachable as properties, for a test or an app that needs them.
        let inUse = FixtureError.portInUse(port: 9801, address: "127.0.0.1")
        #expect(inUse.port == 9801 && inUse.address == "127.0.0.1")
        let refused = RemoteFixtureError.refused(status: 429, error: APIError(error: "too many fixtures", field: nil))
        #expect(refused.status == 429 && refused.apiError?.error == "too many fixtures")
    }

    @Test("text from a file is escaped: a key with a newline cannot split the line")
    func escaping() {
        #expect(ScenarioError.malformed("a.json", "the key \"a\nb\" is unknown").description == "a.json: the key \"a\\nb\" is unknown")
        #expect(PinFormatError.malformedPin("x\ny").reason.contains("x\\ny"))
    }

    /// Issue 23: one error shape, one code mechanism. Every error type a library target declares for use outside its
    /// file (`public` or `package`) is a `CodedError` (whose codes are `ErrorCode<Owner>`), so none needs a
    /// `LocalizedError` patch of its own; the executables' own errors (`CLIError`) and private helpers are exempt.
    @Test("every public or package error type of the library is a CodedError; no LocalizedError patches")
    func everyErrorIsCoded() throws {
        let sources = TestEnvironment.packageRoot.appendingPathComponent("Sources")
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        let files = try #require(enumerator?.allObjects as? [URL])
        let executables = ["tls-fixtures", "tls-fixtures-bench", "tls-fixtures-client-check"]
        let declaration = try Regex(#"^\s*(?:public|package)\s+(?:final\s+)?(?:struct|enum|class)\s+(\w+)[^{]*:\s*([^{]*)\{"#)
        var uncoded: [String] = []
        var patches: [String] = []
        var scanned = 0
        for file in files where file.pathExtension == "swift" {
            let relative = file.path.replacingOccurrences(of: sources.path + "/", with: "")
            if executables.contains(where: { relative.hasPrefix($0 + "/") }) { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                if line.hasPrefix("extension "), line.contains(": LocalizedError") { patches.append("\(relative): \(line)") }
                guard let match = try declaration.firstMatch(in: String(line)) else { continue }
                scanned += 1
                let clause = match.output[2].substring ?? ""
                let inherits = clause.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                if inherits.contains("Error") || inherits.contains("Swift.Error") { uncoded.append("\(relative): \(line)") }
            }
        }
        #expect(scanned > 100, "the scan found only \(scanned) declarations under \(sources.path)")
        #expect(uncoded.isEmpty, "make these CodedError (codes as ErrorCode<Owner>): \(uncoded)")
        #expect(patches.isEmpty, "CodedError already gives errorDescription: \(patches)")
    }

    /// A new public error type as an enum would bring back the switch-breaking shape this issue removed.
    @Test("no library target declares a public error enum")
    func noPublicErrorEnums() throws {
        let sources = TestEnvironment.packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.allObjects as? [URL])
        var enums: [String] = []
        for file in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("public enum ") && line.contains("Error") && line.contains(": ") {
                enums.append("\(file.lastPathComponent): \(line)")
            }
        }
        #expect(enums.isEmpty, "make these CodedError structs: \(enums)")
        #expect(files.contains { $0.lastPathComponent == "CodedError.swift" }, "the scan found no sources at \(sources.path)")
    }
}
