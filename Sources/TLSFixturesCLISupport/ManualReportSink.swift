import Foundation
import TLSFixturesFleet
import TLSFixturesScenario
import TLSFixturesWire

/// `serve --report DIR`: every connection a catalog fixture saw, once it ends, into a `ManualReport`, written to DIR as
/// a report card (`report.md`, `report.json`, `report.junit.xml`) at once, so the card is current while someone clicks
/// through an app by hand. Told from many event loops: one lock; a write that fails is said once on standard error.
package final class ManualReportSink: @unchecked Sendable {
    private let lock = NSLock()
    private var report: ManualReport
    private let folder: URL
    private let catalog: ScenarioCatalog
    private var failed = false

    /// Checks that `folder` can be written (made when missing) before `serve` starts.
    package init(folder: URL, catalog: ScenarioCatalog, family: ReportCard.Family) throws {
        self.folder = folder
        self.catalog = catalog
        report = ManualReport(family: family)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try report.card().write(to: folder)
    }

    /// A catalog fixture's connection ended (control API fixtures are the tests' own, not a hand's).
    package func add(_ connection: FleetConnection) {
        guard connection.fixture == nil, let scenario = try? catalog.scenario(named: connection.scenario) else { return }
        let expect = scenario.expect
        let expectations = FixtureExpectations(verify: expect.verify, ats: expect.ats, trustedRoots: expect.trustedRoots,
                                               pins: expect.pins, refusal: expect.refusal)
        lock.lock()
        defer { lock.unlock() }
        report.add(scenario: scenario.name, group: scenario.group.rawValue, expect: expectations,
                   record: connection.record)
        do {
            try report.card(context: ["written by": "tls-fixtures serve --report"]).write(to: folder)
        } catch where !failed {
            failed = true
            FileHandle.standardError.write(Data("warning: --report \(folder.path) cannot be written: \(error)\n".utf8))
        } catch {}
    }
}
