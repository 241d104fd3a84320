import Foundation

/// `GET /api/fixtures/ID/connections` and `GET /api/scenarios/NAME/connections`: the fixture's connection records
/// after a cursor, oldest first, and the cursor for what comes next.
///
/// ```json
/// {"connections": [{"id": 7, "acceptedAt": "…", "peer": "127.0.0.1:52114", "proxy": {"authority": "…"}, …}],
///  "latestID": 7}
/// ```
public struct ConnectionList: Sendable, Hashable, Codable {
    /// The records (`ConnectionRecord`'s JSON), oldest first; the fixture keeps its most recent 64.
    public var connections: [ConnectionRecord]
    /// The id of the fixture's latest connection (0 before the first), whether or not it is listed: pass it as
    /// `after` to see only what comes next.
    public var latestID: Int

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(connections: [ConnectionRecord], latestID: Int) {
        self.connections = connections
        self.latestID = latestID
    }
}
