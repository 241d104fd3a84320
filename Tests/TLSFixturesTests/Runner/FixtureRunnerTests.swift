import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures
import TLSFixturesFleet
@testable import TLSFixturesRunner

/// `serve` as a public library object (issues 23 and 37): what the CLI does, a test does through the public API in one
/// call to start and one to stop, or with `run()` as a service whose task is cancelled; nothing is left listening.
@Suite("FixtureRunner, the library's serve")
struct FixtureRunnerTests {
    /// A runner of the shared store on a free block of ports, serving `scenarios`, without the legacy helper.
    static func configuration(_ scenarios: [String]) throws -> FixtureRunner.Configuration {
        var configuration = try FleetTests.freeConfiguration()
        configuration.scenarios = scenarios
        return configuration
    }

    /// A lease as a control API client asks for one: `curl` retrying what the API answers as transient (503 with
    /// `Retry-After` while a scenario prepares or a place is busy), for up to 15 minutes, which only detects a hang.
    static func lease(_ scenario: String, at runner: String) async throws -> FixtureDescription {
        let answer = try await Subprocess.runAwaiting([
            "curl", "-sS", "-f", "--retry", "100", "--retry-max-time", "900", "-H", "Content-Type: application/json",
            "--data", #"{"scenario": "\#(scenario)"}"#, "\(runner)api/fixtures",
        ], timeout: 960)
        return try decode(FixtureDescription.self, answer, FixtureAPI.decoder(), what: "POST \(runner)api/fixtures")
    }

    /// `answer`'s standard output decoded, or an error naming the request, curl's status and what curl said (an
    /// empty body from a failed request is otherwise only "not valid JSON").
    static func decode<T: Decodable>(_ type: T.Type, _ answer: Subprocess.Result, _ decoder: JSONDecoder = JSONDecoder(),
                                     what: String) throws -> T {
        do {
            guard answer.status == 0 else { throw CurlFailed(description: "curl exited \(answer.status)") }
            return try decoder.decode(type, from: answer.stdoutData)
        } catch {
            throw CurlFailed(description: "\(what): \(error); curl's status \(answer.status), it said: \(answer.combined)")
        }
    }

    struct CurlFailed: Error, CustomStringConvertible { let description: String }

