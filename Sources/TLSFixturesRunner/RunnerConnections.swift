import Foundation
import NIOCore
import NIOHTTP1
import TLSFixturesWire

/// Reads a running `serve`'s connection records for a person at a terminal (`tls-fixtures connections`): a catalog
/// scenario's by name (`/api/scenarios/NAME/connections`), else a fixture the control API started, by its id.
/// `TLSFixturesClient`'s `RemoteFixtures.connections(scenario:)` is the same read over URLSession, for programs that
/// cannot link NIO.
package enum RunnerConnections {
    /// The records of `name` (a catalog scenario, or a started fixture's id) after `cursor`, waiting up to `wait`
    /// seconds (`FixtureAPI.maximumConnectionWait` at most) for one to settle. Throws `RunnerError.notARunner` when
    /// something else answers, and `unavailable` with the runner's own words when it has no such fixture.
    package static func read(runner: URL, name: String, after cursor: Int, wait: TimeInterval) async throws
        -> ConnectionList
    {
        guard let components = URLComponents(url: runner, resolvingAgainstBaseURL: false),
            components.scheme?.lowercased() == "http", let rawHost = components.host, !rawHost.isEmpty
        else {
            throw RunnerError.notARunner(runner, "it is not the runner's http://HOST:PORT URL")
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let port = components.port ?? 80
        var base = components.path
        while base.hasSuffix("/") { base.removeLast() }
        let seconds = min(max(wait, 0), TimeInterval(FixtureAPI.maximumConnectionWait))
        let allowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))
        let segment = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
        let query = "/\(FixtureAPI.connectionsSegment)?after=\(max(cursor, 0))&wait=\(String(format: "%.3f", seconds))"
        var refusals: [String] = []
        for collection in [FixtureAPI.scenariosPath, FixtureAPI.fixturesPath] {
            let path = base + collection + "/" + segment + query
            let deadline = NIODeadline.now() + .milliseconds(Int64((seconds + 10) * 1000))
            let answer: (head: HTTPResponseHead, body: ByteBuffer)
            do {
                answer = try await RunnerReadiness.get(
                    host: host, port: port, path: path, until: deadline, userAgent: "tls-fixtures-connections")
            } catch {
                throw RunnerError.unreachable(runner, RunnerReadiness.describe(error))
            }
            let body = Data(answer.body.readableBytesView)
            let status = Int(answer.head.status.code)
            if status == 200, let list = try? FixtureAPI.decoder().decode(ConnectionList.self, from: body) {
                return list
            }
            guard let refused = try? JSONDecoder().decode(APIError.self, from: body) else {
                throw RunnerError.notARunner(runner, "GET \(path) answered \(status), not connection records")
            }
            // A name the catalog does not have may be a started fixture's id: ask there before giving up.
            refusals.append(refused.error)
            if status != 404 { break }
        }
        throw RunnerError.unavailable(refusals.joined(separator: "; nor a started fixture: "))
    }
}
