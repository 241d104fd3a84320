import Foundation
import Testing
@testable import TLSFixtures

/// Inputs the libFuzzer targets in Fuzz/ (`make fuzz`) found to break a parser, kept so each bug stays fixed. Every
/// file in Inputs/scenario and Inputs/ats-plist goes through the normal API, as `tls-fixtures` would read it from a
/// user: it must decode, or fail with the parser's own error in one line. A crash fails the whole run, as it should.
/// To add one: copy the fuzzer's crash-… file here under a name that says what it is; no code change is needed.
@Suite("fuzzer regressions: saved inputs decode, or fail in one line")
struct FuzzRegressionTests {
    static let inputs = TestEnvironment.packageRoot.appendingPathComponent("Tests/TLSFixturesTests/Fuzz/Inputs")

    static func files(_ folder: String) -> [String] {
        let directory = inputs.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { "\(folder)/\($0)" }
    }

    static func contents(_ file: String) throws -> Data {
        try #require(FileManager.default.contents(atPath: inputs.appendingPathComponent(file).path), "cannot read \(file)")
    }

    /// One line and nothing a terminal would act on: no newline, tab or other control character.
    static func isOneLine(_ text: String) -> Bool {
        !text.isEmpty && !text.unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }

    /// The parameterized tests below run once per file: with a folder missing or emptied they would run nothing and
    /// pass. The saved inputs are checked in; each folder must still hold them.
    @Test("the saved inputs are there: every folder the fuzz targets save to holds its regression files")
    func inputsArePresent() {
        #expect(Self.files("scenario").count >= 1, "\(Self.inputs.path)/scenario has no saved inputs")
        #expect(Self.files("ats-plist").count >= 4, "\(Self.inputs.path)/ats-plist has lost saved inputs")
    }

    @Test("scenario files (ScenarioCatalog.decode)", arguments: files("scenario"))
    func scenarioFile(_ file: String) throws {
        let data = try Self.contents(file)
        do {
            let scenario = try ScenarioCatalog.decode(data, source: file)
            if let plan = scenario.certificate {
                do { _ = try plan.profile(scenarioName: scenario.name) } catch { #expect(Self.isOneLine("\(error)"), "\(error)") }
            }
        } catch let error as ScenarioError {
            #expect(Self.isOneLine("\(error)"), "\(String(reflecting: "\(error)"))")
            #expect("\(error)".hasPrefix("\(file): "))
        }
    }

    @Test("Info.plist and ATS dictionaries (ATSPolicy.parse, init(infoPlist:), init(atsDictionary:))", arguments: files("ats-plist"))
    func atsPlist(_ file: String) throws {
        let data = try Self.contents(file)
        for parse in [ATSPolicy.parse(plist:), ATSPolicy.init(infoPlist:), ATSPolicy.init(atsDictionary:)] as [(Data) throws -> ATSPolicy] {
            do {
                let policy = try parse(data)
                for warning in policy.warnings { #expect(Self.isOneLine(warning.description), "\(String(reflecting: warning.description))") }
            } catch let error as ATSPolicyError {
                #expect(Self.isOneLine("\(error)"), "\(String(reflecting: "\(error)"))")
            }
        }
    }

    @Test("a key holding a newline or a control character is quoted escaped, not raw")
    func escapedKeys() throws {
        let json = #"{"name":"x","group":"custom","summary":"s","expect":{"ats":"allow"},"a\nb\u001b[2J":1}"#
        #expect {
            try ScenarioCatalog.decode(Data(json.utf8), source: "x.json")
        } throws: { error in
            "\(error)" == #"x.json: at a\nb\u{1b}[2J: unknown key "a\nb\u{1b}[2J" (known: certificate, expect, group, name, port, summary, tls)"#
        }
        // Uppercase: a key ATS never matches, so the parser warns and quotes it.
        let policy = ATSPolicy(["NSExceptionDomains": ["Bad\nKey.example.com": [:]]])
        #expect(policy.warnings.count == 1)
        #expect(policy.warnings.map(\.description).allSatisfy(Self.isOneLine))
        #expect(policy.warnings.first?.description.contains(#"Bad\nKey.example.com"#) == true)
    }

    @Test("binary plists that crash or swamp Foundation's reader are refused in one line, before it sees them")
    func binaryShapesFoundationCannotRead() throws {
        // A set (marker 0xC_) anywhere in the graph: PropertyListSerialization segfaults bridging it (Swift 6.3.1).
        let set = try Self.contents("ats-plist/set-in-exception-domains.binary.plist")
        #expect(BinaryPlistPrecheck.problem(in: set) == .containsSet)
        #expect { try ATSPolicy.parse(plist: set) } throws: { "\($0)".contains("holds a set") }
        // 349 bytes, 24 levels of [A, A]: 2^24 values once Foundation bridges it; refused in milliseconds.
        let doubling = try Self.contents("ats-plist/shared-references-2pow24.binary.plist")
        let start = Date()
        #expect(BinaryPlistPrecheck.problem(in: doubling) == .expandsTooFar)
        #expect { try ATSPolicy(infoPlist: doubling) } throws: { "\($0)".contains("more than 10000 values") }
        // Found by FuzzATSPlist as a timeout under the first limit (50 000): 16 389 values from 349 bytes.
        let slow = try Self.contents("ats-plist/shared-references-16k-values.binary.plist")
        #expect { try ATSPolicy.parse(plist: slow) } throws: { "\($0)".contains("more than 10000 values") }
        // The fuzzer reported these as timeouts: refusing them takes milliseconds, and the precheck's verdicts above
        // say they were refused before their values were read. 60 s only detects a hang (2^24 values read).
        #expect(Date().timeIntervalSince(start) < 60)
    }

    @Test("real binary plists, whose writers share repeated strings, pass the check unchanged")
    func binaryPlistsStillRead() throws {
        let seeds = TestEnvironment.packageRoot.appendingPathComponent("Fuzz/Seeds/ats-plist")
        let binary = try FileManager.default.contentsOfDirectory(atPath: seeds.path).filter { $0.hasSuffix(".binary.plist") }.sorted()
        #expect(binary.count >= 3)
        for name in binary {
            let data = try #require(FileManager.default.contents(atPath: seeds.appendingPathComponent(name).path))
            #expect(BinaryPlistPrecheck.problem(in: data) == nil, "\(name)")
        }
        // Foundation's own writer (it stores each distinct string once and references it from every use).
        let domain: ATSPlistValue = ["NSIncludesSubdomains": true, "NSExceptionMinimumTLSVersion": "TLSv1.2"]
        let ats: ATSPlistValue = ["NSExceptionDomains": ["a.example.com": domain, "b.example.com": domain, "c.example.com": domain]]
        let data = try PropertyListSerialization.data(fromPropertyList: ["NSAppTransportSecurity": ats.foundationObject],
                                                      format: .binary, options: 0)
        #expect(BinaryPlistPrecheck.problem(in: data) == nil)
        let policy = try ATSPolicy(infoPlist: data)
        #expect(policy.exceptionDomains.count == 3 && policy.exceptionDomains["b.example.com"]?.minimumTLSVersion == .tls1_2)
    }
}
