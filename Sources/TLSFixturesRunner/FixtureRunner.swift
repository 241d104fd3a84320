import Foundation
import NIOConcurrencyHelpers
import NIOCore
import TLSFixturesFleet
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tls-fixtures serve` as a library object: every scenario of its configuration on its catalog port, then the
/// dashboard, the control API and the proxy in front of them, stopped in the reverse order. Shaped as a
/// swift-service-lifecycle `Service`: configured once, checked once, and `run()` serves until its task is cancelled or
/// `stop()` is called (or, with `stopsOnSignals`, until SIGINT or SIGTERM), then stops everything and returns. The CLI
/// builds the configuration from its flags and calls `run()`; a test does the same, or starts and stops it around its
/// own work:
///
/// ```swift
/// var configuration = FixtureRunner.Configuration()
/// configuration.portBase = 20_800
/// let runner = try await FixtureRunner.start(configuration)   // the quick scenarios serve
/// // runner.dashboardURL, http://localhost:20800/api/fixtures, https://localhost:20831/ …
/// await runner.stop()                                          // every port is free again
/// ```
public final class FixtureRunner: Sendable {
    /// What the runner tells whoever started it, in order (`tls-fixtures serve` prints each).
    package enum Event: Sendable {
        /// The dashboard answers at this URL from now on; each scenario shows `preparing` until it serves.
        case listening(URL)
        /// A step of a slow first run.
        case progress(FixtureFleet.Progress)
        /// Started: the quick scenarios serve (with `stopsOnSignals`, the signals are taken over already), with the
        /// line to show when this process may hold fewer descriptors than the fixtures want. `run()` says it;
        /// `start()` returns instead.
        case serving(CatalogDocument, descriptorWarning: String?)
        /// Stopping, for this signal (nil: `stop()`, or the task was cancelled).
        case stopping(signal: Int32?)
    }

    /// What this runner serves and how, as it was checked.
    public let configuration: Configuration
    private let hooks: FixtureFleet.Hooks
    private let events: @Sendable (Event) -> Void
    private let state = NIOLockedValueBox(Lifecycle())

    /// Checks `configuration` (`Configuration.validate()`): nothing is made or bound until `start()` or `run()`.
    public convenience init(_ configuration: Configuration) throws {
        try self.init(configuration, hooks: FixtureFleet.Hooks(), events: { _ in })
    }

    /// With the fleet's test hooks, and `events` told each step.
    package init(
        _ configuration: Configuration, hooks: FixtureFleet.Hooks, events: @escaping @Sendable (Event) -> Void
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.hooks = hooks
        self.events = events
    }

    /// A runner started with `configuration`, in one call: it returns once the quick scenarios serve (slow keys go on
    /// in the background; `GET /api/health` says when everything is ready). Stop it with `stop()`.
    public static func start(_ configuration: Configuration) async throws -> FixtureRunner {
        let runner = try FixtureRunner(configuration)
        try await runner.start()
        return runner
    }

    /// Holds every scenario's port, opens the front door on `portBase` (the dashboard answers from here on, showing
    /// each scenario `preparing` until it serves), then prepares the scenarios, each served the moment it is ready,
    /// and returns once the quick ones serve. Throws `RunnerError.nothingToServe` when no scenario can be served;
    /// nothing is left running when it throws. A runner starts once.
    public func start() async throws {
        try state.withLockedValue { try $0.beginStart() }
        let parts: Parts
        do {
            parts = try await compose()
        } catch {
            state.withLockedValue { $0.startFailed() }.forEach { $0.resume() }
            throw error
        }
        if state.withLockedValue({ $0.started(parts) }) {
            // Asked to stop while it started.
            await shutdown()
            throw CancellationError()
        }
    }

