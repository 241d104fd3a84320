import ArgumentParser
import Foundation
import TLSFixtures

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a running `serve` is ready: for scripts, CI steps and Xcode pre-actions.",
        discussion: """
            Ready means the runner's dashboard and control API answer and no scenario it serves is still being \
            prepared: each serves, or is known not to (unsupported by the linked OpenSSL, or failed, with its \
            reason). With --scenario, only those are waited for, and each must serve. Asks GET /api/health every \
            fifth of a second; a runner that does not listen yet (just started) is waited for too. Exits 0 when ready, \
            printing one line of what serves; 1 with one line naming what is not ready when --timeout passes first, \
            or at once when a scenario named will never serve.

              nohup tls-fixtures serve > /tmp/tls-fixtures.log 2>&1 &
              tls-fixtures wait --timeout 120
            """
    )

    @Argument(help: ArgumentHelp(
        "The runner's URL, as `serve` prints it first (default: $\(FixtureAPI.environmentVariable), else "
            + "\(FixtureAPI.defaultRunnerURL.absoluteString)).", valueName: "url"))
    var url: String?

    @Option(help: ArgumentHelp("Seconds to wait at most (a first run makes an RSA-8192 key: about a minute).",
                               valueName: "seconds"))
    var timeout: Double = 300

    @Option(name: .customLong("scenario"), help: ArgumentHelp(
        "Wait for this scenario to serve (repeatable; default: every scenario the runner serves).", valueName: "name"))
    var scenarios: [String] = []

    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try SecondsOption.check(timeout, "--timeout")
        _ = try runnerURL()
    }

    func run() async throws {
        let runner = try runnerURL()
        let health = try await RunnerReadiness.wait(
            runner: runner, scenarios: scenarios.isEmpty ? nil : scenarios,
            timeout: try SecondsOption.check(timeout, "--timeout").seconds)
        for scenario in health.scenarios where scenario.status == "failed" {
            Output.error("warning: \(scenario.name) failed: \(scenario.reason ?? "no reason given")")
        }
        if output.json {
            try Output.json(health)
        } else {
            print("\(runner.absoluteString): \(health.summary)")
        }
    }

    private func runnerURL() throws -> URL { try RunnerURLArgument.resolve(url, flag: "the URL") }
}
