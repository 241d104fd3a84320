import Foundation
import TLSFixturesWire

extension RemoteFixtures {
    /// A scenario as the runner's dashboard lists it (`/scenarios.json`): what `scenarios()` returns.
    public struct ListedScenario: Decodable, Sendable, Hashable {
        /// Where the scenario is in the runner: a string, so a state a newer runner adds still decodes.
        public struct Status: RawRepresentable, Decodable, Sendable, Hashable, CustomStringConvertible {
            /// The word `/scenarios.json` uses.
            public var rawValue: String
            /// The status `/scenarios.json` calls `rawValue`.
            public init(rawValue: String) { self.rawValue = rawValue }
            /// From the JSON string.
            public init(from decoder: Decoder) throws {
                rawValue = try decoder.singleValueContainer().decode(String.self)
            }
            /// `rawValue`.
            public var description: String { rawValue }

            /// Listening on its catalog port.
            public static let serving = Status(rawValue: "serving")
            /// Its keys are still being made (a first run); served when ready.
            public static let preparing = Status(rawValue: "preparing")
            /// The linked OpenSSL cannot serve it (`reason` says why).
            public static let unsupported = Status(rawValue: "unsupported")
            /// It could not be served (`reason` says why).
            public static let failed = Status(rawValue: "failed")
        }

        /// The name `RemoteFixtures.start(_:)` takes.
        public var name: String
        /// The catalog group (`protocol`, `certificate`, `pinning`, …; `custom` for your own scenarios).
        public var group: String
        /// What is deliberately different, in one line.
        public var summary: String
        /// Its catalog port on the runner, when it has one.
        public var port: Int?
        /// Where it is in the runner.
        public var status: Status
        /// Why it is not serving, when it is not.
        public var reason: String?
        /// What standard clients are expected to make of it.
        public var expect: FixtureExpectations
        /// Each client matrix stack's verdict (`curl`: `accept` or `reject`), as the scenario file's `expect.clients`
        /// resolves it; nil from a runner that does not say.
        public var clientOutcomes: [String: String]?
    }
}
