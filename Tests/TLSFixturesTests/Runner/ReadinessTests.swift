import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import TLSFixtures
@testable import TLSFixturesFleet
@testable import TLSFixturesRunner
@testable import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Holds named scenarios back before they are prepared (`FixtureFleet.Hooks.preparationGate`), as a slow key would,
/// until the test lets them through: so a test sees a scenario `preparing` for as long as it needs to, by events.
final class PreparationGate: Sendable {
    private let state = NIOLockedValueBox<(held: Set<String>, waiting: [String: [CheckedContinuation<Void, Never>]])>(
        ([], [:]))

    init(holding names: Set<String>) { state.withLockedValue { $0.held = names } }

    /// What the fleet calls before preparing `scenario`.
    var gate: @Sendable (Scenario) async -> Void {
        { [self] scenario in
            await withCheckedContinuation { continuation in
                let held = state.withLockedValue { state -> Bool in
                    guard state.held.contains(scenario.name) else { return false }
                    state.waiting[scenario.name, default: []].append(continuation)
                    return true
                }
                if !held { continuation.resume() }
            }
        }
    }

    /// Lets `name` through, now and from now on.
    func release(_ name: String) {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.held.remove(name)
            return state.waiting.removeValue(forKey: name) ?? []
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// What a TCP client gets from a port: 0 when it connects, else the errno (`ECONNREFUSED` from a port bound by nobody
/// or by a socket that does not listen).
func connectErrno(_ port: Int) -> Int32 {
    let fd = socket(AF_INET, streamSocketType, 0)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    return connected ? 0 : errno
}

/// Issue 26, items 1–3, in this process: a fleet is `preparing` from the moment it holds its ports, serves each
/// scenario the moment it is ready (cheapest first), says "ready" only when nothing it serves is preparing, refuses
/// connections to a port still preparing instead of resetting them, and makes a control API start of a scenario it
/// is preparing wait for it (bounded) or refuse with one clear error.
@Suite("Ready when it says so: the fleet's readiness")
struct ReadinessTests {
    static let catalog = ScenarioCatalog.builtIn

    /// How long a test waits for a scenario the fleet prepares: an upper bound that only a hang reaches. Preparation
    /// queues behind every other test's in this process (dozens of suites making keys in stores of their own on 2 cores
    /// took a quick one 50 s), so it is far above what `serve` alone needs.
    static let preparationBound = TimeAmount.seconds(300)

    /// Makes `names`' keys and leaves in the shared store before a test opens its fleet. Making a key queues behind
    /// every suite's key generation in this process (ci25, under ASan beside another run: over 300 s), and what these
    /// tests check is readiness, not how long that queue is: warm, the fleet's preparations generate nothing, so they
    /// take no CPU permit (`BlockingWork.Lane.nothingToMake`), and each bounded wait below is for the fleet alone.
    static func warm(_ names: [String]) async throws {
        for name in names {
            _ = try await FixtureServer.prepare(try catalog.scenario(named: name), store: TestEnvironment.sharedStore)
        }
    }

    static func options(gate: PreparationGate, startWait: TimeAmount = preparationBound) throws -> FixtureFleet.Options {
        var options = FixtureFleet.Options()
        options.portBase = try ServeEndToEndTests.freePortBase()
        options.hooks.preparationGate = gate.gate
        options.hooks.preparingStartWait = startWait
        return options
    }

    @Test("held ports refuse, each scenario serves the moment it is ready, and health says ready only at the end")
    func servesEachWhenReady() async throws {
        try await Self.warm(["ats-compliant", "expired"])
        let gate = PreparationGate(holding: ["expired"])
        let options = try Self.options(gate: gate)
        let scenarios = try Self.catalog.scenarios(named: ["ats-compliant", "expired", "ssl-v3"])
        let fleet = try await FixtureFleet.open(
            scenarios, catalog: Self.catalog, store: TestEnvironment.sharedStore, options: options)
        let port = { (name: String) in
            Self.catalog.port(of: try Self.catalog.scenario(named: name), portBase: options.portBase)!
        }

        // Open: every port held, none listening; everything preparing, so nothing is ready.
        let before = RunnerHealth(fleet, asking: nil)
        // In catalog order, as the dashboard lists them.
        let inOrder = Self.catalog.names.filter { ["ats-compliant", "expired", "ssl-v3"].contains($0) }
        #expect(before.status == .preparing && before.waitingFor == inOrder, "\(before)")
        #expect(!before.ready && before.summary == "still preparing \(inOrder.joined(separator: ", ")); 0 serving")
        // Held: bound by the fleet (an unbound port refuses too, so the refusal alone proves nothing), not listening.
        let (compliantPort, expiredPort) = (try port("ats-compliant"), try port("expired"))
        #expect(Ports.isBound(compliantPort) && Ports.isBound(expiredPort), "a port is not held")
        #expect(connectErrno(try port("ats-compliant")) == ECONNREFUSED, "a held port accepted a connection")

        let serving = Task { try await fleet.serve() }
        // Woken when it leaves preparing: ats-compliant serves while expired is still held back.
        let settled = await fleet.settled("ats-compliant", within: Self.preparationBound)
        guard case .serving(let fixture)? = settled else {
            Issue.record("ats-compliant did not serve within \(Self.preparationBound.nanoseconds / 1_000_000_000) s: \(settled.map { "\($0)" } ?? "still preparing")")
            gate.release("expired")
            await fleet.stop()
            return
        }
        #expect(fixture.port == (try port("ats-compliant")) && Ports.accepts(fixture.port))
        let meanwhile = RunnerHealth(fleet, asking: nil)
        #expect(meanwhile.status == .preparing && meanwhile.waitingFor.contains("expired"), "\(meanwhile)")
        #expect(connectErrno(try port("expired")) == ECONNREFUSED, "a port still preparing must refuse, not reset")
        #expect(Ports.isBound(expiredPort), "a port still preparing is not held")
        #expect(RunnerHealth(fleet, asking: ["ats-compliant"]).ready, "a scenario asked about by name is ready once it serves")
        let unsupported = RunnerHealth(fleet, asking: ["ssl-v3"])
        guard case .unsupported? = await fleet.settled("ssl-v3", within: Self.preparationBound) else {
            Issue.record("ssl-v3 is not unsupported")
            return
        }
        let never = RunnerHealth(fleet, asking: ["ssl-v3"])
        #expect(never.status == .unavailable && never.unavailable.map(\.name) == ["ssl-v3"],
                "\(never) (\(unsupported))")
        #expect(never.summary.hasPrefix("ssl-v3 will not be served: "), "\(never.summary)")
        let stranger = RunnerHealth(fleet, asking: ["rsa8192", "no-such"])
        #expect(stranger.unavailable.map(\.name) == ["rsa8192", "no-such"])
        #expect(stranger.unavailable[0].reason.contains("does not serve it on its catalog port"))
        #expect(stranger.unavailable[1].reason.contains("no scenario of that name"))

        gate.release("expired")
        try await serving.value
        let after = RunnerHealth(fleet, asking: nil)
        #expect(after.ready && after.status == .ready && after.waitingFor.isEmpty, "\(after)")
        #expect(after.summary == "ready: 2 serving, 1 unsupported", "\(after.summary)")
        #expect(Dictionary(uniqueKeysWithValues: after.scenarios.map { ($0.name, $0.status) })
            == ["ats-compliant": "serving", "expired": "serving", "ssl-v3": "unsupported"])
        #expect(Ports.accepts(try port("expired")))
        await fleet.stop()
        #expect(RunnerHealth(fleet, asking: nil).status == .stopping)
    }

