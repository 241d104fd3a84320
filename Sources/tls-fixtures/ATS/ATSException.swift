import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

struct ATSException: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exception",
        abstract: "The smallest NSAppTransportSecurity dictionary that admits a scenario or a server, ready to paste.",
        discussion: """
            Give a scenario name (it is started on a free port and probed by NAME.fixtures.test, with the built-in CA \
            trusted) or a URL (probed as is; use --trust-ca and --resolve as needed). Prints plist XML, or says that \
            no ATS key admits it and what would.
            """
    )

    @Argument(help: ArgumentHelp("A scenario name or an https:// URL.", valueName: "scenario-or-url"))
    var subject: String

    @OptionGroup var client: ATSClientOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions

    @Option(help: ArgumentHelp("fewest-keys (default) or domain-scoped-first: prefer keys in the host's exception entry over NSAllowsArbitraryLoads.", valueName: "strategy"))
    var strategy = Spelled<ATSExceptionFinder.Strategy>(.fewestKeys)

    @OptionGroup var output: OutputOptions

    func validate() throws {
        try FlagHints.translating {
            if subject.contains("://") { _ = try client.target(subject) } else { _ = try source.catalog().scenario(named: subject) }
        }
    }

    func run() async throws {
        let url: URL
        let facts: ServerFacts
        if subject.contains("://") {
            let (parsedURL, target) = try client.target(subject)
            url = parsedURL
            facts = try await ServerFactsCollector(probe: TLSProbe(options: try client.probeOptions())).collect(target)
        } else {
            let observation = try await ScenarioATSProbe.observe(try source.catalog().scenario(named: subject), store: storeOptions.store)
            url = observation.url
            facts = observation.facts
        }
        let finding = ATSExceptionFinder(options: try client.evaluationOptions(), strategy: strategy.value).find(url: url, facts: facts)
        if output.json {
            try Output.json(ExceptionJSON(finding))
            return
        }
        switch finding.result {
        case .notNeeded:
            print("No exception needed: ATS's defaults already allow \(url.absoluteString).")
        case .exception(_, let alsoRequires):
            print(finding.plistXML ?? "")
            for requirement in alsoRequires { print("<!-- Also required: \(requirement) -->") }
        case .impossible(let reason):
            print("No ATS key admits \(url.absoluteString): \(reason)")
        }
        for note in finding.notes { Output.error("note: \(note)") }
    }
}

struct ExceptionJSON: Encodable {
    var kind: String
    var plist: String?
    var requiresTrustOverride: Bool
    var alsoRequires: [String]
    var reason: String?
    var notes: [String]

    init(_ finding: ATSExceptionFinding) {
        switch finding.result {
        case .notNeeded: kind = "not-needed"; alsoRequires = []; reason = nil
        case .exception(_, let also): kind = finding.usesArbitraryLoads ? "arbitrary-loads" : "exception"; alsoRequires = also; reason = nil
        case .impossible(let why): kind = "impossible"; alsoRequires = []; reason = why
        }
        plist = finding.plistXML
        requiresTrustOverride = finding.requiresTrustOverride
        notes = finding.notes
    }
}
