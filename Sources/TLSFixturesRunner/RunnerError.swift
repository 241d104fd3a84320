import Foundation
import TLSFixturesWire

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

    /// `start()` or `run()` on a runner that has started already: a runner starts once.
    static let alreadyStarted = RunnerError(
        code: .alreadyStarted, reason: "this runner has started already", fix: "make a new FixtureRunner to start again")

    /// The proxy's own port (`Configuration.proxyPort`) is taken: `reason` says by what.
    static func proxyPortInUse(_ reason: String) -> RunnerError {
        RunnerError(
            code: .proxyPortInUse, reason: reason,
            fix: "stop what listens there, or choose another proxyPort (nil: the proxy shares the dashboard's port)")
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
    /// A runner was started a second time.
    package static var alreadyStarted: Self { Self("alreadyStarted") }
    /// The proxy's own port is taken.
    package static var proxyPortInUse: Self { Self("proxyPortInUse") }
}
