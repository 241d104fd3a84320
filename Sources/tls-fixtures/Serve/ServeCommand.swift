import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve scenarios on their fixed localhost ports, with a dashboard.",
        discussion: """
            With no names, serves every scenario the linked OpenSSL supports, each on its catalog port (9801…), and the \
            dashboard on the base port (9800): open it in the simulator's Safari, or point the app under test at the \
            URLs. The first line of output is the dashboard's URL, printed the moment it answers; every scenario is \
            served the moment it is ready, cheapest first, and until then its port refuses connections and the \
            dashboard shows it "preparing…". On a new store the slow keys (RSA-4096, RSA-8192) are made last, in the \
            background; everything else serves within seconds. `tls-fixtures wait` returns once nothing is \
            preparing (GET /api/health), for scripts and Xcode pre-actions. Ctrl-C or SIGTERM stops everything.

            The dashboard's port also serves the control API (POST /api/fixtures starts a fixture on a free port, with \
            a lease; TLSFixturesClient uses it from iOS tests) and an HTTP proxy that reaches NAME.fixtures.test:PORT \
            (and NAME.DOMAIN for each --domain) when PORT is that fixture's, and nowhere else (not localhost, not an \
            IP address: ATS does not apply to those), so clients need no /etc/hosts entry. Both answer clients on this \
            machine only unless --allow-remote-clients.

            ATS tests must use https://NAME.fixtures.test:PORT/ (through the proxy, or see `tls-fixtures hosts`): \
            localhost is exempt from ATS.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "Scenario names (default: all).")
    var names: [String] = []

    @Option(help: ArgumentHelp("Dashboard port; every scenario keeps its offset from it.", valueName: "port"))
    var portBase = ScenarioCatalog.defaultPortBase

    @Option(name: .customLong("bind"), help: ArgumentHelp("Address to listen on (repeatable; default loopback).", valueName: "address"))
    var bindAddresses: [String] = []

    @Option(help: ArgumentHelp("Seconds a client has to finish the handshake.", valueName: "seconds"))
    var handshakeTimeout: Double = 10

    @Option(help: ArgumentHelp("Seconds of silence before a connection is closed.", valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(help: ArgumentHelp("Seconds each request has to arrive whole, from the connection's start (after TLS, the handshake's end) or the previous answer.", valueName: "seconds"))
    var headerTimeout: Double = 20

    @Option(help: ArgumentHelp("Most connections one fixture holds at once (default: a quarter of the descriptors this process may open; the dashboard holds at most 256).", valueName: "count"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp("The `make legacy-openssl` helper that serves SSLv3, RC4 and 3DES in a process of its own "
                               + "(default: $\(LegacyHelper.environmentVariable), else the checkout's \(LegacyHelper.relativePath)); "
                               + "`none` serves without it.", valueName: "path"))
    var legacyHelper: String?

    @Flag(help: .hidden)
    var noDashboard = false

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Also name every fixture NAME.DOMAIN (repeatable), and let the proxy resolve those names.",
        discussion: "For TrustKit, which refuses .test: use a domain on the public suffix list that you control. The CA must permit it (`ca init --domain`).",
        valueName: "domain"))
    var domains: [String] = []

    @Option(help: ArgumentHelp("Serve the proxy on this port of its own instead of the dashboard's.", valueName: "port"))
    var proxyPort: Int?

    @Flag(help: "Let clients on other machines use the control API and the proxy (with --bind; loopback only by default).")
    var allowRemoteClients = false

    @Flag(help: ArgumentHelp(
        "Print a line on standard error for each connection to a fixture as it ends: who, through which proxy name, and how it went.",
        discussion: "For example `expired :9831 #3 127.0.0.1:52114: the client sent certificate_expired(45) after the server's certificate`. Requests the proxy refused, which reach no fixture, get a line too: `proxy: CONNECT expird.fixtures.test:9831 from 127.0.0.1:52120 refused (403): …`. `tls-fixtures connections NAME` shows a fixture's last 64 in full."))
    var logConnections = false

    @Option(help: ArgumentHelp(
        "Append each connection to a fixture, as it ends, to this file as one JSON object a line (its scenario, port or fixture id, and the record GET /api/fixtures/ID/connections gives).",
        valueName: "file"))
    var connectionLog: String?

    @Option(help: ArgumentHelp(
        "Keep a report card in this folder of every client that connects to a catalog fixture, per scenario, with a "
            + "verdict from what the fixture saw (report.md, report.json, report.junit.xml; rewritten as connections "
            + "end): for testing an app by hand.", valueName: "dir"))
    var report: String?

    func validate() throws {
        _ = try SecondsOption.check(handshakeTimeout, "--handshake-timeout")
        _ = try SecondsOption.check(idleTimeout, "--idle-timeout")
        _ = try SecondsOption.check(headerTimeout, "--header-timeout")
        if let maxConnections, maxConnections < 1 { throw CLIError("--max-connections must be at least 1") }
        if let path = legacyHelper, path != "none", !FileManager.default.isExecutableFile(atPath: path) {
            throw CLIError("--legacy-helper \(path) is not an executable; build it with `make legacy-openssl`, or pass none")
        }
        // ArgumentParser wraps what validate() throws, so the flags go into library errors here rather than in main.
        let catalog = try FlagHints.translating {
            _ = try FixtureDomains.normalize(domains)
            let catalog = try source.catalog()
            _ = try catalog.scenarios(named: names)
            return catalog
        }
        try PortBaseOption.check(portBase, catalog: catalog)
        if let proxyPort, !(1...65_535).contains(proxyPort) || proxyPort == portBase {
            throw CLIError("--proxy-port must be a TCP port (1–65535) other than the dashboard's (--port-base \(portBase))")
        }
        // Last: it creates the log file, which a refusal above must not leave behind.
        _ = try connectionSink()
    }

    func run() async throws {
        TestHooks.watchParent()
        let catalog = try source.catalog()
        let scenarios = names.isEmpty ? catalog.scenarios : try catalog.scenarios(named: names)
        if noDashboard { warnings().forEach(Output.error) }
        let runner: ScenarioRunner
        do {
            runner = try await ScenarioRunner.start(scenarios, catalog: catalog, store: storeOptions.store,
                                                    options: try runnerOptions(), progress: Self.show) { door in
                // The first line, before any progress: the dashboard answers from now on.
                if !output.json { print(RunnerReport.dashboardLine(door.dashboardURL)) }
                fflush(nil)   // A pipe reader sees it now.
                warnings().forEach(Output.error)
            }
        } catch let error as FixtureError where error.code == .portInUse && error.port != nil && error.port == proxyPort {
            // FlagHints' line names --port-base, which does not move the proxy's own port.
            throw CLIError("\(error.reason); stop what listens there, or choose another --proxy-port (or leave it out: "
                           + "the proxy then shares the dashboard's port)")
        }
        // Before the report: a signal sent the moment a caller reads it must find its handler in place.
        let shutdown = ShutdownSignal.listen()
        if let warning = runner.descriptorWarning { Output.error(warning) }
        let document = runner.document()
        if output.json {
            print(String(decoding: try document.json(), as: UTF8.self))
        } else {
            print(RunnerReport.text(document, caFile: storeOptions.store.certificatePath(.root).path,
                                    storeArgument: storeOptions.dirArgument))
            let serving = document.scenarios.filter { $0.status == .serving }.count
            let preparing = document.scenarios.filter { $0.status == .preparing }.count
            let later = preparing == 0 ? "" : " (and \(preparing) more once prepared)"
            print("\nServing \(serving) scenario\(serving == 1 ? "" : "s")\(later). Ctrl-C to stop.")
        }
        fflush(nil)   // A pipe reader (a test, a script) sees the table now, not at exit.
        let signal = await shutdown.wait()
        Output.error("\(signal == SIGTERM ? "SIGTERM" : "interrupt"): stopping…")
        await runner.stop()
    }

    /// Lines on standard error about what these flags expose: non-loopback addresses, privileged ports.
    private func warnings() -> [String] {
        var lines = bindAddresses.filter { !["127.0.0.1", "::1", "localhost"].contains($0) }.map { address in
            "warning: listening on \(address): these servers are deliberately insecure; anyone who can reach this "
                + "address can use them"
        }
        // Up to the OCSP responder at base + 99, as validate() counts them.
        let highest = (try? source.catalog())?.highestPort(portBase: portBase) ?? portBase
        if portBase < 1024 {
            // Privileged ports (below 1024) belong to system services: 22 is ssh, 53 DNS, 80 and 443 web servers.
            lines.append("warning: --port-base \(portBase) puts the dashboard and fixtures on ports "
                         + "\(portBase)–\(highest), below 1024 where system services live (22 ssh, 53 DNS, 80 and 443 "
                         + "web); choose a base whose ports (base to base + \(highest - portBase)) stay from 1024 to "
                         + "\(Self.ephemeralPortStart - 1), such as the default \(ScenarioCatalog.defaultPortBase)")
        } else if highest >= Self.ephemeralPortStart {
            lines.append("warning: --port-base \(portBase) puts ports up to \(highest) in Linux's ephemeral range (from "
                         + "\(Self.ephemeralPortStart)), where the system picks ports for outgoing connections and a "
                         + "fixture's port may be taken; choose a base whose ports (base to base + \(highest - portBase)) "
                         + "stay from 1024 to \(Self.ephemeralPortStart - 1), such as the default "
                         + "\(ScenarioCatalog.defaultPortBase)")
        }
        return lines
    }

    /// Where Linux's ephemeral port range starts (net.ipv4.ip_local_port_range; IANA's is 49152): the README advises a
    /// base below it.
    static let ephemeralPortStart = 32_768

    /// The flags as the library's options (checked in `validate()` already).
    private func runnerOptions() throws -> ScenarioRunner.Options {
        var options = ScenarioRunner.Options()
        options.portBase = portBase
        options.bindAddresses = bindAddresses.isEmpty ? nil : bindAddresses
        options.handshakeTimeout = try SecondsOption.check(handshakeTimeout, "--handshake-timeout").timeAmount
        options.idleTimeout = try SecondsOption.check(idleTimeout, "--idle-timeout").timeAmount
        options.headerTimeout = try SecondsOption.check(headerTimeout, "--header-timeout").timeAmount
        options.maximumConnections = maxConnections
        switch legacyHelper {
        case "none": options.legacyHelper = nil
        case let path?: options.legacyHelper = URL(fileURLWithPath: path)
        case nil: options.legacyHelper = LegacyHelper.locate()
        }
        options.domains = domains
        // The legacy helper runs without a front door: the main process's lists its scenarios.
        options.frontDoor = !noDashboard
        options.proxyPort = proxyPort
        options.allowRemoteClients = allowRemoteClients
        let sink = try connectionSink()
        let report = try reportSink()
        if sink.isActive || report != nil {
            options.connectionEnded = { connection in
                if sink.isActive { sink.write(connection) }
                report?.add(connection)
            }
        }
        if sink.wantsProxyRefusals { options.proxyRefused = { sink.write($0) } }
        options.preparationGate = TestHooks.preparationGate()
        return options
    }

    /// `--report DIR`'s card of clients driven by hand; nil without it.
    private func reportSink() throws -> ManualReportSink? {
        guard let report else { return nil }
        do {
            return try ManualReportSink(folder: URL(fileURLWithPath: report), catalog: try source.catalog(),
                                        family: .verifying)
        } catch {
            throw CLIError("--report \(report) cannot be written (\(error)); give a folder you may write to")
        }
    }

    /// Where each ended connection goes (`--log-connections`, `--connection-log`); opening the file is the check.
    private func connectionSink() throws -> ConnectionEventSink {
        switch ConnectionEventSink.open(text: logConnections, path: connectionLog) {
        case .sink(let sink): return sink
        case .refused(let line): throw CLIError(line)
        }
    }

    /// One line on standard error per step of a slow first run.
    @Sendable private static func show(_ progress: FixtureFleet.Progress) {
        switch progress {
        case .generating(let name, let key):
            let slow = key.description.hasPrefix("rsa:8192") ? "; an RSA-8192 key can take a minute" : ""
            Output.error("generating the \(key) key for \(name) (first run only\(slow))…")
        case .preparingInBackground(let name, let making):
            Output.error("\(name): making \(making) in the background (first run only); served when ready")
        case .serving(let name, let port):
            Output.error("\(name): ready, now serving on port \(port)")
        case .failed(let name, let reason):
            Output.error("\(name): not served: \(reason)")
        case .prepared:
            break
        }
    }
}
