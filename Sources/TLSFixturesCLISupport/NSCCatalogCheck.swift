import Foundation
import TLSFixturesNSC
import TLSFixturesScenario
import TLSFixturesWire

/// `tls-fixtures nsc check`: an app's Network Security Config judged against every catalog scenario (or the ones
/// named), each verdict beside what the scenario file expects of the baseline Android app.
package struct NSCCatalogCheck: Sendable {
    /// The app: target SDK, device, build.
    package var app: NSCApp
    /// The parsed config; nil for an app that names none.
    package var document: NSCDocument?
    /// The client and the day.
    package var options: NSCEvaluationOptions
    /// Which host each scenario is reached by.
    package var hosts: ScenarioNSCFacts.HostChoice
    /// Where the kit's CA is on the device.
    package var caPlacement: Set<NSCCertificateSource>
    /// The store's published pins.
    package var keys: ScenarioNSCFacts.Keys

    package init(app: NSCApp, document: NSCDocument?, options: NSCEvaluationOptions = NSCEvaluationOptions(),
                 hosts: ScenarioNSCFacts.HostChoice = .qualified,
                 caPlacement: Set<NSCCertificateSource> = ScenarioNSCFacts.defaultCAPlacement,
                 keys: ScenarioNSCFacts.Keys) {
        self.app = app
        self.document = document
        self.options = options
        self.hosts = hosts
        self.caPlacement = caPlacement
        self.keys = keys
    }

    /// One scenario's verdict.
    package struct Row: Sendable, Codable, Equatable {
        package var scenario: String
        package var verdict: NSCVerdict
    }

    package var config: NSCApplicationConfig { NSCApplicationConfig(document: document, app: app) }

    /// The verdicts for `scenarios`, in the order given.
    package func rows(_ scenarios: [Scenario]) -> [Row] {
        let evaluator = NSCEvaluator(config: config, app: app, options: options)
        return scenarios.map { scenario in
            let facts = ScenarioNSCFacts.facts(scenario, host: hosts.host(for: scenario), keys: keys,
                                               caPlacement: caPlacement)
            return Row(scenario: scenario.name, verdict: evaluator.evaluate(facts))
        }
    }

    /// The baseline app of docs/android.md and the scenario files' `expect.android`: OkHttp, target SDK 35, a release
    /// build, and a config that trusts the kit's CA (bundled as `@raw/tls_fixtures_ca`) for `fixtures.test` and its
    /// subdomains, the system CAs elsewhere.
    package static let baselineConfig = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
            <domain-config>
                <domain includeSubdomains="true">fixtures.test</domain>
                <trust-anchors>
                    <certificates src="@raw/tls_fixtures_ca"/>
                </trust-anchors>
            </domain-config>
        </network-security-config>
        """

    /// The baseline app's check.
    package static func baseline(keys: ScenarioNSCFacts.Keys, today: NSCDay) throws -> NSCCatalogCheck {
        let document = try NSCDocument.parse(Data(baselineConfig.utf8), build: .release)
        return NSCCatalogCheck(app: NSCApp(targetSdk: 35), document: document,
                               options: NSCEvaluationOptions(client: .okhttp, today: today), keys: keys)
    }

    /// What the scenario file expects of the baseline app: `expect.android`'s outcome, else `verify`'s (nil for a
    /// scenario without TLS and without `expect.android`).
    package static func expectedOutcome(_ scenario: Scenario) -> AndroidExpectation.Outcome? {
        if let android = scenario.expect.android { return android.outcome }
        return scenario.expect.verify.map { $0 == "ok" ? .accept : .reject }
    }
}
