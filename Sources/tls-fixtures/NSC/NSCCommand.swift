import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

struct NSCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nsc",
        abstract: "Predict what Android's Network Security Config does with the catalog's servers, on any machine.",
        discussion: """
            Android's twin of `ats`: the model reads network_security_config.xml as AOSP's XmlConfigSource reads it \
            (and the manifest's usesCleartextTraffic, networkSecurityConfig, debuggable and targetSdkVersion), \
            resolves the config for each scenario's host, and judges the scenario as OkHttp on the platform's \
            Conscrypt would: cleartext, trust anchors (the kit's CA bundled as @raw/…, or installed as a user CA), \
            pins and their expiration, and the TLS versions and suites the client offers. Every verdict lists the \
            model rules it used with their confidence and source; docs/android.md lists every rule and what is not \
            modelled.
            """,
        subcommands: [NSCCheck.self]
    )
}

struct NSCCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Judge an app's Network Security Config against every catalog scenario, with the fix for each "
            + "refusal.",
        discussion: """
            Exit status: 0 when the config parses (whatever the verdicts), 1 when Android would refuse the config \
            itself (the app then fails its first connection), or on another error.
            Example:
              tls-fixtures nsc check app/src/main/res/xml/network_security_config.xml \\
                --manifest app/build/intermediates/merged_manifests/debug/AndroidManifest.xml \\
                --scenario ats-compliant,http,pin-mitm,pin-rotated-key
            """
    )

    @Argument(help: ArgumentHelp(
        "The app's network_security_config.xml. Without it: an app that names none (the platform's "
        + "defaults, and the manifest's usesCleartextTraffic).", valueName: "file"))
    var file: String?

    @Option(help: ArgumentHelp(
        "The app's AndroidManifest.xml (the merged one has the SDK levels): usesCleartextTraffic, "
        + "networkSecurityConfig, debuggable, targetSdkVersion.", valueName: "file"))
    var manifest: String?

    @Option(help: ArgumentHelp(
        "The app's targetSdkVersion. Default: the manifest's, else \(NSCApp.currentTargetSdk).", valueName: "level"))
    var targetSdk: Int?

    @Option(help: ArgumentHelp(
        "The device's API level (its TLS versions depend on it). Default: the target SDK.", valueName: "level"))
    var deviceApi: Int?

    @Option(help: ArgumentHelp(
        "release or debug (debug applies <debug-overrides>). Default: the manifest's android:debuggable, "
        + "else release.", valueName: "build"))
    var build: NSCBuild?

    @Option(help: ArgumentHelp(
        "The config's _debug twin, whose <debug-overrides> a debug build reads when the file has none. "
        + "Default: NAME_debug.xml beside FILE, when there is one.", valueName: "file"))
    var debugResource: String?

    @Option(help: ArgumentHelp("The HTTP client: okhttp (3.13 or later) or httpsurlconnection.", valueName: "client"))
    var client: NSCClient = .okhttp

    @Option(name: .customLong("ca-in"), help: ArgumentHelp(
        "Where the kit's CA is on the device: @raw/NAME (bundled with the app), user (installed in "
        + "Settings) or system (repeatable). Default: @raw/tls_fixtures_ca.", valueName: "source"))
    var caIn: [String] = []

    @Option(help: ArgumentHelp(
        "The host the app connects by: qualified (NAME.fixtures.test, through the runner's proxy) or "
        + "localhost (adb reverse).", valueName: "host"))
    var host: ScenarioNSCFacts.HostChoice = .qualified

    @Option(help: ArgumentHelp(
        "The device's day, for pin-set expirations (yyyy-MM-dd). Default: today.", valueName: "day"))
    var today: String?

    @Option(help: ArgumentHelp(
        "Scenarios to judge, comma-separated or repeated. Default: every scenario of the catalog.", valueName: "names"))
    var scenario: [String] = []

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    var scenarioNames: [String] {
        scenario.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            .filter { !$0.isEmpty }
    }

    func validate() throws {
        if let targetSdk, !(1...99).contains(targetSdk) {
            throw ValidationError("--target-sdk \(targetSdk) is not an API level")
        }
        if let deviceApi, !(1...99).contains(deviceApi) {
            throw ValidationError("--device-api \(deviceApi) is not an API level")
        }
        _ = try placement()
        _ = try day()
        let catalog = try FlagHints.translating { try source.catalog() }
        for name in scenarioNames { _ = try FlagHints.translating { try catalog.scenario(named: name) } }
    }

    func placement() throws -> Set<NSCCertificateSource> {
        guard !caIn.isEmpty else { return ScenarioNSCFacts.defaultCAPlacement }
        return Set(try caIn.map { text in
            guard let source = NSCCertificateSource(src: text), source != .wfa else {
                throw ValidationError("--ca-in \(text) is not @raw/NAME, user or system")
            }
            return source
        })
    }

    func day() throws -> NSCDay {
        guard let today else { return NSCDay(Date(), timeZone: .current) }
        guard let day = NSCDay(parsing: today) else {
            throw ValidationError("--today \(today) is not a day written yyyy-MM-dd")
        }
        return day
    }

    func run() async throws {
        var manifestValues: NSCManifest?
        if let manifest {
            manifestValues = try NSCManifest.parse(try FlagHints.read(manifest, flag: "--manifest"))
            for warning in manifestValues?.warnings ?? [] { Output.error("warning: \(manifest): \(warning)") }
        }
        let app = manifestValues.map { NSCApp(manifest: $0, targetSdk: targetSdk, deviceAPI: deviceApi, build: build) }
            ?? NSCApp(targetSdk: targetSdk ?? NSCApp.currentTargetSdk, deviceAPI: deviceApi, build: build ?? .release)
        if file == nil, let named = manifestValues?.networkSecurityConfig {
            throw CLIError("the manifest names \(named): give its file (res/xml/…) as FILE")
        }
        var document: NSCDocument?
        if let file {
            if manifestValues != nil && manifestValues?.networkSecurityConfig == nil {
                Output.error("warning: the manifest names no android:networkSecurityConfig, so Android would not read "
                             + "\(file): judged as if it did")
            }
            let debugData = try debugResourceData(for: file, build: app.build)
            do {
                document = try NSCDocument.parse(try FlagHints.read(file, flag: "FILE"), build: app.build,
                                                 debugResource: debugData)
            } catch {
                throw CLIError("\(file): \(error) (Android refuses this config: the app's first connection fails with "
                               + "\"Failed to parse XML configuration\")")
            }
            for warning in document?.warnings ?? [] { Output.error("warning: \(file): \(warning)") }
        }
        let store = storeOptions.store
        let published = try store.prepare(try source.catalog().scenario(named: "pinned"))
        let check = NSCCatalogCheck(app: app, document: document, options: NSCEvaluationOptions(client: client,
                                    today: try day()), hosts: host, caPlacement: try placement(),
                                    keys: ScenarioNSCFacts.Keys(published.pins))
        let catalog = try source.catalog()
        let chosen = scenarioNames.isEmpty ? catalog.scenarios
            : try scenarioNames.map { try catalog.scenario(named: $0) }
        let rows = check.rows(chosen)
        if output.json {
            let placement = check.caPlacement.map(\.description).sorted()
            try Output.json(NSCCheckReport(app: app, configFile: file, caIn: placement, rows: rows))
            return
        }
        print(NSCCheckText.text(rows, app: app, file: file, client: client, caPlacement: check.caPlacement))
    }

    /// The `_debug` twin: the one named, else `NAME_debug.xml` beside the file, for a debug build only.
    func debugResourceData(for file: String, build: NSCBuild) throws -> Data? {
        guard build == .debug else { return nil }
        if let debugResource { return try FlagHints.read(debugResource, flag: "--debug-resource") }
        let url = URL(fileURLWithPath: file)
        let twin = url.deletingPathExtension().path + "_debug." + url.pathExtension
        guard FileManager.default.fileExists(atPath: twin) else { return nil }
        Output.error("note: reading \(twin) for <debug-overrides>, as a debug build does")
        return try FlagHints.read(twin, flag: "--debug-resource")
    }
}

