import Foundation
import NIOCore
import TLSFixturesOpenSSL
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

/// Everything about a fleet that changes, in one value behind the fleet's one lock (`FixtureFleet.state`): its
/// fixtures and their states, the leases, the records of stopped fixtures, who waits for a scenario to leave
/// `preparing`, the fixtures still closing, the inline scenarios prepared lately, the slow lane's admissions and the
/// legacy helper. Each change is a `mutating` transition here that returns what must happen next (fixtures to stop,
/// ports to free, timers to cancel, waiters to wake), and the fleet does that once the lock is released: the shape
/// NIO's own pools have. No other code writes this state, so its invariants are all in this file.
struct FleetState: Sendable {
    struct Member: Sendable {
        var scenario: Scenario
        var state: FixtureState
        /// A leased fixture's, once it serves.
        var lease: Lease?
    }

    struct Lease: Sendable {
        var session: String?
        /// Seconds, from the last start or renew.
        var ttl: Int
        var expiresAt: Date
        /// nil only between a renew and the moment its new timer is attached.
        var expiry: Scheduled<Void>?
        /// Moves on every renew, so an expiry timer that fired late cannot stop a renewed fixture.
        var generation: Int
        /// `LeasedFixture.interceptionRoot`, read from the store once, at start.
        var interceptionRoot: Certificate?
    }

    /// What a transition leaves to do once the lock is released.
    struct Effects: Sendable {
        var stop: [FixtureServer] = []
        var release: [PortReservation] = []
        var cancel: [Scheduled<Void>] = []
        var wake: [CheckedContinuation<Void, Never>] = []
    }

    /// What `beginStop` leaves to do: the effects, then the fixtures still closing and the helper.
    struct StopPlan: Sendable {
        var effects: Effects
        var closing: [EventLoopFuture<Void>]
        var helper: LegacyHelperProcess?
    }

    /// What a catalog scenario that was prepared does next.
    enum Preparation: Sendable {
        /// Serve it: its port is free now (the reservation, released by the caller, held it until here).
        case serve(PortReservation?)
        /// The fleet is stopping, or the scenario is no longer preparing: nothing to do.
        case skip
    }

    private(set) var members: [FixtureFleet.Key: Member] = [:]
    private(set) var stopping = false
    /// Moves on every change of a member, so the dashboard knows when to render again.
    private(set) var generation = 0
    /// Leased fixtures that stopped lately, whose records are still read.
    private(set) var stopped = StoppedFixtures()
    /// Fixtures whose lease ended, still closing: `stop()` waits for them.
    private(set) var closing: [String: EventLoopFuture<Void>] = [:]
    /// Started by `serve` once the quick scenarios are prepared, when some need it.
    private(set) var legacyHelper: LegacyHelperProcess?
    /// The slow scenarios' preparation, once `serve` has set it going.
    private(set) var background: EventLoopFuture<Void>?
    /// Control API starts in the slow lane, running or queued (`PreparationLanes`).
    private(set) var slowStarts = 0
    /// Whoever waits for a catalog scenario to leave `preparing` (`FixtureFleet.settled`).
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    /// Inline scenarios prepared lately, newest first, so the same scenario started again gets the same leaf (and pins).
    private var inlineCache: [(scenario: Scenario, prepared: PreparedScenario)] = []
    static let inlineCacheSize = 32

    // MARK: The catalog's fixtures

    /// `open`: the catalog scenario `scenario` is held on its port (nil: none) while it is prepared.
    mutating func hold(_ scenario: Scenario, making: String, reservation: PortReservation?) {
        members[.catalog(scenario.name)] = Member(
            scenario: scenario, state: .preparing(making: making, reservation: reservation))
        generation += 1
    }

    /// A catalog scenario is prepared (or failed to be): whether to serve it, and on which held port.
    mutating func prepared(_ name: String) -> Preparation {
        let key = FixtureFleet.Key.catalog(name)
        guard !stopping, case .preparing(let making, let reservation)? = members[key]?.state else { return .skip }
        members[key]?.state = .preparing(making: making, reservation: nil)
        return .serve(reservation)
    }

    /// The linked OpenSSL cannot serve the built-in scenario `name` (`reason`): it waits for the legacy helper.
    mutating func awaitHelper(_ name: String, reason: String) -> Effects {
        settle(name, to: .awaitingHelper(reason: reason))
    }

    /// The catalog scenario `name` is now `new` (serving, unsupported, failed). While stopping it is not: a fixture
    /// that started meanwhile is stopped again. Whoever waits for it is woken either way.
    mutating func settle(_ name: String, to new: FixtureState) -> Effects {
        var effects = Effects()
        if stopping {
            if let fixture = new.fixture { effects.stop.append(fixture) }
        } else if members[.catalog(name)] != nil {
            members[.catalog(name)]?.state = new
            generation += 1
        }
        effects.wake = takeWaiters()
        return effects
    }

