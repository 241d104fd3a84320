import Foundation
import NIOCore
import NIOPosix
import TLSFixturesFleet
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// `tls-fixtures serve` as a library object: the fleet (every scenario on its port), then the front door (dashboard,
/// control API, proxy) in front of it; `stop()` closes them in the reverse order. A test or a Mac app gets a whole
/// runner in one call, as the CLI does:
///
/// ```swift
/// try await ScenarioRunner.withRunner(catalog.scenarios, catalog: catalog, store: store) { runner in
///     // runner.frontDoor?.dashboardURL, runner.document(), …
/// }
/// ```
package final class ScenarioRunner: Sendable {
    /// The fleet's options (`portBase`, timeouts, domains, the legacy helper: reached as if they were this type's own)
    /// and the front door's.
    @dynamicMemberLookup
    package struct Options: Sendable {
        package var fleet = FixtureFleet.Options()
        /// Serve the dashboard, the control API and the proxy; false serves the fixtures alone (as the legacy helper).
        package var frontDoor = true
        /// Serve the proxy on this port of its own instead of the dashboard's.
        package var proxyPort: Int? = nil
        /// Let clients on other machines use the control API and the proxy (loopback only by default).
        package var allowRemoteClients = false
        /// Told each request the proxy answers with an error instead of reaching a fixture (`serve --log-connections`).
        package var proxyRefused: (@Sendable (ProxyRefusal) -> Void)? = nil

        package init() {}

        package subscript<Value>(dynamicMember keyPath: WritableKeyPath<FixtureFleet.Options, Value>) -> Value {
            get { fleet[keyPath: keyPath] }
            set { fleet[keyPath: keyPath] = newValue }
        }
    }

    package let fleet: FixtureFleet
    /// nil when `Options.frontDoor` is off.
    package let frontDoor: RunnerFrontDoor?

    private init(fleet: FixtureFleet, frontDoor: RunnerFrontDoor?) {
        self.fleet = fleet
        self.frontDoor = frontDoor
    }

    /// Holds every scenario's port (`FixtureFleet.open`), opens the front door on `portBase`, tells `listening` (so
    /// its URL can be the first thing `serve` prints: the dashboard answers from here on, showing each scenario
    /// `preparing` until it serves), then prepares the scenarios, each served the moment it is ready, and returns once
    /// the quick ones serve (slow keys go on in the background; `GET /api/health` says when everything is ready).
    /// Throws `RunnerError.nothingToServe` when no scenario can be served; nothing is left running when it throws.
    package static func start(
        _ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore, options: Options = Options(),
        progress: @escaping @Sendable (FixtureFleet.Progress) -> Void = { _ in },
        listening: (RunnerFrontDoor) -> Void = { _ in }
    ) async throws -> ScenarioRunner {
        let fleet = try await FixtureFleet.open(scenarios, catalog: catalog, store: store, options: options.fleet)
        var frontDoor: RunnerFrontDoor? = nil
        do {
            if options.frontDoor {
                var door = RunnerFrontDoor.Options(port: options.portBase)
                door.bindAddresses = options.bindAddresses
                door.proxyPort = options.proxyPort
                door.allowRemoteClients = options.allowRemoteClients
                door.proxyRefused = options.proxyRefused
                door.idleTimeout = options.idleTimeout
                door.headerTimeout = options.headerTimeout
                door.maximumConnections = options.maximumConnections
                door.logger = options.fleet.fixtureConfiguration(port: options.portBase).logger
                let ca = try await BlockingWork.blockingIO { try store.ca().certificate }
                let opened = try await RunnerFrontDoor.open(fleet: fleet, ca: ca, options: door)
                frontDoor = opened
                listening(opened)
            }
            try await fleet.serve(progress: progress)
            let states = fleet.catalogStates
            guard states.contains(where: \.state.isServingOrPreparing) else {
                let reasons = states.compactMap { scenario, state -> String? in
                    if case .unsupported(let reason) = state { return "\(scenario.name): \(reason)" }
                    return nil
                }
                throw RunnerError.nothingToServe(reasons)
            }
        } catch {
            await frontDoor?.stop()
            await fleet.stop()
            throw error
        }
        return ScenarioRunner(fleet: fleet, frontDoor: frontDoor)
    }

    /// Starts a runner, runs `body` with it, and stops it whether `body` returns or throws.
    package static func withRunner<T>(
        _ scenarios: [Scenario], catalog: ScenarioCatalog, store: CertificateStore,
        options: Options = Options(), _ body: (ScenarioRunner) async throws -> T
    ) async throws -> T {
        let runner = try await start(scenarios, catalog: catalog, store: store, options: options)
        do {
            let value = try await body(runner)
            await runner.stop()
            return value
        } catch {
            await runner.stop()
            throw error
        }
    }

    /// The front door first (no new requests, tunnels closed), then every fixture.
    package func stop() async {
        await frontDoor?.stop()
        await fleet.stop()
    }

    /// The catalog document for what runs now (`serve --json`, the dashboard's `/scenarios.json`).
    package func document() -> CatalogDocument {
        let document = fleet.document()
        return frontDoor?.decorate(document) ?? document
    }

    /// Set when this process may hold fewer descriptors than the fixtures want: one line saying so and how to raise it.
    package var descriptorWarning: String? { fleet.descriptorWarning }
}

