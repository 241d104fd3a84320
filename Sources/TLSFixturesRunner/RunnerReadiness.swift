import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesWire

/// Waits for a runner — this process's or another's — to be ready, by its `GET /api/health` (`RunnerHealth` says what
/// ready means): what `tls-fixtures wait` does. `RemoteFixtures.waitUntilReady` in TLSFixturesClient is the same wait
/// over URLSession, for programs that cannot link NIO; the runner decides what is ready, so the two cannot disagree.
package enum RunnerReadiness {
    /// Asks `runner` (its dashboard's URL) until it answers ready, and returns that answer. Nothing listening there
    /// (a runner still starting) and a runner still preparing are waited for, up to `timeout` seconds; then it throws
    /// `RunnerError.notReady` naming what is not ready. A scenario asked about by name that will never serve throws
    /// `willNotServe` at once; something that is not a runner answering, `notARunner`.
    package static func wait(
        runner: URL, scenarios: [String]? = nil, timeout: TimeInterval, interval: TimeAmount = .milliseconds(200)
    ) async throws -> RunnerHealth {
        let target = try Target(runner, scenarios: scenarios)
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1_000_000_000))
        var last: RunnerHealth? = nil
        var unreachable = "nothing answered yet"
        while true {
            do {
                // The question asked at the deadline still gets an interval to be answered.
                let health = try await target.ask(until: max(deadline, .now() + interval))
                if health.ready { return health }
                if health.status == .unavailable || health.status == .stopping {
                    throw RunnerError.willNotServe(runner, health.summary)
                }
                last = health
            } catch let error as RunnerError {
                throw error
            } catch {
                // Not listening yet, or the answer did not come: a runner starting; ask again.
                unreachable = Self.describe(error)
                last = nil
            }
            // The last question is asked at the deadline, not one interval before it.
            let now = NIODeadline.now()
            if now >= deadline {
                throw RunnerError.notReady(
                    runner, last?.summary ?? "nothing answers there (\(unreachable))", waited: timeout, answered: last != nil)
            }
            try await Task.sleep(nanoseconds: UInt64(min(interval, deadline - now).nanoseconds))
        }
    }

    /// A connection failure in a few words ("connection refused"), not NIO's structure.
    static func describe(_ error: Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            let errors = error.connectionErrors.map(\.error)
            if errors.contains(where: { ($0 as? IOError)?.errnoCode == ECONNREFUSED }) { return "connection refused" }
            if let first = errors.first { return describe(first) }
            return "cannot resolve \(error.host)"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case ChannelError.connectTimeout:
            return "the connection was not accepted in time"
        default:
            return "\(error)"
        }
    }

    /// One `GET path` of the runner at `host`:`port`, its whole answer (at most `FixtureAPI.maximumBodyBytes`), or a
    /// connection error; an answer that does not come by `deadline` is not waited for.
    package static func get(
        host: String, port: Int, path: String, until deadline: NIODeadline, userAgent: String
    ) async throws -> (head: HTTPResponseHead, body: ByteBuffer) {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let promise = loop.makePromise(of: ForwardedRequestHandler.Answer.self)
        let left = deadline - .now()
        let connecting = ClientBootstrap(group: loop)
            .connectTimeout(min(.seconds(2), max(left, .milliseconds(10))))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        ForwardedRequestHandler(answer: promise, limit: FixtureAPI.maximumBodyBytes))
                }
            }
            .connect(host: host, port: port)
        // The handler holds the promise: a connection that never came up must fail it, or it leaks.
        connecting.whenFailure { promise.fail($0) }
        let channel = try await connecting.get()
        let cutOff = loop.scheduleTask(in: max(left, .milliseconds(10))) { channel.close(promise: nil) }
        defer { cutOff.cancel() }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers = ["Host": "\(host.contains(":") ? "[\(host)]" : host):\(port)", "Accept": "application/json",
                        "Connection": "close", "User-Agent": userAgent]
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let answer = try await promise.futureResult.get()
        return (answer.head, answer.body)
    }

    /// Where the health is asked for.
    private struct Target: Sendable {
        var runner: URL
        var host: String
        var port: Int
        var path: String

        init(_ runner: URL, scenarios: [String]?) throws {
            guard let components = URLComponents(url: runner, resolvingAgainstBaseURL: false),
                components.scheme?.lowercased() == "http", let host = components.host, !host.isEmpty
            else {
                throw RunnerError.notARunner(runner, "it is not the runner's http://HOST:PORT URL")
            }
            self.runner = runner
            // URLComponents keeps an IPv6 literal's brackets in `host` on some platforms.
            self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            port = components.port ?? 80
            var base = components.path
            while base.hasSuffix("/") { base.removeLast() }
            var query = ""
            if let scenarios, !scenarios.isEmpty {
                let allowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#,"))
                query = "?scenarios=" + scenarios.map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0 }
                    .joined(separator: ",")
            }
            path = base + FixtureAPI.healthPath + query
        }

        /// One `GET`: the health, or a connection error (retried by the caller), or `RunnerError.notARunner`.
        func ask(until deadline: NIODeadline) async throws -> RunnerHealth {
            let answer = try await RunnerReadiness.get(
                host: host, port: port, path: path, until: min(deadline, .now() + .seconds(10)),
                userAgent: "tls-fixtures-wait")
            let status = Int(answer.head.status.code)
            guard status == 200 || status == 503,
                let health = try? FixtureAPI.decoder().decode(
                    RunnerHealth.self, from: Data(answer.body.readableBytesView))
            else {
                let text = String(decoding: answer.body.readableBytesView.prefix(200), as: UTF8.self)
                    .split(separator: "\n").first.map(String.init) ?? ""
                throw RunnerError.notARunner(
                    runner, "GET \(path) answered \(status)\(text.isEmpty ? "" : " (\(text))"), not a tls-fixtures "
                        + "runner's health")
            }
            return health
        }
    }
}