extension NSCBuild: ExpressibleByArgument {}
extension NSCClient: ExpressibleByArgument {}
extension ScenarioNSCFacts.HostChoice: ExpressibleByArgument {}

/// `nsc check --json`.
struct NSCCheckReport: Encodable {
    var app: NSCApp
    var configFile: String?
    var caIn: [String]
    var rows: [NSCCatalogCheck.Row]
}

/// The verdicts in words: one line a scenario, the reason and fix under each refusal, the rules at the end.
enum NSCCheckText {
    static func text(_ rows: [NSCCatalogCheck.Row], app: NSCApp, file: String?, client: NSCClient,
                     caPlacement: Set<NSCCertificateSource>) -> String {
        let placement = caPlacement.map(\.description).sorted().joined(separator: ", ")
        var lines = ["\(file ?? "no Network Security Config"): \(app.build.rawValue) build, target SDK "
                     + "\(app.targetSdk) on API \(app.deviceAPI), \(client.rawValue); the kit's CA in \(placement)"]
        let width = max(rows.map(\.scenario.count).max() ?? 8, 8)
        for row in rows {
            let verdict = row.verdict
            let name = row.scenario.padding(toLength: width, withPad: " ", startingAt: 0)
            guard !verdict.connects else {
                lines.append("\(name)  connects    \(verdict.notes.first.map { "(\($0))" } ?? "")"
                    .trimmingCharacters(in: .whitespaces))
                continue
            }
            let step = verdict.step.map(Self.stepName) ?? "?"
            lines.append("\(name)  refused     \(step): \(verdict.reason ?? "")")
            lines.append(String(repeating: " ", count: width + 14) + "fix: \(verdict.fix.text)")
        }
        let connecting = rows.filter(\.verdict.connects).count
        lines.append("\(connecting) of \(rows.count) scenarios connect.")
        var rules: [NSCModelRule] = []
        for rule in rows.flatMap(\.verdict.rules) where !rules.contains(rule) { rules.append(rule) }
        lines.append("Model rules (confidence): \(rules.map(\.description).joined(separator: ", "))")
        return lines.joined(separator: "\n")
    }

    static func stepName(_ step: RefusalStep) -> String {
        switch step {
        case .beforeConnecting: return "before connecting"
        case .negotiation: return "negotiation"
        case .certificate: return "certificate"
        case .clientCertificate: return "client certificate"
        case .afterHandshake: return "after the handshake"
        }
    }
}
