import ArgumentParser
import Foundation
import TLSFixtures

struct ConnectionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connections",
        abstract: "Show what a running `serve`'s fixture saw of its clients, and whether their offers meet ATS.",
        discussion: """
            NAME is a scenario the runner serves on its catalog port, or the id of a fixture started through its \
            control API (also for a while after it stopped: the runner keeps the records of its last \
            \(FixtureAPI.keptStoppedFixtures) stopped fixtures). For each connection it kept (its last 64): who \
            connected and whether through the proxy (for which name), what the client offered (versions, SNI, \
            ALPN), how the handshake ended (completed, the alert the client sent and when, the server's alert, a \
            close without one, a timeout, bytes that are not TLS), the requests \
            answered, and the client's offer judged against ATS (TLS 1.2 at least, ATS's suites, forward secrecy). \
            For manual testing on localhost ports: load a fixture with your app or client, then run this.

              tls-fixtures connections expired --wait 10
              tls-fixtures connections expired --after 7 --json
            """
    )

    @Argument(help: ArgumentHelp("A scenario the runner serves, or a started fixture's id.", valueName: "name"))
    var name: String

    @Option(help: ArgumentHelp(
        "The runner's URL, as `serve` prints it first (default: $\(FixtureAPI.environmentVariable), else "
            + "\(FixtureAPI.defaultRunnerURL.absoluteString)).", valueName: "url"))
    var runner: String?

    @Option(help: ArgumentHelp("Only connections after this id (the last one printed, or latestID).",
                               valueName: "id"))
    var after: Int = 0

    @Option(help: ArgumentHelp(
        "Seconds to wait, at most \(FixtureAPI.maximumConnectionWait), for a connection after --after to settle "
            + "(close, or be answered).", valueName: "seconds"))
    var wait: Double = 0

    @OptionGroup var output: OutputOptions

    func validate() throws {
        // Values out of range are bad input, exit 1, as for every other command (64 is for what the parser refuses).
        guard after >= 0 else { throw CLIError("--after \(after) is not a connection id; give 0 or more") }
        guard wait.isFinite, (0...Double(FixtureAPI.maximumConnectionWait)).contains(wait) else {
            throw CLIError("--wait \(SecondsOption.text(wait)) is out of range; give seconds from 0 to "
                                  + "\(FixtureAPI.maximumConnectionWait)")
        }
        _ = try runnerURL()
    }

    /// A record beside the judgement of its client's offer, as `--json` prints it: `atsOffer` `null` (present) before a
    /// ClientHello arrived, and for the plain-HTTP fixture.
    struct Shown: Encodable {
        var record: ConnectionRecord
        var atsOffer: ATSOfferJudgement?

        private enum CodingKeys: String, CodingKey { case record, atsOffer }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(record, forKey: .record)
            try c.encode(atsOffer, forKey: .atsOffer)
        }
    }

    /// `{connections, latestID, stopped}`: `stopped` (`{at, reason}`) set for a started fixture that has stopped, whose
    /// last records the runner still keeps; `null` while it runs.
    struct Document: Encodable {
        var connections: [Shown]
        var latestID: Int
        var stopped: ConnectionList.Stopped?

        private enum CodingKeys: String, CodingKey { case connections, latestID, stopped }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(connections, forKey: .connections)
            try c.encode(latestID, forKey: .latestID)
            try c.encode(stopped, forKey: .stopped)
        }
    }

    func run() async throws {
        let url = try runnerURL()
        let list = try await RunnerConnections.read(runner: url, name: name, after: after, wait: wait)
        let shown = list.connections.map { Shown(record: $0, atsOffer: $0.clientHello.map { ATSOfferJudgement($0) }) }
        if output.json {
            try Output.json(Document(connections: shown, latestID: list.latestID, stopped: list.stopped))
            return
        }
        if let stopped = list.stopped {
            print("\(name) has stopped (\(stopped.reason), \(ISO8601DateFormatter().string(from: stopped.at))): "
                  + "these are its last records")
        }
        if shown.isEmpty {
            print(after == 0 ? "\(name): no connections yet" : "\(name): no connections after \(after)")
        }
        for entry in shown { print(Self.text(entry)) }
        if !shown.isEmpty { print("latest: \(list.latestID) (--after \(list.latestID) shows only what comes next)") }
    }

    /// `#7 127.0.0.1:52114 through the proxy for expired.fixtures.test:9831, 2026-05-01T10:00:00Z` and its details.
    static func text(_ entry: Shown) -> String {
        let record = entry.record
        var head = "#\(record.id) \(record.peer)"
        if let proxy = record.proxy { head += " through the proxy for \(proxy.authority)" }
        head += ", \(ISO8601DateFormatter().string(from: record.acceptedAt))"
        var lines = [head]
        if let hello = record.clientHello {
            let versions = hello.supportedVersions.isEmpty ? [hello.legacyVersion] : hello.supportedVersions
            var offered = "  offered \(versions.joined(separator: ", "))"
            if let sni = hello.serverName { offered += " for \(sni)" }
            if !hello.alpn.isEmpty { offered += ", ALPN \(hello.alpn.joined(separator: ", "))" }
            lines.append(offered + ", \(hello.cipherSuites.count) cipher suites")
        }
        lines.append("  \(record.summary)")
        if let judgement = entry.atsOffer { lines.append("  ATS: \(judgement)") }
        return lines.joined(separator: "\n")
    }

    private func runnerURL() throws -> URL { try RunnerURLArgument.resolve(runner, flag: "--runner") }
}
