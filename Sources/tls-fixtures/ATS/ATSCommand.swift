import ArgumentParser
import Foundation
import TLSFixtures

struct ATSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ats",
        abstract: "Predict what App Transport Security does with a server, on Linux, from real handshakes.",
        discussion: """
            The model follows Apple's documentation and Apple's open-source Security code; every verdict lists the \
            model rules it used with their confidence (high, medium, low) and source. Where Apple's sources disagree \
            or fall silent, the default reading is stated and the other is an option (--subdomains, --ip-addresses, \
            --third-party-keys, --dhe, --cipher-suites, --web-view-pins); docs/ATS-MODEL.md lists every rule. The \
            model counts the SCTs a publicly trusted leaf (--anchor system) arrives with but cannot see CT logs or \
            revocation, and Apple does not document which error code every violation yields: the violated rule comes \
            first, a likely code second.
            """,
        subcommands: [ATSCheck.self, ATSDiagnose.self, ATSException.self]
    )
}

/// Options shared by the `ats` commands: which device, and how to reach and trust the server.
struct ATSClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("OS profile: ios9, ios10 (10–12), ios13, ios14 (14–16), ios17 (17+, the default), ios26 (as reported by OWASP: TLS 1.0/1.1 refused whatever the exception; low confidence); or a version such as 15.4.", valueName: "profile"))
    var os: ATSOSProfile = .ios17

    @Option(help: ArgumentHelp("Load kind: data (URLSession), media (AVFoundation), web (WKWebView).", valueName: "kind"))
    var loadKind: ATSLoadKind = .data

    @Option(help: ArgumentHelp("A root the device trusts (PEM or DER, repeatable). Default: the system's roots (on macOS the Security framework's, Keychain included, as nscurl).", valueName: "file"))
    var trustCA: [String] = []

    @Option(help: ArgumentHelp("Which kind of anchor --trust-ca stands for: user (installed by the user), app (SecTrustSetAnchorCertificates), system (a root the OS ships: the leaf then needs Certificate Transparency).", valueName: "kind"))
    var anchor: TrustAnchorKind = .userInstalled

    @Option(help: ArgumentHelp("Connect HOST:PORT to ADDRESS instead of resolving it (repeatable).", valueName: "host:port:address"))
    var resolve: [String] = []

    @Option(help: ArgumentHelp("NSIncludesSubdomains in NSExceptionDomains: all (the default, as Apple's source behaves) or one-label (as the current docs read). Pinned domains always reach one label.", valueName: "reading"))
    var subdomains = Spelled<ATSReadings.Subdomains>(.everySubdomain)

    @Option(help: ArgumentHelp("IP literals on iOS 17+: external (the default: loopback and local-network addresses stay exempt, as the iOS 17 release notes and Apple's test say) or all (every IP literal falls under ATS, as the NSAllowsLocalNetworking page reads).", valueName: "reading"))
    var ipAddresses = Spelled<ATSReadings.IPAddresses>(.externalOnly)

    @Option(help: ArgumentHelp("NSThirdPartyException* keys: profile (the default: each acts as its plain twin on ios9, whose documentation listed them, and is ignored from ios10), ignore (on every profile) or plain (each acts as its plain twin on every profile).", valueName: "reading"))
    var thirdPartyKeys = Spelled<ATSReadings.ThirdPartyKeys>(.byProfile)

    @Option(help: ArgumentHelp("DHE suites with ATS out of the way: offered (the default, as the catalog assumes) or refused (Apple's source lists DHE only in a legacy group).", valueName: "reading"))
    var dhe = Spelled<ATSReadings.DHE>(.offeredWithoutATS)

    @Option(help: ArgumentHelp("TLS 1.2 suites under ATS: current (the default, Apple's current source) or 2015 (the list documented from 2015).", valueName: "reading"))
    var cipherSuites = Spelled<ATSReadings.CipherSuites>(.currentSource)

    @Option(help: ArgumentHelp("NSPinnedDomains for --load-kind web: ignored (the default, medium confidence: WKWebView loads in WebKit's networking process, which does not read the app's pins; tested on iOS 14 to 15.4) or enforced (the stricter reading).", valueName: "reading"))
    var webViewPins = Spelled<ATSReadings.WebViewPins>(.notEnforced)

    @Option(help: ArgumentHelp("Seconds all the command's handshakes may take together, however slowly the server answers.", valueName: "seconds"))
    var timeout: Double = 30

    /// Checks what parsing alone cannot: the time limit's range.
    func validate() throws {
        _ = try SecondsOption.check(timeout, "--timeout")
    }

    func evaluationOptions(trustOverride: Bool = false) throws -> ATSEvaluationOptions {
        let readings = ATSReadings(subdomains: subdomains.value, cipherSuites: cipherSuites.value, ipAddresses: ipAddresses.value,
                                   thirdPartyKeys: thirdPartyKeys.value, dhe: dhe.value, webViewPins: webViewPins.value)
        return ATSEvaluationOptions(loadKind: loadKind, profile: os, readings: readings, trustOverride: trustOverride)
    }

    func probeOptions() throws -> ProbeOptions {
        var options = ProbeOptions()
        if !trustCA.isEmpty {
            options.trustRoots = try trustCA.flatMap { path -> [Certificate] in
                let data = try FlagHints.read(path, flag: "--trust-ca")
                do { return try Certificate.read(data) } catch { throw CLIError("\(path) is not a PEM or DER certificate (\(error))") }
            }
        }
        options.anchorKind = trustCA.isEmpty ? .system : anchor
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
