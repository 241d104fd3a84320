import Foundation

/// `GET /api/health`: whether a runner is ready, and the state of each scenario it serves on a catalog port: what
/// `tls-fixtures wait` and `RemoteFixtures.waitUntilReady` wait on.
///
/// **Ready** means: the dashboard and the control API answer (this answer comes from them), and every scenario asked
/// about has left *preparing* — by default every catalog scenario the runner serves: each is serving, or will never be
/// (unsupported by the linked OpenSSL, or failed, with its reason). With `?scenarios=NAME,…` only those are asked
/// about, and each must be serving: one that never will be makes the answer `unavailable`, as waiting cannot help.
/// The runner answers `200` when ready and `503` otherwise, with this body either way, so `curl -sf` is a readiness
/// check too. The states come from the runner's one state per fixture, the same the dashboard and `/scenarios.json`
/// show.
public struct RunnerHealth: Codable, Sendable, Hashable {
    /// The runner's state for what was asked: a string, so a state a newer runner adds still decodes.
    public struct Status: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        /// The word the JSON uses.
        public var rawValue: String
        /// The status the JSON calls `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// From the JSON string.
        public init(from decoder: Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        /// As the JSON string.
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        /// `rawValue`.
        public var description: String { rawValue }

        /// Everything asked about has left preparing (and, for named scenarios, serves).
        public static let ready = Status(rawValue: "ready")
        /// Something asked about is still being prepared (`waitingFor` names it): waiting helps.
        public static let preparing = Status(rawValue: "preparing")
        /// A scenario asked about by name will not be served (`unavailable` says why): waiting does not help.
        public static let unavailable = Status(rawValue: "unavailable")
        /// The runner is stopping.
        public static let stopping = Status(rawValue: "stopping")
    }

    /// One catalog scenario of the runner, as `/scenarios.json` lists it.
    public struct Scenario: Codable, Sendable, Hashable {
        /// The scenario's name.
        public var name: String
        /// `serving`, `preparing`, `unsupported`, `failed` or `stopped` (`/scenarios.json`'s words).
        public var status: String
        /// Its catalog port.
        public var port: Int?
        /// Why it is not serving, when it is not.
        public var reason: String?

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(name: String, status: String, port: Int?, reason: String?) {
            self.name = name; self.status = status; self.port = port; self.reason = reason
        }
    }

    /// A scenario asked about that will not be served, and why.
    public struct Unavailable: Codable, Sendable, Hashable {
        /// The name asked about.
        public var name: String
        /// Why it will not be served, in one line.
        public var reason: String

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(name: String, reason: String) { self.name = name; self.reason = reason }
    }

    /// The state for what was asked.
    public var status: Status
    /// `status == .ready`, for readers that want a boolean (`jq .ready`).
    public var ready: Bool
    /// One line: what is ready, or what it waits for, as `tls-fixtures wait` prints it.
    public var summary: String
    /// The scenarios asked about that are still being prepared.
    public var waitingFor: [String]
    /// The scenarios asked about by name that will not be served.
    public var unavailable: [Unavailable]
    /// Every scenario the runner serves on a catalog port, in catalog order.
    public var scenarios: [Scenario]

    /// Memberwise: each argument sets the property of the same name, unchecked (`ready` follows `status`).
    public init(
        status: Status, summary: String, waitingFor: [String], unavailable: [Unavailable], scenarios: [Scenario]
    ) {
        self.status = status; self.ready = status == .ready; self.summary = summary
        self.waitingFor = waitingFor; self.unavailable = unavailable; self.scenarios = scenarios
    }
}
