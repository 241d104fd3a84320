import Foundation
import NIOConcurrencyHelpers
import TLSFixturesServer

/// Every port the runner serves a fixture on right now — the catalog's fixed ports and the fixtures started through the
/// control API — and nothing else: the CONNECT proxy tunnels to these ports only, so it can never be an open proxy.
package final class FixtureDirectory: Sendable {
    package struct Entry: Sendable, Equatable {
        package var scenario: String
        package var port: Int
        /// Plain HTTP (the `http` scenario): the proxy forwards `GET http://…` to it; TLS ones take CONNECT.
        public var isCleartext: Bool
        /// Where the proxy connects: loopback, or the fixture's own address when it listens elsewhere.
        public var address: String
    }

    private let entries = NIOLockedValueBox([Int: Entry]())

    package init() {}

    func add(_ fixture: FixtureServer) {
        let address = Self.connectAddress(fixture.boundAddresses)
        let entry = Entry(scenario: fixture.scenario.name, port: fixture.port, isCleartext: fixture.scenario.isCleartext, address: address)
        entries.withLockedValue { $0[fixture.port] = entry }
    }

    func remove(_ fixture: FixtureServer) {
        entries.withLockedValue { entries in
            if entries[fixture.port]?.scenario == fixture.scenario.name { entries[fixture.port] = nil }
        }
    }

    /// The fixture on `port`, if this runner serves one there.
    public func entry(port: Int) -> Entry? { entries.withLockedValue { $0[port] } }

    package var ports: [Int] { entries.withLockedValue { $0.keys.sorted() } }

    /// A fixture on every address (`--bind 0.0.0.0`) is reached on loopback; one bound to a single address, there.
    static func connectAddress(_ bound: [String]) -> String {
        if bound.isEmpty || bound.contains("127.0.0.1") || bound.contains("0.0.0.0") || bound.contains("localhost") { return "127.0.0.1" }
        if bound.contains("::1") || bound.contains("::") { return "::1" }
        return bound[0]
    }
}
