import ArgumentParser
import Foundation
import TLSFixtures

struct ATSDiagnose: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: "nscurl --ats-diagnostics, on any OS: each ATS configuration tried with a real handshake.",
        discussion: """
            Runs nscurl's sequence (default, arbitrary loads, each minimum TLS version, forward secrecy off, insecure \
            HTTP, and their combinations) and prints PASS or FAIL for each in nscurl's layout. Each result comes from \
            a real handshake that offers exactly what Apple's loader would under that configuration, then a request: \
            as in nscurl, PASS means the load completed with no error, so a server that demands a client certificate \
            fails every configuration. -v prints each configuration's ATS dictionary and the error as nscurl does \
            (Error Domain=NSURLErrorDomain Code=-1200 "…" UserInfo={_kCFStreamErrorCodeKey=-98xx, …}), then a \
            Detail line with the model's reason and the TLS client's own words.
            The header names the system modelled (--os, default iOS 17+): nscurl itself reports the TLS stack of the \
            Mac it runs on. --json prints the shape documented in docs/ATS-MODEL.md.
            A host ATS does not apply to (localhost, an unqualified name, an IP address) gets a warning on standard \
            error first, as `ats check` gives: its PASS says nothing about your ATS settings.
            Exit status: 0 when the default configuration passes, 2 when it fails, 1 on errors.
            """
    )

    @Argument(help: ArgumentHelp("https:// URL of the server.", valueName: "url"))
    var url: String

    @OptionGroup var client: ATSClientOptions

    @Flag(name: .shortAndLong, help: "Show each configuration's dictionary and error, as nscurl --verbose does.")
    var verbose = false

    @OptionGroup var output: OutputOptions

    func validate() throws {
        _ = try client.target(url)
        _ = try client.evaluationOptions()
    }

    func run() async throws {
        let (parsedURL, target) = try client.target(url)
        // As `ats check` says it: a PASS for an exempt host (localhost) says nothing about ATS.
        let requirements = ATSRequirementsResolver(policy: .empty, options: try client.evaluationOptions()).resolve(url: parsedURL)
        if let warning = requirements.exemptionWarning { Output.error("warning: \(warning)") }
        let handshaker = ATSLiveHandshaker(target: target, probeOptions: try client.probeOptions())
        let report = await ATSDiagnostics(options: try client.evaluationOptions()).run(url: parsedURL, handshaker: handshaker)
        if output.json {
            print(String(decoding: try report.jsonData(), as: UTF8.self))
        } else {
            print(report.text(verbose: verbose))
        }
        if report.results.first?.passed == false { throw ExitCode(2) }
    }
}