    /// Starts (unless `start()` has), serves until the task is cancelled, `stop()` is called, or (with
    /// `stopsOnSignals`) SIGINT or SIGTERM comes, then stops everything and returns: a graceful stop is no error.
    public func run() async throws {
        if state.withLockedValue(\.isIdle) { try await start() }
        // Before anyone is told: a signal sent the moment a caller reads that must find its handler in place.
        if configuration.stopsOnSignals {
            let signals = ShutdownSignal.listen()
            // Waits for the process's whole life when no signal comes; the runner stops on its own meanwhile.
            Task { [weak self] in
                let number = await signals.wait()
                self?.requestStop(signal: number)
            }
        }
        events(.serving(document(), descriptorWarning: descriptorWarning))
        let signal = await withTaskCancellationHandler {
            await withCheckedContinuation { (asked: CheckedContinuation<Int32?, Never>) in
                if let reason = state.withLockedValue({ $0.waitForStop(asked) }) { asked.resume(returning: reason) }
            }
        } onCancel: {
            requestStop(signal: nil)
        }
        events(.stopping(signal: signal))
        await shutdown()
    }

    /// Stops everything it started: the front door first (no new requests, tunnels closed), then every fixture, and
    /// makes `run()` return. Returns once every port is free; again is nothing.
    public func stop() async {
        requestStop(signal: nil)
        await shutdown()
    }

    /// The dashboard's URL (`http://localhost:PORT/`), once it listens; nil before, and without a front door.
    public var dashboardURL: URL? { parts?.frontDoor?.dashboardURL }

    /// Returns once nothing is left preparing in the background (at once when nothing was).
    public func waitUntilPrepared() async { await parts?.fleet.waitUntilPrepared() }

    // MARK: For this package

    /// The fleet, once started.
    package var fleet: FixtureFleet? { parts?.fleet }
    /// The front door, once started (nil with `Configuration.frontDoor` off).
    package var frontDoor: RunnerFrontDoor? { parts?.frontDoor }

    /// The catalog document for what runs now (`serve --json`, the dashboard's `/scenarios.json`).
    package func document() -> CatalogDocument {
        guard let parts else { return CatalogDocument(dashboard: nil, scenarios: []) }
        let document = parts.fleet.document()
        return parts.frontDoor?.decorate(document) ?? document
    }

    /// Set when this process may hold fewer descriptors than the fixtures want: one line saying so and how to raise it.
    package var descriptorWarning: String? { parts?.fleet.descriptorWarning }

    /// Starts a runner, runs `body` with it, and stops it whether `body` returns or throws.
    package static func withRunner<T>(
        _ configuration: Configuration, hooks: FixtureFleet.Hooks = FixtureFleet.Hooks(),
        _ body: (FixtureRunner) async throws -> T
    ) async throws -> T {
        let runner = try FixtureRunner(configuration, hooks: hooks, events: { _ in })
        try await runner.start()
        do {
            let value = try await body(runner)
            await runner.stop()
            return value
        } catch {
            await runner.stop()
            throw error
        }
    }

    // MARK: The composition

    /// What a started runner holds.
    struct Parts: Sendable {
        var fleet: FixtureFleet
        var frontDoor: RunnerFrontDoor?
    }

    private var parts: Parts? { state.withLockedValue(\.parts) }

    /// The fleet holds its ports, the front door opens, then the fleet serves; on a failure everything started so far
    /// stops again.
    private func compose() async throws -> Parts {
        let fleet = try await FixtureFleet.open(
            try configuration.chosenScenarios(), catalog: configuration.catalog, store: configuration.store,
            options: configuration.fleetOptions(hooks: hooks))
        var frontDoor: RunnerFrontDoor? = nil
        do {
            if configuration.frontDoor {
                var door = RunnerFrontDoor.Options(port: configuration.portBase)
                door.bindAddresses = fleet.options.bindAddresses
                door.proxyPort = configuration.proxyPort
                door.allowRemoteClients = configuration.allowRemoteClients
                door.proxyRefused = configuration.proxyRefused
                door.idleTimeout = configuration.idleTimeout
                door.headerTimeout = configuration.headerTimeout
                door.maximumConnections = configuration.maximumConnections
                door.logger = fleet.options.fixtureConfiguration(port: configuration.portBase).logger
                let store = configuration.store
                let ca = try await BlockingWork.blockingIO { try store.ca().certificate }
                let opened = try await RunnerFrontDoor.open(fleet: fleet, ca: ca, options: door)
                frontDoor = opened
                events(.listening(opened.dashboardURL))
            }
            let events = events
            try await fleet.serve(progress: { events(.progress($0)) })
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
        return Parts(fleet: fleet, frontDoor: frontDoor)
    }

    private func requestStop(signal: Int32?) {
        state.withLockedValue { $0.requestStop(signal: signal) }?.resume(returning: signal)
    }

    /// Stops what runs, once: a second caller waits for the first to finish.
    private func shutdown() async {
        let step = state.withLockedValue { $0.beginShutdown() }
        switch step {
        case .done:
            return
        case .stop(let parts):
            await parts.frontDoor?.stop()
            await parts.fleet.stop()
            state.withLockedValue { $0.finishShutdown() }.forEach { $0.resume() }
        case .wait:
            await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
                if !state.withLockedValue({ $0.waitUntilStopped(stopped) }) { stopped.resume() }
            }
        }
    }
}

