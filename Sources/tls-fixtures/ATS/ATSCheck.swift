import ArgumentParser
import Foundation
import TLSFixtures

struct ATSCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Would an app with this Info.plist load this URL? Probes the server for real, then evaluates.",
        discussion: """
            Exit status: 0 allowed, 2 blocked, 1 errors.
            Example:
              tls-fixtures ats check --plist MyApp/Info.plist --trust-ca ca.pem \\
                --resolve tls-v1-0.fixtures.test:9810:127.0.0.1 https://tls-v1-0.fixtures.test:9810/
            """
    )

    @Option(help: ArgumentHelp("The app's Info.plist (XML or binary), or a plist holding just the NSAppTransportSecurity dictionary. Without one, or without the key in it, ATS's defaults (what an app without the key gets).", valueName: "file"))
    var plist: String?

    @Argument(help: ArgumentHelp("The URL the app loads.", valueName: "url"))
    var url: String

    @OptionGroup var client: ATSClientOptions

    @Flag(help: "The app's URLSessionDelegate accepts the server trust itself.")
    var trustOverride = false

    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try client.target(url)
        _ = try client.evaluationOptions()
    }

    func run() async throws {
        let policy: ATSPolicy
        if let plist {
            let data = try FlagHints.read(plist, flag: "--plist")
            let (parsed, note) = try ATSPolicy.parseApp(plist: data)
            policy = parsed
            if let note { Output.error("note: \(note)") }
            // The warnings of the chosen OS: a key it ignores is named as such.
            for warning in policy.warnings(for: try client.evaluationOptions()) { Output.error("warning: \(warning)") }
        } else {
            policy = .empty
        }
        let (parsedURL, target) = try client.target(url)
        let facts = try await ServerFactsCollector(probe: TLSProbe(options: try client.probeOptions())).collect(target)
        let verdict = ATSEvaluator(policy: policy, options: try client.evaluationOptions(trustOverride: trustOverride)).evaluate(url: parsedURL, facts: facts)
        if output.json {
            try Output.json(verdict)
        } else {
            print(ATSVerdictText.text(verdict, url: url))
        }
        if !verdict.allowed { throw ExitCode(2) }
    }
}

/// The verdict in words.
enum ATSVerdictText {
    static func text(_ verdict: ATSVerdict, url: String) -> String {
        var lines = ["\(verdict.allowed ? "ALLOWED" : "BLOCKED"): \(url)"]
        if let warning = verdict.exemptionWarning { lines.append("!! \(warning)") }
        if let domain = verdict.matchedExceptionDomain { lines.append("Exception entry: \(domain)") }
        if let version = verdict.negotiatedVersion { lines.append("Negotiated: \(version) \(verdict.negotiatedSuite ?? "")") }
        for violation in verdict.violations { lines.append("  violates \(violation.rule.rawValue): \(violation.message) → likely \(violation.likelyError)") }
        for waived in verdict.waived { lines.append("  waived \(waived.rule.rawValue): \(waived.message)") }
        if let error = verdict.likelyError, !verdict.allowed { lines.append("Likely error: \(error)") }
        for note in verdict.notes { lines.append("Note: \(note)") }
        if !verdict.rules.isEmpty {
            lines.append("Model rules (confidence): \(verdict.rules.map(\.description).joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }
}