    // README: runner-example begin
    /// Starts the whole runner (its scenarios on their ports, the dashboard, the control API and the proxy) for
    /// `body`, and stops it after, whether `body` returns or throws: every port is free again when this returns.
    func withWholeRunner(
        _ configuration: FixtureRunner.Configuration, _ body: (_ dashboard: URL) async throws -> Void
    ) async throws {
        let runner = try await FixtureRunner.start(configuration)
        do {
            try await body(try #require(runner.dashboardURL))
        } catch {
            await runner.stop()
            throw error
        }
        await runner.stop()
    }
    // README: runner-example end

    @Test(
        "one public call starts the fleet and the front door, one stops both and frees every port",
        .requires(Tools.curl))
    func oneCallEach() async throws {
        let configuration = try Self.configuration(["ats-compliant", "http"])
        let base = configuration.portBase
        var ports: [HeldPort] = []
        try await withWholeRunner(configuration) { dashboard in
            #expect(dashboard == URL(string: "http://localhost:\(base)/"))
            // A real client reads the dashboard's catalog and reaches a fixture on the port it lists.
            let listed = try await Subprocess.runAwaiting(["curl", "-sSf", "\(dashboard)scenarios.json"])
            let document = try Self.decode(CatalogDocument.self, listed, what: "GET \(dashboard)scenarios.json")
            #expect(document.proxy == ProxyEndpoint(port: base, domains: ["fixtures.test"]))
            let http = try #require(document.scenarios.first { $0.name == "http" }?.port)
            let answer = try await Subprocess.runAwaiting(["curl", "-sSf", "http://localhost:\(http)/"])
            #expect(answer.stdout.contains("\"scenario\":\"http\""), "\(answer.combined)")
            // And the control API on the same port starts a leased fixture the stop must end too.
            let lease = try await Self.lease("http", at: dashboard.absoluteString)
            let listening = [base] + document.scenarios.compactMap(\.port) + [lease.port]
            #expect(listening.allSatisfy { Ports.accepts($0) }, "\(listening)")
            // Freed is judged by the listening sockets themselves: the lease's port is ephemeral, and another test's
            // listener may take it the moment it is free.
            ports = listening.map { Ports.held($0) }
        }
        #expect(ports.count == 4)
        for held in ports { #expect(held.released, "port \(held.port) still listens after stop()") }
    }

    /// swift-service-lifecycle's contract: `run()` serves until its task is cancelled, then stops everything and
    /// returns without an error; `stop()` from elsewhere ends it the same way.
    @Test("run() serves until its task is cancelled, or until stop(), and returns once every port is free")
    func runUntilCancelledOrStopped() async throws {
        for ending in ["cancel", "stop"] {
            let configuration = try Self.configuration(["ats-compliant"])
            let runner = try FixtureRunner(configuration)
            let running = Task { try await runner.run() }
            // A hang detector: beside another whole CI run, this process's preparation of ats-compliant, queued
            // behind every other test's, once took over 300 s.
            let health = try await RunnerReadiness.wait(
                runner: URL(string: "http://localhost:\(configuration.portBase)/")!, timeout: 900)
            #expect(health.ready, "\(health.summary)")
            let fixture = configuration.portBase + 1
            #expect(Ports.accepts(fixture))
            // Judged by the listening sockets themselves, named when one is left (a CI rehearsal saw the fixture's
            // port accept after a cancel once, ci24, and could not say whose socket it was).
            let held = [configuration.portBase, fixture].map { Ports.held($0) }
            if ending == "cancel" { running.cancel() } else { await runner.stop() }
            try await running.value
            for port in held {
                #expect(port.released, "\(ending) left port \(port.port) listening: \(port.sockets)")
            }
            // Started once: a runner is not started again.
            await #expect(throws: RunnerError.alreadyStarted) { try await runner.start() }
        }
    }

    @Test("the configuration checks itself before anything is bound, and names what it exposes")
    func configurationChecks() throws {
        var configuration = FixtureRunner.Configuration()
        configuration.legacyHelper = .none
        #expect(throws: Never.self) { try configuration.validate() }
        #expect(configuration.warnings.isEmpty, "\(configuration.warnings)")
        func refusal(_ change: (inout FixtureRunner.Configuration) -> Void) -> String? {
            var changed = configuration
            change(&changed)
            do {
                _ = try FixtureRunner(changed)
                return nil
            } catch let error as any CodedError {
                return "\(error.code): \(error.reason)"
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal { $0.scenarios = ["expird"] }?.hasPrefix("unknown:") == true)
        #expect(refusal { $0.portBase = 0 } == "portBaseOutOfRange: portBase must be a TCP port (1–65535)")
        #expect(refusal { $0.portBase = 65_500 }?.hasPrefix("portsAboveRange: portBase 65500 puts ports above") == true)
        #expect(refusal { $0.proxyPort = $0.portBase }?.hasPrefix("proxyPort:") == true)
        #expect(refusal { $0.maximumConnections = 0 }?.hasPrefix("maximumConnections:") == true)
        #expect(refusal { $0.legacyHelper = .at(URL(fileURLWithPath: "/nonexistent/helper")) }
            == "legacyHelperNotExecutable: the legacy helper /nonexistent/helper is not an executable")
        #expect(refusal { $0.handshakeTimeout = .zero }?.hasPrefix("outOfRange:") == true)
        #expect(refusal { $0.domains = ["*.example.com"] }?.hasPrefix("invalid:") == true)

        // What `serve` used to decide alone: every caller gets the same warnings.
        configuration.bindAddresses = ["0.0.0.0"]
        configuration.portBase = 800
        #expect(configuration.warnings.count == 2, "\(configuration.warnings)")
        #expect(configuration.warnings[0].hasPrefix("warning: listening on 0.0.0.0"))
        #expect(configuration.warnings[1].contains("below 1024 where system services live"))
        configuration.portBase = 40_000
        #expect(configuration.warnings.last?.contains("in Linux's ephemeral range") == true, "\(configuration.warnings)")
    }

    @Test("connectionEnded is told each connection once it closes: a catalog fixture by its port, a control API one by its id",
          .requires(Tools.curl))
    func connectionEnded() async throws {
        var configuration = try Self.configuration(["ats-compliant"])
        let seen = NIOLockedValueBox<[FleetConnection]>([])
        configuration.connectionEnded = { event in seen.withLockedValue { $0.append(event) } }
        let base = configuration.portBase
        let root = TestEnvironment.sharedStore.certificatePath(.root).path
        try await FixtureRunner.withRunner(configuration) { _ in
            let lease = try await Self.lease("wrong-host", at: "http://localhost:\(base)/")
            let refused = try await Subprocess.runAwaiting(["curl", "-sS", "--cacert", root, "https://localhost:\(lease.port)/"])
            #expect(refused.status == 60, "\(refused.combined)")
            _ = try await Subprocess.runAwaiting(["curl", "-sSf", "--cacert", root, "https://localhost:\(base + 1)/"])
            // Told as each connection closes; 20 s only detects a hang.
            await Poll.until(timeout: 20) { seen.withLockedValue { $0.count } >= 2 }
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
        let configuration = try Self.configuration(["ssl-v3"])
        await #expect(throws: RunnerError.self) { try await FixtureRunner.start(configuration) }
        // Named with whose socket it is: a CI rehearsal (ci28, under ASan beside two other runs) saw the port accept,
        // and could not say whether the front door was left open or another program took the port.
        #expect(!Ports.accepts(configuration.portBase),
                "the front door was left listening: \(Ports.held(configuration.portBase).sockets)")
    }
}