extension FixtureRunner {
    /// A runner's life, in one value behind its one lock: idle, starting, running, stopping, stopped; whether a stop was
    /// asked for (and by which signal), who waits for it, and who waits for the stop to finish.
    struct Lifecycle: Sendable {
        private enum Phase: Sendable {
            case idle, starting
            case running(Parts)
            case stopping, stopped
        }

        /// What `shutdown` does next.
        enum Shutdown: Sendable {
            case stop(Parts)
            case wait
            case done
        }

        private var phase = Phase.idle
        /// Set once a stop is asked for: the signal, or nil for `stop()` and cancellation.
        private var stopAsked: Int32?? = nil
        private var runWaiter: CheckedContinuation<Int32?, Never>? = nil
        private var stoppedWaiters: [CheckedContinuation<Void, Never>] = []

        var isIdle: Bool { if case .idle = phase { return true } else { return false } }

        var parts: Parts? { if case .running(let parts) = phase { return parts } else { return nil } }

        mutating func beginStart() throws {
            guard case .idle = phase else { throw RunnerError.alreadyStarted }
            phase = .starting
        }

        /// The start failed: nothing runs, and whoever waits for the stop is done waiting.
        mutating func startFailed() -> [CheckedContinuation<Void, Never>] {
            phase = .stopped
            defer { stoppedWaiters = [] }
            return stoppedWaiters
        }

        /// Running now; true when a stop was asked for meanwhile (the caller stops it at once).
        mutating func started(_ parts: Parts) -> Bool {
            phase = .running(parts)
            return stopAsked != nil
        }

        /// The first stop asked for counts; `run()`'s wait, if it waits, is handed back to be resumed.
        mutating func requestStop(signal: Int32?) -> CheckedContinuation<Int32?, Never>? {
            guard stopAsked == nil else { return nil }
            stopAsked = .some(signal)
            defer { runWaiter = nil }
            return runWaiter
        }

        /// `run()` waits for a stop: the reason at once when one was asked for already.
        mutating func waitForStop(_ waiter: CheckedContinuation<Int32?, Never>) -> Int32?? {
            if let stopAsked { return .some(stopAsked) }
            runWaiter = waiter
            return nil
        }

        mutating func beginShutdown() -> Shutdown {
            switch phase {
            case .idle, .stopped:
                phase = .stopped
                return .done
            case .running(let parts):
                phase = .stopping
                return .stop(parts)
            case .starting, .stopping:
                // A start in progress sees the stop asked for and stops itself.
                return .wait
            }
        }

        mutating func finishShutdown() -> [CheckedContinuation<Void, Never>] {
            phase = .stopped
            defer { stoppedWaiters = [] }
            return stoppedWaiters
        }

        /// Waits for the stop in progress; false when there is none to wait for.
        mutating func waitUntilStopped(_ waiter: CheckedContinuation<Void, Never>) -> Bool {
            switch phase {
            case .starting, .stopping:
                stoppedWaiters.append(waiter)
                return true
            case .idle, .running, .stopped:
                return false
            }
        }
    }
}