/// Why a runner did not start.
package struct RunnerError: CodedError {
    package typealias Code = ErrorCode<RunnerError>

    package let code: Code
    package let reason: String
    package let fix: String?
    /// For `notReady`: whether a runner answered at all (then it is still preparing, and starting one is no fix).
    package var runnerAnswered = false

    /// No scenario asked for can be served (`reasons`: "NAME: why" each).
    static func nothingToServe(_ reasons: [String]) -> RunnerError {
        RunnerError(
            code: .nothingToServe,
            reason: "nothing to serve: \(reasons.isEmpty ? "no scenarios" : reasons.joined(separator: "; "))",
            fix: "name scenarios the linked OpenSSL supports (ScenarioCatalog.builtIn lists them)")
    }

    /// The runner at `url` was still not ready after `waited` seconds: `what` (its health's summary, or why nothing
    /// answered).
    static func notReady(_ url: URL, _ what: String, waited: TimeInterval, answered: Bool) -> RunnerError {
        var error = RunnerError(
            code: .notReady,
            reason: "the runner at \(url.absoluteString) is not ready after \(Self.seconds(waited)): \(what)",
            fix: "wait longer (a first run makes an RSA-8192 key: about a minute)"
                + (answered ? "" : ", or start `tls-fixtures serve` there"))
        error.runnerAnswered = answered
        return error
    }

    private static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// The runner at `url` will not become ready for what was asked: `what` (its health's summary).
    static func willNotServe(_ url: URL, _ what: String) -> RunnerError {
        RunnerError(
            code: .willNotServe, reason: "the runner at \(url.absoluteString) will not be ready: \(what)",
            fix: "ask about scenarios it serves (/scenarios.json lists them), or serve the one you need")
    }

    /// Nothing answered at `url` (`why`: "connection refused", …).
    static func unreachable(_ url: URL, _ why: String) -> RunnerError {
        RunnerError(
            code: .unreachable, reason: "no tls-fixtures runner answers at \(url.absoluteString) (\(why))",
            fix: "start one with `tls-fixtures serve`, or give the URL it prints first")
    }

    /// The runner has no records of what was asked for: `why`, in the runner's words.
    static func unavailable(_ why: String) -> RunnerError {
        // The runner's words carry their own fixes.
        RunnerError(code: .unavailable, reason: why, fix: nil)
    }

    /// Something other than a runner answered at `url` (`why`).
    static func notARunner(_ url: URL, _ why: String) -> RunnerError {
        RunnerError(
            code: .notARunner, reason: "\(url.absoluteString) is not a tls-fixtures runner: \(why)",
            fix: "give the URL `tls-fixtures serve` prints first (http://localhost:9800/, or the --port-base it was "
                + "given)")
    }
}

extension ErrorCode where Owner == RunnerError {
    /// Every scenario asked for is unsupported (or none was asked for).
    package static var nothingToServe: Self { Self("nothingToServe") }
    /// A wait for a runner ran out before it was ready.
    package static var notReady: Self { Self("notReady") }
    /// A wait for a runner asked about a scenario it will never serve (or the runner is stopping): waiting cannot help.
    package static var willNotServe: Self { Self("willNotServe") }
    /// What answered is not a runner (another program, or a runner too old to have `/api/health`).
    package static var notARunner: Self { Self("notARunner") }
    /// Nothing answered at the runner's URL.
    package static var unreachable: Self { Self("unreachable") }
    /// The runner has no fixture of that name or id (or its state has no records).
    package static var unavailable: Self { Self("unavailable") }
}
