import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures
import TLSFixturesFleet

/// `serve` as a library object (issue 23): what the CLI does, a test does in one call, and nothing is left listening.
@Suite("ScenarioRunner, the library's serve")
struct ScenarioRunnerTests {
    @Test(
        "one call starts the fleet and the front door; the scope's end stops both and frees every port",
        .requires(Tools.curl))
    func oneCall() async throws {
        let options = try FleetTests.freeOptions()
        let base = options.portBase
        let catalog = ScenarioCatalog.builtIn
        let ports = try await ScenarioRunner.withRunner(
            try catalog.scenarios(named: ["ats-compliant", "http"]), catalog: catalog,
            store: TestEnvironment.sharedStore, options: options
        ) { runner in
            let door = try #require(runner.frontDoor)
            #expect(door.dashboardURL == URL(string: "http://localhost:\(base)/"))
            // A real client reads the dashboard's catalog and reaches a fixture on the port it lists.
            let listed = try await Subprocess.runAwaiting(["curl", "-sSf", "http://localhost:\(base)/scenarios.json"])
            let document = try JSONDecoder().decode(CatalogDocument.self, from: listed.stdoutData)
            #expect(document.proxy == ProxyEndpoint(port: base, domains: ["fixtures.test"]))
            let http = try #require(document.scenarios.first { $0.name == "http" }?.port)
            let answer = try await Subprocess.runAwaiting(["curl", "-sSf", "http://localhost:\(http)/"])
            #expect(answer.stdout.contains("\"scenario\":\"http\""), "\(answer.combined)")
            // And the control API on the same port starts a leased fixture the stop must end too.
            let leased = try await Subprocess.runAwaiting([
                "curl", "-sSf", "-H", "Content-Type: application/json", "--data", #"{"scenario": "http"}"#,
                "http://localhost:\(base)/api/fixtures",
            ])
            let lease = try FixtureAPI.decoder().decode(FixtureDescription.self, from: leased.stdoutData)
            return [base] + document.scenarios.compactMap(\.port) + [lease.port]
        }
        for port in ports { #expect(!Ports.accepts(port), "port \(port) still listens after the runner's scope ended") }
    }

    @Test("connectionEnded is told each connection once it closes: a catalog fixture by its port, a control API one by its id",
          .requires(Tools.curl))
    func connectionEnded() async throws {
        var options = try FleetTests.freeOptions()
        let seen = NIOLockedValueBox<[FleetConnection]>([])
        options.connectionEnded = { event in seen.withLockedValue { $0.append(event) } }
        let base = options.portBase
        let root = TestEnvironment.sharedStore.certificatePath(.root).path
        let catalog = ScenarioCatalog.builtIn
        try await ScenarioRunner.withRunner(
            try catalog.scenarios(named: ["ats-compliant"]), catalog: catalog,
            store: TestEnvironment.sharedStore, options: options
        ) { _ in
            let leased = try await Subprocess.runAwaiting([
                "curl", "-sSf", "-H", "Content-Type: application/json", "--data", #"{"scenario": "wrong-host"}"#,
                "http://localhost:\(base)/api/fixtures",
            ])
            let lease = try FixtureAPI.decoder().decode(FixtureDescription.self, from: leased.stdoutData)
            let refused = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", root, "https://localhost:\(lease.port)/"])
            #expect(refused.status == 60, "\(refused.combined)")
            _ = try await Subprocess.runAwaiting(["curl", "-sSf", "--cacert", root, "https://localhost:\(base + 1)/"])
            // Told as each connection closes; 20 s only detects a hang.
            let deadline = Date().addingTimeInterval(20)
            while seen.withLockedValue({ $0.count }) < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let events = seen.withLockedValue { $0 }
            try #require(events.count == 2, "\(events.map(\.line))")
            let wrong = try #require(events.first { $0.scenario == "wrong-host" }, "\(events.map(\.line))")
            #expect(wrong.fixture == lease.id && wrong.port == nil, "\(wrong.line)")
            #expect(wrong.line.hasPrefix("wrong-host (fixture \(lease.id)) #1 127.0.0.1:"), "\(wrong.line)")
            #expect(wrong.record.requests.isEmpty && wrong.record.endedAt != nil)
            let good = try #require(events.first { $0.scenario == "ats-compliant" }, "\(events.map(\.line))")
            #expect(good.fixture == nil && good.port == base + 1, "\(good.line)")
            #expect(good.record.requests.map(\.status) == [200], "\(good.line)")
        }
    }

    @Test("nothing to serve: one error, and nothing left running")
    func nothingToServe() async throws {
        let options = try FleetTests.freeOptions()
        await #expect(throws: RunnerError.self) {
            try await ScenarioRunner.withRunner(
                try ScenarioCatalog.builtIn.scenarios(named: ["ssl-v3"]), catalog: .builtIn,
                store: TestEnvironment.sharedStore, options: options
            ) { _ in }
        }
        #expect(!Ports.accepts(options.portBase), "the front door was left listening")
    }
}
