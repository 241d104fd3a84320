import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

/// `serve`'s flags, and the one place they become a `FixtureRunner.Configuration`: a new flag is a property here and a
/// line of `configuration()`.
struct ServeFlags: ParsableArguments {
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "Scenario names (default: all).")
    var names: [String] = []

    @Option(help: ArgumentHelp("Dashboard port; every scenario keeps its offset from it.", valueName: "port"))
    var portBase = ScenarioCatalog.defaultPortBase

    @Option(
        name: .customLong("bind"),
        help: ArgumentHelp("Address to listen on (repeatable; default loopback).", valueName: "address"))
    var bindAddresses: [String] = []

    @Option(help: ArgumentHelp("Seconds a client has to finish the handshake.", valueName: "seconds"))
    var handshakeTimeout: Double = 10

    @Option(help: ArgumentHelp("Seconds of silence before a connection is closed.", valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(help: ArgumentHelp(
        "Seconds each request has to arrive whole, from the connection's start (after TLS, the handshake's end) or the "
            + "previous answer.", valueName: "seconds"))
    var headerTimeout: Double = 20

    @Option(help: ArgumentHelp(
        "Most connections one fixture holds at once (default: a quarter of the descriptors this process may open; the "
            + "dashboard holds at most 256).", valueName: "count"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp(
        "The `make legacy-openssl` helper that serves SSLv3, RC4 and 3DES in a process of its own (default: "
            + "$\(LegacyHelper.environmentVariable), else the checkout's \(LegacyHelper.relativePath)); `none` serves "
            + "without it.", valueName: "path"))
    var legacyHelper: String?

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Also name every fixture NAME.DOMAIN (repeatable), and let the proxy resolve those names.",
        discussion: "For TrustKit, which refuses .test: use a domain on the public suffix list that you control. The CA "
            + "must permit it (`ca init --domain`).",
        valueName: "domain"))
    var domains: [String] = []

    @Option(help: ArgumentHelp("Serve the proxy on this port of its own instead of the dashboard's.", valueName: "port"))
    var proxyPort: Int?

    @Flag(help: ArgumentHelp(
        "Let clients on other machines use the control API and the proxy (with --bind; loopback only by default)."))
    var allowRemoteClients = false

    @Flag(help: ArgumentHelp(
        "Print a line on standard error for each connection to a fixture as it ends: who, through which proxy name, "
            + "and how it went.",
        discussion: "For example `expired :9831 #3 127.0.0.1:52114: the client sent certificate_expired(45) after the "
            + "server's certificate`. Requests the proxy refused, which reach no fixture, get a line too: `proxy: "
            + "CONNECT expird.fixtures.test:9831 from 127.0.0.1:52120 refused (403): …`. `tls-fixtures connections "
            + "NAME` shows a fixture's last 64 in full."))
    var logConnections = false

    @Option(help: ArgumentHelp(
        "Append each connection to a fixture, as it ends, to this file as one JSON object a line (its scenario, port "
            + "or fixture id, and the record GET /api/fixtures/ID/connections gives).",
        valueName: "file"))
    var connectionLog: String?

    @Option(help: ArgumentHelp(
        "Keep a report card in this folder of every client that connects to a catalog fixture, per scenario, with a "
            + "verdict from what the fixture saw (report.md, report.json, report.junit.xml; rewritten as connections "
            + "end): for testing an app by hand.", valueName: "dir"))
    var report: String?

    /// The flags as the library's configuration, unchecked (`FixtureRunner` checks it). With `sink`, each ended
    /// connection and refused proxy request goes to `--log-connections` and `--connection-log`; with `report`, each
    /// ended connection to `--report`'s card too.
    func configuration(
        sink: ConnectionEventSink? = nil, report: ManualReportSink? = nil
    ) throws -> FixtureRunner.Configuration {
        var configuration = FixtureRunner.Configuration()
        configuration.catalog = try source.catalog()
        configuration.scenarios = names
        configuration.store = storeOptions.store
        configuration.portBase = portBase
        configuration.bindAddresses = bindAddresses
        configuration.handshakeTimeout = try SecondsOption.check(handshakeTimeout, "--handshake-timeout").timeAmount
        configuration.idleTimeout = try SecondsOption.check(idleTimeout, "--idle-timeout").timeAmount
        configuration.headerTimeout = try SecondsOption.check(headerTimeout, "--header-timeout").timeAmount
        configuration.maximumConnections = maxConnections
        switch legacyHelper {
        case "none": configuration.legacyHelper = .none
        case let path?: configuration.legacyHelper = .at(URL(fileURLWithPath: path))
        case nil: configuration.legacyHelper = .automatic
        }
        configuration.domains = domains
        configuration.proxyPort = proxyPort
        configuration.allowRemoteClients = allowRemoteClients
        configuration.stopsOnSignals = true
        let logging = sink?.isActive == true ? sink : nil
        if logging != nil || report != nil {
            configuration.connectionEnded = { connection in
                logging?.write(connection)
                report?.add(connection)
            }
        }
        if let sink, sink.wantsProxyRefusals { configuration.proxyRefused = { sink.write($0) } }
        return configuration
    }

    /// `--report DIR`'s card of clients driven by hand; nil without it.
    func reportSink() throws -> ManualReportSink? {
        guard let report else { return nil }
        do {
            return try ManualReportSink(folder: URL(fileURLWithPath: report), catalog: try source.catalog(),
                                        family: .verifying)
        } catch {
            throw CLIError("--report \(report) cannot be written (\(error)); give a folder you may write to")
        }
    }

    /// Where each ended connection goes (`--log-connections`, `--connection-log`); opening the file is the check.
    func connectionSink() throws -> ConnectionEventSink {
        switch ConnectionEventSink.open(text: logConnections, path: connectionLog) {
        case .sink(let sink): return sink
        case .refused(let line): throw CLIError(line)
        }
    }
}
