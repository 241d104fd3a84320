import Foundation
import TLSFixturesWire

/// One connection a fleet's fixture saw, told once it has closed (`FixtureFleet.Options.connectionEnded`): which
/// fixture — a catalog scenario on its port, or a control API fixture by its id — and its record. `serve
/// --log-connections` prints `line`; `serve --connection-log FILE` writes the JSON, one object a line, every key present
/// (`"port": null` for a control API fixture, `"fixture": null` for a catalog one).
package struct FleetConnection: Sendable, Encodable {
    /// The scenario the fixture serves.
    package var scenario: String
    /// The catalog port, for a catalog fixture; nil for a control API fixture (on a free port).
    package var port: Int?
    /// A control API fixture's id; nil for a catalog fixture.
    package var fixture: String?
    package var record: ConnectionRecord

    private enum CodingKeys: String, CodingKey { case scenario, port, fixture, record }

    package func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scenario, forKey: .scenario)
        try c.encode(port, forKey: .port)
        try c.encode(fixture, forKey: .fixture)
        try c.encode(record, forKey: .record)
    }

    /// `expired :9831 #3 127.0.0.1:52114 through the proxy for expired.fixtures.test:9831: the client sent …`.
    package var line: String {
        var where_ = scenario
        if let port { where_ += " :\(port)" }
        if let fixture { where_ += " (fixture \(fixture))" }
        var line = "\(where_) #\(record.id) \(record.peer)"
        if let proxy = record.proxy { line += " through the proxy for \(proxy.authority)" }
        return line + ": \(record.summary)"
    }
}
