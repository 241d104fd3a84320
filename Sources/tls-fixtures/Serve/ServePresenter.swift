import Foundation
import TLSFixtures
import TLSFixturesCLISupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `serve` prints as its runner goes: the dashboard's line first (and the configuration's warnings), a line per
/// step of a slow first run, the table (or `--json`'s document) once the quick scenarios serve, and a line when a
/// signal stops it. Each is flushed at once: a pipe reader (a test, a script) sees it now, not at exit.
struct ServePresenter: Sendable {
    var json: Bool
    var warnings: [String]
    /// The store's CA file and ` --dir PATH` for the commands the table prints.
    var caFile: String
    var storeArgument: String

    func show(_ event: FixtureRunner.Event) {
        switch event {
        case .listening(let dashboard):
            // The first line, before any progress: the dashboard answers from now on.
            if !json { print(RunnerReport.dashboardLine(dashboard)) }
            fflush(nil)
            warnings.forEach(Output.error)
        case .progress(let progress):
            Self.show(progress)
        case .serving(let document, let warning):
            if let warning { Output.error(warning) }
            if json {
                print(String(decoding: (try? document.json()) ?? Data(), as: UTF8.self))
            } else {
                print(RunnerReport.text(document, caFile: caFile, storeArgument: storeArgument))
                let serving = document.scenarios.filter { $0.status == .serving }.count
                let preparing = document.scenarios.filter { $0.status == .preparing }.count
                let later = preparing == 0 ? "" : " (and \(preparing) more once prepared)"
                print("\nServing \(serving) scenario\(serving == 1 ? "" : "s")\(later). Ctrl-C to stop.")
            }
            fflush(nil)
        case .stopping(let signal?):
            Output.error("\(signal == SIGTERM ? "SIGTERM" : "interrupt"): stopping…")
        case .stopping(nil):
            break
        }
    }

    /// One line on standard error per step of a slow first run.
    private static func show(_ progress: FixtureFleet.Progress) {
        switch progress {
        case .generating(let name, let key):
            let slow = key.description.hasPrefix("rsa:8192") ? "; an RSA-8192 key can take a minute" : ""
            Output.error("generating the \(key) key for \(name) (first run only\(slow))…")
        case .preparingInBackground(let name, let making):
            Output.error("\(name): making \(making) in the background (first run only); served when ready")
        case .serving(let name, let port):
            Output.error("\(name): ready, now serving on port \(port)")
        case .failed(let name, let reason):
            Output.error("\(name): not served: \(reason)")
        case .prepared:
            break
        }
    }
}
