import Foundation
import Testing
@testable import TLSFixtures

@Suite("Scenario catalog")
struct CatalogTests {
    @Test("the built-in catalog is Scenarios/, byte for byte (stale: run `make scenarios`)")
    func embeddedMatchesFiles() throws {
        let directory = TestEnvironment.packageRoot.appendingPathComponent("Scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        let embedded = Dictionary(uniqueKeysWithValues: BuiltinScenarioFiles.all.map { ($0.name, $0.json) })
        #expect(Set(files) == Set(embedded.keys), "Scenarios/ and the embedded catalog list different files: run `make scenarios`")
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(embedded[file].map { $0 + "\n" } == text, "Scenarios/\(file) differs from the embedded copy: run `make scenarios`")
        }
        // And loading the directory as user files gives the same scenarios.
        #expect(try ScenarioCatalog.load(directory: directory).sorted { $0.name < $1.name } == ScenarioCatalog.builtIn.scenarios.sorted { $0.name < $1.name })
    }

    // No list of names here: Scenarios/ is the catalog (the test above holds the embedded copy to it), and a hand-kept
    // list would be one more place to edit for every new scenario. What a list could catch — a file deleted by
    // mistake — shows in the scenario table's diff (docs/scenarios.md), which `make scenarios` regenerates and a test
    // holds to the catalog.
    @Test("names and ports are unique, and no scenario takes a port serve reserves")
    func uniqueNamesAndPorts() throws {
        let catalog = ScenarioCatalog.builtIn
        #expect(catalog.names.count == Set(catalog.names).count)
        let ports = catalog.scenarios.compactMap(\.port)
        #expect(ports.count == catalog.scenarios.count && Set(ports).count == ports.count)
        #expect(!ports.contains(ScenarioCatalog.defaultPortBase), "the base port is the dashboard's")
        // serve's OCSP responder and refusing port (9899, 9898) are no scenario's.
        let reserved = [ScenarioCatalog.revocationResponderOffset, ScenarioCatalog.refusingPortOffset].map { ScenarioCatalog.defaultPortBase + $0 }
        #expect(Set(ports).isDisjoint(with: reserved) && Set(reserved) == [9898, 9899])
    }