    @Test("a start through the API of a scenario still preparing waits for it, and is served once it is")
    func startWaitsForPreparation() async throws {
        try await Self.warm(["expired"])
        let gate = PreparationGate(holding: ["expired"])
        let fleet = try await FixtureFleet.open(
            try Self.catalog.scenarios(named: ["expired"]), catalog: Self.catalog, store: TestEnvironment.sharedStore,
            options: try Self.options(gate: gate))
        let serving = Task { try await fleet.serve() }
        let finished = NIOLockedValueBox(false)
        let start = Task {
            defer { finished.withLockedValue { $0 = true } }
            return try await fleet.startLeased(LeaseRequest(scenario: .catalog("expired")))
        }
        // Once the start waits on the catalog fixture, it has not finished: looked for every 5 ms, sleeping in
        // between (a loop of Task.yield() kept a pool thread busy for as long as the start took to get there).
        while !fleet.state.withLockedValue(\.hasWaiters) && !finished.withLockedValue({ $0 }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(!finished.withLockedValue { $0 }, "the start did not wait for the scenario being prepared")
        gate.release("expired")
        let started = try await start.value
        try await serving.value
        #expect(started.scenario.name == "expired" && Ports.accepts(started.port))
        guard case .serving? = fleet.catalogStates.first?.state else {
            Issue.record("the catalog's expired does not serve")
            return
        }
        await fleet.stop()
    }

    @Test("a start through the API of a scenario still preparing past the wait is one clear 503 error")
    func startRefusedWhilePreparing() async throws {
        let gate = PreparationGate(holding: ["expired"])
        let fleet = try await FixtureFleet.open(
            try Self.catalog.scenarios(named: ["expired"]), catalog: Self.catalog, store: TestEnvironment.sharedStore,
            options: try Self.options(gate: gate, startWait: .milliseconds(100)))
        let serving = Task { try await fleet.serve() }
        do {
            _ = try await fleet.startLeased(LeaseRequest(scenario: .catalog("expired")))
            Issue.record("a start of a scenario still preparing succeeded before it was ready")
        } catch {
            #expect(error.code == .preparing && error.part == .scenario, "\(error)")
            #expect(error.reason.hasPrefix("expired is still being prepared on its catalog port"), "\(error.reason)")
            let answer = FleetErrorStatus.failure(error)
            #expect(answer.status == 503 && answer.body.error.contains("GET /api/health?scenarios=NAME"), "\(answer)")
            #expect(!answer.body.error.contains("\n"))
        }
        #expect(fleet.leasedFixtures(session: nil).isEmpty, "a refused start left a fixture")
        gate.release("expired")
        try await serving.value
        await fleet.stop()
    }

    /// The cost each scenario's preparation has on an empty store (`CertificateStore.preparationCost`; every one also
    /// pays the root's EC key there, 1): nothing to make (http) 0, an EC key 1, an RSA key its bits, a DH group made to measure or an intermediate CA not made yet (an RSA-2048 key)
    /// its bits more. RSA key generation grows with the cube
    /// of the modulus or faster (FIPS 186-5 B.3.3's prime search over n/2-bit candidates), so bits order them rightly.
    @Test("cheapest first for serve, slowest first for prepare; a key the store has costs nothing")
    func preparationOrder() throws {
        let store = CertificateStore.at(TestEnvironment.temporaryDirectory("order"))
        let names = ["rsa4096", "intermediate", "expired", "ecc256", "http", "rsa512", "dh512", "rsa1024"]
        let scenarios = try Self.catalog.scenarios(named: names)
        let cheapest = FixtureFleet.ordered(scenarios, store: store, .cheapestFirst).map(\.name)
        #expect(cheapest == ["http", "ecc256", "rsa512", "rsa1024", "expired", "dh512", "rsa4096", "intermediate"])
        let slowest = FixtureFleet.ordered(scenarios, store: store, .slowestFirst).map(\.name)
        #expect(slowest == ["rsa4096", "intermediate", "dh512", "expired", "rsa1024", "rsa512", "ecc256", "http"])
        _ = try store.prepare(try Self.catalog.scenario(named: "expired"))
        let warm = FixtureFleet.ordered(scenarios, store: store, .cheapestFirst).map(\.name)
        #expect(warm.prefix(2) == ["expired", "http"], "a key the store has is made first: \(warm)")
    }
}

/// `GET /api/health` in memory: the fleet's health as JSON, 200 when ready and 503 when not.
@Suite("Ready when it says so: GET /api/health")
struct HealthRouteTests {
    @Test("200 when ready, 503 with Retry-After while preparing, the scenarios asked about passed on, bad queries 400")
    func healthRoute() async throws {
        let fleet = FakeFleet()
        let door = try await FrontDoorConnection.open(fleet)
        let ready = try await door.send("GET", "/api/health")
        #expect(ready.status == 200 && ready.header("Content-Type") == "application/json", "\(ready.text)")
        #expect(try ready.decode(RunnerHealth.self) == RunnerHealth(fleet, asking: nil))
        #expect(try ready.decode(RunnerHealth.self).summary == "ready: 1 serving")

        fleet.statuses.withLockedValue { $0 = [("rsa8192", .preparing), ("expired", .serving)] }
        let waiting = try await door.send("GET", "/api/health?scenarios=rsa8192,expired")
        #expect(waiting.status == 503 && waiting.header("Retry-After") == "1", "\(waiting.text)")
        let decoded = try waiting.decode(RunnerHealth.self)
        #expect(decoded == RunnerHealth(fleet, asking: ["rsa8192", "expired"]) && !decoded.ready)
        #expect(decoded.waitingFor == ["rsa8192"] && decoded.summary == "still preparing rsa8192; 1 serving")

        let typo = try await door.send("GET", "/api/health?scenario=rsa8192")
        #expect(typo.status == 400 && typo.error?.field == "scenario", "\(typo.text)")
        let empty = try await door.send("GET", "/api/health?scenarios=")
        #expect(empty.status == 400 && empty.error?.field == "scenarios", "\(empty.text)")
        let post = try await door.send("POST", "/api/health", body: "{}")
        #expect(post.status == 405 && post.header("Allow") == "GET")
        fleet.stopping.withLockedValue { $0 = true }
        let stopping = try await door.send("GET", "/api/health")
        #expect(stopping.status == 503 && stopping.header("Retry-After") == nil, "\(stopping.text)")
    }
}
