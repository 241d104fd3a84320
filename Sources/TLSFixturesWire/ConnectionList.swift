import Foundation

/// `GET /api/fixtures/ID/connections` and `GET /api/scenarios/NAME/connections`: the fixture's connection records
/// after a cursor, oldest first, and the cursor for what comes next.
///
/// ```json
/// {"connections": [{"id": 7, "acceptedAt": "…", "peer": "127.0.0.1:52114", "proxy": {"authority": "…"}, …}],
///  "latestID": 7, "latestRequestNumber": 12, "stopped": null}
/// ```
///
/// A started fixture that has stopped (deleted, its lease ended) is still answered for a while, its last records with
/// `"stopped": {"at": "…", "reason": "its lease ended"}`; `stopped` is `null` while the fixture runs, and for a catalog
/// fixture. A decoder takes it absent too (older runners).
public struct ConnectionList: Sendable, Hashable, Codable {
    /// The records (`ConnectionRecord`'s JSON), oldest first; the fixture keeps its most recent 64.
    public var connections: [ConnectionRecord]
    /// The id of the fixture's latest connection (0 before the first), whether or not it is listed: pass it as
    /// `after` to see only what comes next.
    public var latestID: Int
    /// The number of the fixture's latest answered request (0 before the first), on any connection: with `latestID`, the
    /// cursor of a check that must also see requests on connections kept alive from before it (`ConnectionCursor`).
    public var latestRequestNumber: Int

    /// Set when the fixture has stopped: when and why. Its records are final then, and a wait returns at once.
    public var stopped: Stopped?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(connections: [ConnectionRecord], latestID: Int, latestRequestNumber: Int = 0,
                stopped: Stopped? = nil) {
        self.connections = connections
        self.latestID = latestID
        self.latestRequestNumber = latestRequestNumber
        self.stopped = stopped
    }

    /// Where this answer leaves off: pass it to see only what comes next.
    public var cursor: ConnectionCursor { ConnectionCursor(connection: latestID, request: latestRequestNumber) }

    /// When and why a started fixture stopped.
    public struct Stopped: Sendable, Hashable, Codable {
        /// When it stopped.
        public var at: Date
        /// Why, in words: `it was deleted`, `its lease ended`, `its session (NAME) was stopped`, `the runner stopped`.
        public var reason: String

        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(at: Date, reason: String) {
            self.at = at
            self.reason = reason
        }
    }

    private enum CodingKeys: String, CodingKey { case connections, latestID, latestRequestNumber, stopped }

    /// Takes `latestRequestNumber` and `stopped` absent too (older runners).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        connections = try c.decode([ConnectionRecord].self, forKey: .connections)
        latestID = try c.decode(Int.self, forKey: .latestID)
        latestRequestNumber = try c.decodeIfPresent(Int.self, forKey: .latestRequestNumber) ?? 0
        stopped = try c.decodeIfPresent(Stopped.self, forKey: .stopped)
    }

    /// Every key, `stopped` `null` while the fixture runs.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(connections, forKey: .connections)
        try c.encode(latestID, forKey: .latestID)
        try c.encode(latestRequestNumber, forKey: .latestRequestNumber)
        try c.encode(stopped, forKey: .stopped)
    }
}