    @Test("malformed scenario files are one-line errors naming the file and the key", arguments: [
        (#"{"name":"x","group":"custom","summary":"s","expect":{"ats":"allow"},"cipher":"RC4"}"#, "unknown key \"cipher\""),
        (#"{"name":"x","group":"custom","summary":"s","tls":{"minVersion":"TLSv9"},"certificate":{},"expect":{"ats":"allow"}}"#, "at tls.minVersion: \"TLSv9\" is not a protocol version"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"key":"rsa:100"},"expect":{"ats":"allow"}}"#, "at certificate.key: unknown key spec \"rsa:100\""),
        (#"{"name":"x","group":"custom","summary":"s","expect":{"ats":"maybe"}}"#, "at expect.ats"),
        (#"{"name":"../evil","group":"custom","summary":"s","expect":{"ats":"allow"}}"#, "at name: invalid name"),
        (#"{"name":"x","group":"custom","summary":"s","port":70000,"expect":{"ats":"allow"}}"#, "70000 is not a TCP port"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"expect":{"ats":"allow"}}"#, "needs a certificate plan"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"issuer":"nobody"},"expect":{"ats":"allow"}}"#, "unknown issuer"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"keyName":"../../x"},"expect":{"ats":"allow"}}"#, "at certificate.keyName: invalid name"),
        (#"{"name": "x", "group": "#, "not valid JSON"),
        // A missing comma: the error points at the key after it (line 3, column 3), where an editor should jump.
        ("{\n  \"name\": \"x\"\n  \"group\": \"custom\"\n}", "line 3, column 3"),
        ("  \n", "the file is empty"),
        (#"{"group":"custom","summary":"s","expect":{"ats":"allow"}}"#, "missing required key \"name\""),
        // Revocation and the second round's shapes.
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"revocation":{"status":"maybe"}},"expect":{"ats":"allow"}}"#, "at certificate.revocation.status"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"revocation":{"ocps":"none"}},"expect":{"ats":"allow"}}"#, "unknown key \"ocps\""),
        (#"{"name":"x","group":"custom","summary":"s","tls":{"stapleOCSP":true},"certificate":{},"expect":{"ats":"allow"}}"#, "stapleOCSP needs a certificate with a revocation plan"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"issuer":"self","revocation":{}},"expect":{"ats":"allow"}}"#, "has no issuer to answer OCSP"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"emptySubject":true,"subjectAltName":false},"expect":{"ats":"allow"}}"#, "names nothing"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{"extraHosts":["a234567890123456789012345678901234567890123456789012345678901234.test"]},"expect":{"ats":"allow"}}"#, "a DNS label is 1–63 characters"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{},"expect":{"ats":"allow","handshake":{"keyExchange":"DH"}}}"#, "at expect.handshake.keyExchange: \"DH\" is not ECDHE, RSA or DHE"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{},"expect":{"ats":"allow","handshake":{"protocol":"TLS1.2"}}}"#, "at expect.handshake.protocol: \"TLS1.2\" is not one of"),
        (#"{"name":"x","group":"custom","summary":"s","tls":{},"certificate":{},"expect":{"ats":"allow","handshake":{"cipher":["A"]}}}"#, "unknown key \"cipher\""),
        (#"{"name":"x","group":"custom","summary":"s","expect":{"ats":"allow","revocation":{"ocsp":"fine","crl":"ok","staple":"none","apple":"a","appleWithRevocationPolicy":"b"}}}"#, "at expect.revocation.ocsp: \"fine\" is not one of"),
    ])
    func malformed(json: String, fragment: String) throws {
        #expect {
            try ScenarioCatalog.decode(Data(json.utf8), source: "custom/x.json")
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("custom/x.json: ") && text.contains(fragment) && !text.contains("\n")
        }
    }

    @Test("user scenario directories: loaded, checked against built-in names and ports")
    func userDirectory() throws {
        let directory = TestEnvironment.temporaryDirectory("user-scenarios")
        let good = #"{"name":"legacy-api","group":"custom","port":9900,"summary":"TLS 1.1","tls":{"minVersion":"TLSv1.1","maxVersion":"TLSv1.1","securityLevel":0,"ciphers":"ECDHE-RSA-AES128-SHA"},"certificate":{},"expect":{"ats":"block"}}"#
        try Data(good.utf8).write(to: directory.appendingPathComponent("legacy-api.json"))
        let catalog = try ScenarioCatalog.withUserScenarios(from: directory)
        #expect(try catalog.scenario(named: "legacy-api").tls?.maxVersion == .tls1_1)
        #expect(catalog.port(of: try catalog.scenario(named: "legacy-api"), portBase: 10_000) == 10_100)
        // It states no ATS fix: the table must not show "—", which reads as "none needed" for a blocked scenario.
        #expect(DashboardPage.fixText(try catalog.scenario(named: "legacy-api").expect.atsFix).contains("ats exception"))

        try Data(good.replacingOccurrences(of: "legacy-api", with: "expired").utf8).write(to: directory.appendingPathComponent("expired.json"))
        #expect { try ScenarioCatalog.withUserScenarios(from: directory) } throws: { "\($0)".contains("already exists") }
        try FileManager.default.removeItem(at: directory.appendingPathComponent("expired.json"))

        try Data(good.replacingOccurrences(of: "9900", with: "9801").utf8).write(to: directory.appendingPathComponent("legacy-api.json"))
        #expect { try ScenarioCatalog.withUserScenarios(from: directory) } throws: {
            "\($0)".hasPrefix(directory.appendingPathComponent("legacy-api.json").path) && "\($0)".contains("port 9801")
        }

        // serve's OCSP responder port is reserved like the dashboard's.
        try Data(good.replacingOccurrences(of: "9900", with: "9899").utf8).write(to: directory.appendingPathComponent("legacy-api.json"))
        #expect { try ScenarioCatalog.withUserScenarios(from: directory) } throws: { "\($0)".contains("port 9899 is already the port of \"the OCSP responder\"") }
        // A scenario without a port never lands on a reserved one, however many there are.
        let unported = ScenarioCatalog(scenarios: ScenarioCatalog.builtIn.scenarios + (0..<60).map {
            Scenario(name: "u\($0)", group: .custom, summary: "s", expect: Expectations(verify: nil, ats: .allow))
        })
        let assigned = unported.scenarios.filter { $0.port == nil }.compactMap { unported.port(of: $0) }
        #expect(assigned.count == 60 && Set(assigned).count == 60 && Set(assigned).isDisjoint(with: [9898, 9899]))
        try FileManager.default.removeItem(at: directory.appendingPathComponent("legacy-api.json"))
        try Data(good.utf8).write(to: directory.appendingPathComponent("legacy-api.json"))

        try Data(good.utf8).write(to: directory.appendingPathComponent("wrong-name.json"))
        #expect { try ScenarioCatalog.load(directory: directory) } throws: { "\($0)".contains("must be named after its scenario") }
    }

    @Test("library errors read the same through localizedDescription, as test logs print them")
    func localizedDescriptions() {
        let errors: [any Error & CustomStringConvertible] = [
            ScenarioError.unknown("expird", suggestion: "expired"),
            ScenarioError.certificateNameTaken("pinned"),
            FixtureError.portInUse(port: 9801, address: "127.0.0.1"),
        ]
        for error in errors {
            #expect(error.localizedDescription == error.description)
            #expect(!error.localizedDescription.contains("could not be completed"))
        }
    }

    @Test("unknown names suggest the closest")
    func suggestions() {
        #expect { try ScenarioCatalog.builtIn.scenario(named: "tls-v1-00") } throws: { "\($0)".contains("did you mean \"tls-v1-0\"") }
        #expect { try ScenarioCatalog.builtIn.scenario(named: "zzzzzzzzzzzz") } throws: { !"\($0)".contains("did you mean") }
    }
}

/// The differential judge's controls: one fact per scenario file (`expect.refusal.control`), held to what it claims.
@Suite("Refusal controls and steps")
struct RefusalControlTests {
    @Test("a scenario any client may refuse names its control, which every client of the matrix and ATS accept")
    func controls() throws {
        let catalog = ScenarioCatalog.builtIn
        var controls = Set<String>()
        for scenario in catalog.scenarios {
            try catalog.validateControl(of: scenario)
            let expect = scenario.expect
            let refusedBySomeone = expect.verify.map { $0 != "ok" } ?? false || expect.ats == .block
                || MatrixClient.allCases.contains { expect.outcome(for: $0)?.outcome == .reject }
            if refusedBySomeone || expect.pins?.leafSPKI == false {
                let refusal = try #require(expect.refusal, "\(scenario.name) may be refused but names no control")
                controls.insert(refusal.control)
            }
        }
        #expect(controls == ["ats-compliant", "intermediate", "pinned", "ocsp-good-stapled"], "\(controls)")
        for name in controls {
            let control = try catalog.scenario(named: name)
            #expect(control.expect.verify == "ok" && control.expect.ats == .allow, "\(name)")
            for client in MatrixClient.allCases {
                #expect(control.expect.outcome(for: client)?.outcome == .accept, "\(name) × \(client.rawValue)")
            }
        }
    }

    @Test("a user scenario whose control is unknown, refused, or cleartext is refused in one line naming the fix")
    func badControls() throws {
        for (control, words) in [("ats-complaint", "did you mean \"ats-compliant\""), ("expired", "a refusal of its own"),
                                 ("http", "plain HTTP")] {
            let directory = TestEnvironment.temporaryDirectory("controls")
            let json = #"{"name": "mine", "group": "custom", "summary": "s", "tls": {}, "certificate": {}, "#
                + #""expect": {"ats": "allow", "refusal": {"control": ""# + control + #"", "step": "certificate"}}}"#
            try Data(json.utf8).write(to: directory.appendingPathComponent("mine.json"))
            let error = #expect(throws: ScenarioError.self) { try ScenarioCatalog.withUserScenarios(from: directory) }
            #expect(error?.code == .badControl && error?.description.contains(words) == true,
                    "\(String(describing: error))")
            #expect(error?.description.contains("\n") == false)
        }
    }
}
