import Foundation
import TLSFixturesWire

/// Why the fleet refused what it was asked: a lease it cannot give, a scenario it cannot serve, a fixture it does not
/// have. It says what is wrong in the fleet's terms and knows nothing of HTTP: the front door maps each code to a
/// status in one table (`FleetErrorStatus`), and words the fix in its routes where the fleet's would not help, as the
/// CLI adds its flags to library errors.
package struct FleetError: CodedError {
    package typealias Code = ErrorCode<FleetError>

    package let code: Code
    package let reason: String
    package let fix: String?
    /// The part of the request at fault, when there is one (the front door names it as its request body does).
    package let part: Part?

    /// A part of a `LeaseRequest`.
    package enum Part: Sendable, Equatable {
        case ttl, session, scenario
        /// An inline scenario's name.
        case scenarioName
        /// An inline scenario's certificate's `keyName`.
        case keyName
        /// An inline scenario's certificate's key type.
        case key
    }

    package init(_ code: Code, _ reason: String, fix: String? = nil, part: Part? = nil) {
        self.code = code
        self.reason = reason
        self.fix = fix
        self.part = part
    }

    package static func invalidTTL(_ ttl: Int) -> FleetError {
        FleetError(
            .invalidTTL, "ttl \(ttl) is not a lease", fix: "give whole seconds from 1 to \(FixtureAPI.maximumTTL)",
            part: .ttl)
    }

    package static func invalidSession(_ session: String) -> FleetError {
        FleetError(
            .invalidSession, "session \"\(session)\" is not a session tag",
            fix: "use 1–\(FixtureAPI.maximumSessionLength) letters, digits, '.', '_' or '-'", part: .session)
    }

    package static let stopping = FleetError(.stopping, "the runner is stopping")

    /// `limit` starts that make slow keys are admitted already (`PreparationLanes`).
    package static func busy(_ limit: Int) -> FleetError {
        FleetError(
            .busy,
            "\(limit) starts are making slow keys already (RSA-4096 and up, or a DH group: seconds to a minute each), "
                + "the most at once", fix: "try again shortly, or start a scenario whose key exists")
    }

    /// A start of `name`, which this fleet is still preparing on its catalog port (making `making`), waited `waited`
    /// seconds for it.
    package static func preparing(_ name: String, making: String, waited: Int) -> FleetError {
        let what = making.isEmpty ? "its certificate" : making
        return FleetError(
            .preparing,
            "\(name) is still being prepared on its catalog port (making \(what), first run only); waited \(waited) s",
            fix: "try again once it serves", part: .scenario)
    }

    package static let full = FleetError(
        .full, "\(FixtureAPI.maximumLiveFixtures) fixtures started through the API are running, the most at once",
        fix: "stop some, by id or by session, or let their leases end")

    /// No catalog fixture `name` in this runner: not a catalog name at all, or one `serve` was not asked to serve.
    package static func noSuchScenario(_ name: String, inCatalog: Bool, suggestion: String? = nil) -> FleetError {
        FleetError(
            .noSuchScenario,
            inCatalog
                ? "this runner does not serve \(name) on its catalog port (serve was given other names)"
                : "no scenario \"\(name)\" in this runner's catalog"
                    + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? ""),
            fix: inCatalog
                ? "read the records of a fixture you started by its id, or name \(name) to serve"
                : "the catalog document (/scenarios.json) lists them")
    }

    /// The catalog fixture `name` is not serving in this process (`why`), so it has no connection records.
    package static func notServing(_ name: String, _ why: String) -> FleetError {
        FleetError(.notServing, "\(name) has no connection records: it does not serve here (\(why))")
    }

    /// What became of a leased fixture that is not running, as far as the fleet remembers.
    package enum Whereabouts: Sendable, Equatable {
        /// It stopped lately: its records are still read (`GET …/connections`).
        case stopped(ConnectionList.Stopped)
        /// It stopped so long ago that its records are gone.
        case stoppedLongAgo
        /// No fixture by that id ran here (the fleet remembers every id it gave that is not long forgotten).
        case neverStarted
        /// Not shaped as a fixture's id at all.
        case notAnID
        /// Not known: it never ran here, or it stopped longer ago than the fleet remembers.
        case unknown
    }

    package static func noSuchFixture(_ id: String, _ whereabouts: Whereabouts = .unknown) -> FleetError {
        let name = "\"\(id.escapingControlCharacters)\""
        let kept = StoppedFixtures.keptCount
        switch whereabouts {
        case .stopped(let stopped):
            return FleetError(
                .noSuchFixture,
                "fixture \(name) has stopped (\(stopped.reason), \(ISO8601DateFormatter().string(from: stopped.at)))",
                fix: "start another; its connection records stay readable until \(kept) more fixtures have stopped")
        case .stoppedLongAgo:
            return FleetError(
                .noSuchFixture,
                "fixture \(name) stopped long ago: this runner keeps the connection records of its last \(kept) "
                    + "stopped fixtures only",
                fix: "read a fixture's records before it stops, or soon after")
        case .neverStarted:
            return FleetError(
                .noSuchFixture, "no fixture \(name) was started by this runner",
                fix: "check the id: the fleet's list of leased fixtures names the running ones")
        case .notAnID:
            return FleetError(
                .noSuchFixture, "\(name) is not a started fixture's id (20 hexadecimal digits, as the start gave it)",
                fix: "the fleet's list of leased fixtures names the running ones")
        case .unknown:
            return FleetError(
                .noSuchFixture, "no fixture \(name) runs here: it never did, or it stopped long ago",
                fix: "the fleet's list of leased fixtures names the running ones")
        }
    }
}