    /// The names waiting for the legacy helper.
    var awaitingHelper: [String] {
        members.compactMap { key, member in
            guard case .catalog(let name) = key, case .awaitingHelper = member.state else { return nil }
            return name
        }
    }

    /// The legacy helper answered (`process`, serving `served`), or could not start (nil): what it serves is
    /// `servedByHelper`, the rest unsupported with the reason the linked OpenSSL gave. While stopping, nothing changes
    /// and the helper is handed back to be stopped.
    mutating func helperAnswered(_ process: LegacyHelperProcess?, served: [CatalogEntry]) -> (Effects, LegacyHelperProcess?) {
        guard !stopping else { return (Effects(wake: takeWaiters()), process) }
        for name in awaitingHelper {
            guard case .awaitingHelper(let reason)? = members[.catalog(name)]?.state else { continue }
            if let process, var entry = served.first(where: { $0.name == name }) {
                entry.servedBy = "the legacy helper, linked with \(process.document.openSSL)"
                members[.catalog(name)]?.state = .servedByHelper(entry)
            } else {
                members[.catalog(name)]?.state = .unsupported(reason: reason)
            }
        }
        legacyHelper = process
        generation += 1
        return (Effects(wake: takeWaiters()), nil)
    }

    mutating func startedInBackground(_ future: EventLoopFuture<Void>) { background = future }

    // MARK: Waiting for a catalog scenario

    /// Registers `continuation` to be woken when a catalog scenario settles, when `name` is still preparing; nil (and
    /// the caller resumes it at once) when it is not, or the fleet is stopping.
    mutating func wait(for name: String, _ continuation: CheckedContinuation<Void, Never>) -> UInt64? {
        guard !stopping, members[.catalog(name)]?.state.isPreparing == true else { return nil }
        nextWaiter += 1
        waiters[nextWaiter] = continuation
        return nextWaiter
    }

    /// The waiter `id`, when nothing has woken it yet (its deadline passed).
    mutating func takeWaiter(_ id: UInt64) -> CheckedContinuation<Void, Never>? { waiters.removeValue(forKey: id) }

    /// Whether anyone waits (a test's window on a start that waits for a catalog scenario).
    var hasWaiters: Bool { !waiters.isEmpty }

