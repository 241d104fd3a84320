import Foundation
import TLSFixturesServer
import TLSFixturesWire

/// The connection records of leased fixtures that have stopped (deleted, their lease ended, their session stopped), kept
/// for a while so a test run can read them at teardown, after it stopped the fixture: the last `keptCount` stopped
/// fixtures' logs (each bounded by `FixtureConfiguration.connectionRecordLimit`), and the ids of the `rememberedCount`
/// before those, so a read of one says it stopped long ago rather than that it never existed. Bounded memory whatever
/// the runner's uptime. Lives in the fleet's table, under its lock.
struct StoppedFixtures: Sendable {
    /// How many stopped fixtures' records are kept.
    static let keptCount = FixtureAPI.keptStoppedFixtures
    /// How many ids of stopped fixtures whose records are gone are remembered.
    static let rememberedCount = 4096

    struct Entry: Sendable {
        var log: ConnectionLog
        var stopped: ConnectionList.Stopped
    }

    private var kept: [String: Entry] = [:]
    /// Ids in `kept`, oldest stop first.
    private var keptOrder: [String] = []
    private var forgotten: Set<String> = []
    private var forgottenOrder: [String] = []
    /// Some forgotten id was itself forgotten: an unknown id may then have stopped long ago.
    private(set) var forgotOldest = false

    /// `id` stopped now, for `reason`; its records are read from `log` (which its closing connections still finish).
    mutating func add(_ id: String, log: ConnectionLog, reason: String, at date: Date) {
        if kept[id] == nil { keptOrder.append(id) }
        kept[id] = Entry(log: log, stopped: ConnectionList.Stopped(at: date, reason: reason))
        while keptOrder.count > Self.keptCount {
            let oldest = keptOrder.removeFirst()
            kept[oldest] = nil
            if forgotten.insert(oldest).inserted { forgottenOrder.append(oldest) }
            if forgottenOrder.count > Self.rememberedCount {
                forgotten.remove(forgottenOrder.removeFirst())
                forgotOldest = true
            }
        }
    }

    subscript(id: String) -> Entry? { kept[id] }

    /// What became of `id`, which is not running: it stopped lately (its records are here), long ago, or never ran.
    func whereabouts(of id: String) -> FleetError.Whereabouts {
        if let entry = kept[id] { return .stopped(entry.stopped) }
        if forgotten.contains(id) { return .stoppedLongAgo }
        guard FixtureFleet.isFixtureID(id) else { return .notAnID }
        return forgotOldest ? .unknown : .neverStarted
    }
}