/// The codes of `FleetError`. A new code needs a status in the front door's table (a test holds every code to one).
extension ErrorCode where Owner == FleetError {
    /// A lease that is not whole seconds from 1 to `FixtureAPI.maximumTTL`.
    package static var invalidTTL: Self { Self("invalidTTL") }
    /// A session tag that is not 1–64 letters, digits, `.`, `_` or `-`.
    package static var invalidSession: Self { Self("invalidSession") }
    /// A scenario name the catalog does not have.
    package static var unknownScenario: Self { Self("unknownScenario") }
    /// An inline scenario the scenario files' own rules refuse (its name, in the fleet; the rest the front door finds).
    package static var invalidScenario: Self { Self("invalidScenario") }
    /// An inline scenario named as a catalog scenario.
    package static var catalogName: Self { Self("catalogName") }
    /// An inline scenario's `keyName` that is not a catalog key, or names one of another type.
    package static var invalidKeyName: Self { Self("invalidKeyName") }
    /// A scenario the linked OpenSSL (or the store's CA) cannot serve, or whose material cannot be made.
    package static var cannotPrepare: Self { Self("cannotPrepare") }
    /// `FixtureAPI.maximumLiveFixtures` leased fixtures run already.
    package static var full: Self { Self("full") }
    /// The runner is stopping: nothing new starts.
    package static var stopping: Self { Self("stopping") }
    /// `Options.maximumSlowStarts` starts are making slow keys already; this one would need another.
    package static var busy: Self { Self("busy") }
    /// The scenario is still being prepared on its catalog port (a first run's slow key), longer than a start waits.
    package static var preparing: Self { Self("preparing") }
    /// The fixture could not listen (no port, no descriptor).
    package static var cannotListen: Self { Self("cannotListen") }
    /// The fixture started but its description (pins, PEMs, client identity) could not be made.
    package static var cannotDescribe: Self { Self("cannotDescribe") }
    /// No leased fixture has that id (stopped, or its lease ended).
    package static var noSuchFixture: Self { Self("noSuchFixture") }
    /// No catalog fixture of that name in this runner.
    package static var noSuchScenario: Self { Self("noSuchScenario") }
    /// The catalog fixture is not serving here (preparing, unsupported, failed, stopped, or the legacy helper's).
    package static var notServing: Self { Self("notServing") }

    /// Every code, for the front door's table and its test.
    package static var all: [Self] {
        [
            .invalidTTL, .invalidSession, .unknownScenario, .invalidScenario, .catalogName, .invalidKeyName,
            .cannotPrepare,
            .full, .stopping, .busy, .preparing, .cannotListen, .cannotDescribe, .noSuchFixture, .noSuchScenario,
            .notServing,
        ]
    }
}
