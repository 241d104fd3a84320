import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport
import TLSFixturesClient

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Run a client against every scenario and its control, and write its report card.",
        discussion: """
            For each scenario (or those named with --scenario) the client is run twice, each time against a fresh \
            fixture of its own: once on the scenario's control (ats-compliant for most, pinned for the pin \
            scenarios), once on the scenario. The card says, per scenario, what a client of --family does with it, \
            what the client said (exit status and first line of output), what the fixture saw (its ClientHello, how \
            the handshake ended, the alert, the requests), and a verdict: as expected, unexpected, or unproven (the \
            client refused the control too, or never reached the fixture), with why. A refusal counts only at the \
            scenario's step, proven by the fixture's records.

            The client is a command template, run without a shell; exit status 0 means it accepted. Filled in for \
            each run: {url} (https://localhost:PORT/), {qualifiedURL} (https://NAME.fixtures.test:PORT/), {host}, \
            {port}, {scenario} (NAME), {ca} (the kit's CA, PEM), {proxy} (the runner's proxy) and {resolve} \
            (NAME.fixtures.test:PORT:127.0.0.1, for curl's --resolve).

              tls-fixtures report --client 'curl -sS --cacert {ca} {url}'
              tls-fixtures report --client 'curl -sS --cacert {ca} --proxy {proxy} {qualifiedURL}' --family curl
              tls-fixtures report --runner http://localhost:9800 --client 'openssl s_client -connect localhost:{port} \
            -verify_return_error -brief' --scenario expired --scenario ats-compliant

            Writes report.md, report.json and report.junit.xml into --out, and prints the summary line \
            (report: N as expected, N unexpected, N unproven). Exits 0 when nothing is unexpected, 3 when something \
            is, 1 on an error. Against a running `serve` (--runner, or $\(FixtureAPI.environmentVariable)), or one it \
            starts for the run on free ports.
            """
    )

    @Option(help: ArgumentHelp("The client: a command template (see above).", valueName: "command"))
    var client: String

    @Option(help: ArgumentHelp(
        "Whose expectations the client is held to: verifying (OpenSSL's rules, the kit's CA trusted), apple "
            + "(URLSession under a default ATS policy), or a client matrix stack (curl, openssl, gnutls, java, go, "
            + "node, nss, chromium, pyca, swift-nio-ssl, async-http-client, urlsession).", valueName: "family"))
    var family: String = "verifying"

    @Option(help: ArgumentHelp("The client pins the pinned leaf's key (leaf) or the CA's (ca).", valueName: "key"))
    var pins: ReportCard.Family.PinTarget?

    @Flag(help: "The client trusts the roots a scenario assumes a device trusts (pin-mitm's interception root).")
    var trustsAssumedRoots = false

    @Option(name: .customLong("scenario"), help: ArgumentHelp(
        "Only this scenario (repeatable; default: every scenario the runner serves).", valueName: "name"))
    var scenarios: [String] = []

    @Option(help: ArgumentHelp("A running serve's URL (default: $\(FixtureAPI.environmentVariable); without either, "
                                   + "one is started for the run).", valueName: "url"))
    var runner: String?

    @Option(help: ArgumentHelp("Folder for report.md, report.json and report.junit.xml.", valueName: "dir"))
    var out: String = "tls-fixtures-report"

    @Option(help: ArgumentHelp("Seconds one run of the client may take; past it, it is stopped and counts as a "
                                   + "refusal.", valueName: "seconds"))
    var timeout: Double = 30

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try ReportFamily.parse(family, pins: pins)
        _ = try SecondsOption.check(timeout, "--timeout")
        _ = try CommandLoad.split(client)
        if runner != nil { _ = try RunnerURLArgument.resolve(runner, flag: "--runner") }
    }

    func run() async throws {
        let family = try ReportFamily.parse(family, pins: pins)
        let given = runner ?? ProcessInfo.processInfo.environment[FixtureAPI.environmentVariable]
        let started = given == nil ? try await ReportRunner.start(store: storeOptions.store) : nil
        let runnerURL = try started?.url ?? RunnerURLArgument.resolve(runner, flag: "--runner")
        do {
            let fixtures = RemoteFixtures(runner: runnerURL)
            // A first run makes its slow keys in the background: the card covers what serves once that is done.
            _ = try await fixtures.waitUntilReady(timeout: 900)
            let folder = URL(fileURLWithPath: out)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let caFile = folder.appendingPathComponent("ca.pem")
            try await fixtures.caCertificatePEM().write(to: caFile)
            let command = try CommandLoad(template: client, caFile: caFile.path, proxy: runnerURL,
                                          timeout: try SecondsOption.check(timeout, "--timeout").seconds)
            let card = try await fixtures.reportCard(
                scenarios: scenarios.isEmpty ? nil : scenarios, client: client, family: family, url: .qualifiedName,
                trustsAssumedRoots: trustsAssumedRoots, context: ["tls-fixtures": TLSFixturesVersion.current],
                to: folder, judgesAppleErrors: false) { url in try await command.run(url) }
            if output.json {
                FileHandle.standardOutput.write(try card.json() + Data("\n".utf8))
            } else {
                for entry in card.entries where entry.verdict != .asExpected {
                    print("\(entry.verdict.rawValue): \(entry.scenario): \(entry.why)")
                }
                print("\(card.summaryLine) (\(folder.path)/report.md)")
            }
            await started?.runner.stop()
            if card.counts[.unexpected] != nil { throw ExitCode(3) }
        } catch {
            await started?.runner.stop()
            throw error
        }
    }
}

extension ReportCard.Family.PinTarget: ExpressibleByArgument {}