    private mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
        defer { waiters = [:] }
        return Array(waiters.values)
    }

    // MARK: Leased fixtures

    /// A start of a leased fixture `id`, counted against the cap from here while it is prepared; the refusal when the
    /// fleet is stopping or full.
    mutating func admit(_ id: String, _ scenario: Scenario, limit: Int) -> FleetError? {
        if stopping { return .stopping }
        let leased = members.keys.filter { if case .leased = $0 { return true } else { return false } }
        if leased.count >= limit { return .full }
        members[.leased(id)] = Member(scenario: scenario, state: .preparing(making: "its keys", reservation: nil))
        generation += 1
        return nil
    }

    /// The start of `id` failed: it leaves the table.
    mutating func abandon(_ id: String) {
        members[.leased(id)] = nil
        generation += 1
    }

    /// The leased fixture `id` serves, with `lease`; unless the fleet began stopping meanwhile (or `stop` took it
    /// out): then it is stopped again and its timer cancelled, and this returns nil.
    mutating func serve(_ id: String, _ fixture: FixtureServer, lease: Lease) -> (LeasedFixture?, Effects) {
        guard !stopping, let member = members[.leased(id)] else {
            return (nil, Effects(stop: [fixture], cancel: lease.expiry.map { [$0] } ?? []))
        }
        members[.leased(id)] = Member(scenario: member.scenario, state: .serving(fixture), lease: lease)
        generation += 1
        return (leased(id), Effects())
    }

    /// The lease of `id` ended, unless it was renewed since (`generation`): the fixture leaves the table and is
    /// returned to be stopped; `closed` (completed by the caller once it has) is what `stop()` waits for.
    mutating func expire(_ id: String, generation: Int, closed: EventLoopPromise<Void>) -> FixtureServer? {
        guard let member = members[.leased(id)], member.lease?.generation == generation else {
            closed.succeed()
            return nil
        }
        retire(id, member, reason: "its lease ended")
        closing[id] = closed.futureResult
        return member.state.fixture
    }

    /// The lease-ended fixture `id` has closed.
    mutating func closed(_ id: String) { closing[id] = nil }

    /// A fresh lease of `ttl` seconds (nil: the fixture's own) from `now` for `id`; its new timer is attached next
    /// (`attach`) with the generation this returns. nil when there is no such leased fixture.
    mutating func renew(_ id: String, ttl: Int?, now: Date) -> (fixture: LeasedFixture, generation: Int, Effects)? {
        guard var lease = members[.leased(id)]?.lease else { return nil }
        let old = lease.expiry
        lease.generation += 1
        lease.ttl = ttl ?? lease.ttl
        lease.expiresAt = now.addingTimeInterval(TimeInterval(lease.ttl))
        lease.expiry = nil
        members[.leased(id)]?.lease = lease
        guard let renewed = leased(id) else { return nil }
        return (renewed, lease.generation, Effects(cancel: old.map { [$0] } ?? []))
    }

    /// The renewed lease's timer; handed back to be cancelled when the fixture stopped or was renewed again meanwhile.
    mutating func attach(_ timer: Scheduled<Void>, to id: String, generation: Int) -> Scheduled<Void>? {
        guard members[.leased(id)]?.lease?.generation == generation else { return timer }
        members[.leased(id)]?.lease?.expiry = timer
        return nil
    }

    /// Stops the leased fixture `id` for `reason`: false when there was none.
    mutating func stopLeased(_ id: String, reason: String) -> (Bool, Effects) {
        guard let member = members[.leased(id)], member.lease != nil else { return (false, Effects()) }
        retire(id, member, reason: reason)
        return (true, Self.ending([member]))
    }

    /// Stops every leased fixture of `session`; how many.
    mutating func stopSession(_ session: String) -> (Int, Effects) {
        let ended = members.filter { $0.value.lease?.session == session }
        for case (.leased(let id), let member) in ended {
            retire(id, member, reason: "its session (\(session)) was stopped")
        }
        return (ended.count, Self.ending(Array(ended.values)))
    }

    /// The leased fixture `id`, when it serves.
    func leased(_ id: String) -> LeasedFixture? {
        guard let member = members[.leased(id)], let lease = member.lease, let fixture = member.state.fixture else {
            return nil
        }
        return LeasedFixture(id: id, server: fixture, lease: lease)
    }

    /// The leased fixture `id` leaves the table for `reason`; its records stay readable a while.
    private mutating func retire(_ id: String, _ member: Member, reason: String) {
        members[.leased(id)] = nil
        generation += 1
        guard let fixture = member.state.fixture else { return }
        stopped.add(id, log: fixture.log, reason: reason, at: Date())
    }

    private static func ending(_ members: [Member]) -> Effects {
        Effects(stop: members.compactMap(\.state.fixture), cancel: members.compactMap { $0.lease?.expiry })
    }

    // MARK: Inline scenarios and the slow lane

    func cached(_ scenario: Scenario) -> PreparedScenario? {
        inlineCache.first { $0.scenario == scenario }?.prepared
    }

    mutating func remember(_ scenario: Scenario, _ prepared: PreparedScenario) {
        inlineCache.removeAll { $0.scenario == scenario }
        inlineCache.insert((scenario, prepared), at: 0)
        if inlineCache.count > Self.inlineCacheSize { inlineCache.removeLast() }
    }

    /// A slow start is admitted unless `limit` are already.
    mutating func admitSlow(limit: Int) -> Bool {
        guard slowStarts < limit else { return false }
        slowStarts += 1
        return true
    }

    mutating func finishSlow() { slowStarts -= 1 }

    // MARK: Stopping

    /// Nothing starts from now on: every catalog fixture is `stopped`, every leased one leaves the table; what was
    /// running is handed back to be stopped, with the ports held, the timers, the waiters and the helper.
    mutating func beginStop() -> StopPlan {
        stopping = true
        var effects = Effects()
        for (key, member) in members {
            if let expiry = member.lease?.expiry { effects.cancel.append(expiry) }
            switch member.state {
            case .serving(let fixture): effects.stop.append(fixture)
            case .preparing(_, let reservation?): effects.release.append(reservation)
            default: break
            }
            switch key {
            case .leased(let id): retire(id, member, reason: "the runner stopped")
            case .catalog: members[key]?.state = .stopped
            }
        }
        generation += 1
        effects.wake = takeWaiters()
        let helper = legacyHelper
        legacyHelper = nil
        return StopPlan(effects: effects, closing: Array(closing.values), helper: helper)
    }
}

extension FleetState.Effects {
    /// Stops the fixtures and frees the ports concurrently, after cancelling the timers and waking the waiters.
    func run() async {
        for timer in cancel { timer.cancel() }
        for waiter in wake { waiter.resume() }
        guard !stop.isEmpty || !release.isEmpty else { return }
        await withTaskGroup(of: Void.self) { group in
            for fixture in stop { group.addTask { await fixture.stop() } }
            for reservation in release { group.addTask { await reservation.release() } }
        }
    }

    /// What can be done without waiting: the timers and the waiters (a transition that stops nothing).
    func runAtOnce() {
        precondition(stop.isEmpty && release.isEmpty, "effects that stop something must be awaited")
        for timer in cancel { timer.cancel() }
        for waiter in wake { waiter.resume() }
    }
}
