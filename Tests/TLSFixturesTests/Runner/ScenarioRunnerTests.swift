import Foundation
import Testing
@testable import TLSFixtures

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
            let listed = try Subprocess.run(["curl", "-sSf", "http://localhost:\(base)/scenarios.json"])
            let document = try JSONDecoder().decode(CatalogDocument.self, from: listed.stdoutData)
            #expect(document.proxy == ProxyEndpoint(port: base, domains: ["fixtures.test"]))
            let http = try #require(document.scenarios.first { $0.name == "http" }?.port)
            let answer = try Subprocess.run(["curl", "-sSf", "http://localhost:\(http)/"])
            #expect(answer.stdout.contains("\"scenario\":\"http\""), "\(answer.combined)")
            // And the control API on the same port starts a leased fixture the stop must end too.
            let leased = try Subprocess.run([
                "curl", "-sSf", "-H", "Content-Type: application/json", "--data", #"{"scenario": "http"}"#,
                "http://localhost:\(base)/api/fixtures",
            ])
            let lease = try FixtureAPI.decoder().decode(FixtureDescription.self, from: leased.stdoutData)
            return [base] + document.scenarios.compactMap(\.port) + [lease.port]
        }
        for port in ports { #expect(!Ports.accepts(port), "port \(port) still listens after the runner's scope ended") }
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
