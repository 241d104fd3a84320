import ArgumentParser
import Foundation
import TLSFixtures

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

    @OptionGroup var flags: ServeFlags

    var storeOptions: StoreOptions { flags.storeOptions }

    func validate() throws {
        // ArgumentParser wraps what validate() throws, so the flags go into library errors here rather than in main.
        try FlagHints.translating { try flags.configuration().validate() }
        // Last: it creates the log file, which a refusal above must not leave behind.
        _ = try flags.connectionSink()
    }

    func run() async throws {
        TestHooks.watchParent()
        let configuration = try flags.configuration(sink: try flags.connectionSink(), report: try flags.reportSink())
        let presenter = ServePresenter(
            json: flags.output.json, warnings: configuration.warnings.map(FlagHints.serveFlags),
            caFile: storeOptions.store.certificatePath(.root).path, storeArgument: storeOptions.dirArgument)
        var hooks = FixtureFleet.Hooks()
        hooks.preparationGate = TestHooks.preparationGate()
        try await FixtureRunner(configuration, hooks: hooks, events: presenter.show).run()
    }
}
