import ArgumentParser
import Foundation
import TLSFixtures

struct ATSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ats",
        abstract: "Predict what App Transport Security does with a server, on Linux, from real handshakes.",
        discussion: """
            The model follows Apple's documentation for NSAppTransportSecurity (readings where Apple's docs and \
            source disagree are options). It cannot see CT logs or revocation, and Apple does not document which \
            error code every violation yields: the violated rule comes first, a likely code second.
            """,
        subcommands: [ATSCheck.self, ATSDiagnose.self, ATSException.self]
    )
}

/// Options shared by the `ats` commands: which device, and how to reach and trust the server.
struct ATSClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("OS profile: ios9, ios10 (10–12), ios13, ios14 (14–16), ios17 (17+); or a version such as 15.4.", valueName: "profile"))
    var os = "ios17"

    @Option(help: ArgumentHelp("Load kind: data (URLSession), media (AVFoundation), web (WKWebView).", valueName: "kind"))
    var loadKind = "data"

    @Option(help: ArgumentHelp("A root the device trusts (PEM or DER, repeatable). Default: the system's roots.", valueName: "file"))
    var trustCA: [String] = []

    @Option(help: ArgumentHelp("Which kind of anchor --trust-ca stands for: user (installed by the user), app (SecTrustSetAnchorCertificates), system.", valueName: "kind"))
    var anchor = "user"

    @Option(help: ArgumentHelp("Connect HOST:PORT to ADDRESS instead of resolving it (repeatable).", valueName: "host:port:address"))
    var resolve: [String] = []

    @Option(help: ArgumentHelp("NSIncludesSubdomains reading: all (as Apple's source behaves) or one-label (as the current docs read).", valueName: "reading"))
    var subdomains = "all"

    @Option(help: ArgumentHelp("Seconds all the command's handshakes may take together, however slowly the server answers.", valueName: "seconds"))
    var timeout: Double = 30

    /// Checks what parsing alone cannot: the time limit's range.
    func validate() throws {
        _ = try SecondsOption.check(timeout, "--timeout")
    }

    func evaluationOptions(trustOverride: Bool = false) throws -> ATSEvaluationOptions {
        guard let profile = ATSOSProfile(parsing: os) else { throw CLIError("unknown --os \"\(os)\": use ios9, ios10, ios13, ios14, ios17 or a version such as 15.4") }
        guard let kind = ATSLoadKind(parsing: loadKind) else { throw CLIError("unknown --load-kind \"\(loadKind)\": use data, media or web") }
        var readings = ATSReadings()
        switch subdomains {
        case "all": readings.subdomains = .everySubdomain
        case "one-label": readings.subdomains = .oneExtraLabel
        default: throw CLIError("--subdomains is all or one-label")
        }
        return ATSEvaluationOptions(loadKind: kind, profile: profile, readings: readings, trustOverride: trustOverride)
    }

    func probeOptions() throws -> ProbeOptions {
        var options = ProbeOptions()
        if !trustCA.isEmpty {
            options.trustRoots = try trustCA.flatMap { path -> [Certificate] in
                let data = try UserFile.read(path)
                do { return try Certificate.read(data) } catch { throw CLIError("\(path) is not a PEM or DER certificate (\(error))") }
            }
        }
        guard let kind = TrustAnchorKind(rawValue: anchor) else { throw CLIError("--anchor is user, app or system") }
        options.anchorKind = trustCA.isEmpty ? .system : kind
        // One deadline for every handshake the command makes, starting now.
        let limit = try SecondsOption.check(timeout, "--timeout")
        options.timeout = limit.seconds
        options.deadline = ProbeDeadline(limit)
        return options
    }

    func target(_ url: String) throws -> (URL, ProbeTarget) {
        guard url.contains("://"), let parsed = URL(string: url) else {
            throw CLIError("\"\(url)\" is not a URL: give https://HOST[:PORT]/ (or http://)")
        }
        guard let host = parsed.host, !host.isEmpty else { throw CLIError("\(url) has no host") }
        var target = try ProbeTarget(parsing: url)
        try target.apply(resolve: resolve)
        _ = host
        return (parsed, target)
    }
}
