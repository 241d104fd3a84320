import ArgumentParser
import Foundation
import TLSFixtures

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Connect with an OpenSSL client and report what the server negotiated and presented.",
        discussion: """
            Prints the protocol and cipher, the key exchange, the chain exactly as sent (subject, issuer, signature \
            algorithm, key), the verify result in OpenSSL's words (host checked, security level 2, purpose \
            sslserver), and whether a pin matched. The handshake itself accepts anything the linked OpenSSL can \
            speak, so weak servers are reported rather than refused; then a second handshake with the linked \
            OpenSSL's defaults (what curl, openssl s_client, Python and Node do unless told otherwise) says whether \
            a default client completes it, and why not (a SHA-1 handshake signature, a small DH group, no shared \
            suite, an oversized chain). --default-client makes the probe's own handshake that default client's. A \
            stapled OCSP answer and a NULL cipher (no encryption) are said too.

            Then it sends GET / and reads one HTTP/1.1 answer (Content-Length or chunked, interim 1xx answers \
            skipped), done at the answer's end even on a connection the server keeps open. A body over 1 MiB, an \
            answer cut short, a reset, or silence until --timeout is a one-line failure (exit 2).

            Exit status: 0 handshake done, certificate verified (and a pin matched, when --pin is given), and a \
            default client completes the handshake too; 2 handshake failed; 3 certificate not verified; 4 no pin \
            matched; 5 only the probe's permissive handshake completed: a default client refuses it; 1 errors (no \
            connection, a file that cannot be read, flags that do not fit together); 64 a flag or value the parser \
            does not take. When pins \
            are given and none matches, the HTTP request is not sent (as a pinning client would not send it), and the \
            report says so.

            Examples:
              tls-fixtures probe localhost:9810 --ca ~/.local/share/swift-tls-fixtures/ca/root.pem
              tls-fixtures probe https://tls-v1-0.fixtures.test:9810/ --resolve tls-v1-0.fixtures.test:9810:127.0.0.1 --tls-min 1.2
              tls-fixtures probe localhost:9838 --builtin-ca --pin sha256/BASE64= --pin sha256/BACKUP=
            """
    )

    @Argument(help: ArgumentHelp("HOST:PORT or an https:// (or http://) URL.", valueName: "target"))
    var target: String

    @Option(help: ArgumentHelp("Lowest protocol to offer.", valueName: "version"))
    var tlsMin = Spelled<TLSVersion>(.tls1_0)

    @Option(help: ArgumentHelp("Highest protocol to offer.", valueName: "version"))
    var tlsMax = Spelled<TLSVersion>(.tls1_3)

    @Option(help: ArgumentHelp("OpenSSL cipher string for TLS ≤ 1.2 (default: everything, NULL included).", valueName: "list"))
    var ciphers: String?

    @Option(help: ArgumentHelp("TLS 1.3 suites, colon-separated.", valueName: "list"))
    var tls13Suites: String?

    @Option(help: ArgumentHelp("Trust these roots (PEM or DER) instead of the system's (on macOS the Security framework's, with the Keychain's trust settings; elsewhere OpenSSL's default store).", valueName: "file"))
    var ca: String?

    @Flag(help: "Trust the built-in CA from the certificate store (--dir, $TLS_FIXTURES_CERTS or the default).")
    var builtinCA = false

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("SNI and the name to verify (default: the target host).", valueName: "name"))
    var servername: String?

    @Option(help: ArgumentHelp("Connect HOST:PORT to ADDRESS instead of resolving it, as curl does (repeatable).", valueName: "host:port:address"))
    var resolve: [String] = []

    @Option(help: ArgumentHelp("Client certificate (PEM, may include its chain).", valueName: "file"))
    var clientCert: String?

    @Option(help: ArgumentHelp("Private key for --client-cert (PEM).", valueName: "file"))
    var clientKey: String?

    @Option(help: ArgumentHelp("SPKI pin sha256/BASE64 (repeatable).", valueName: "pin"))
    var pin: [String] = []

    @Option(help: ArgumentHelp("How pins are checked: trustkit (default trust, then any chain certificate — TrustKit, Alamofire), leaf or ca (NSPinnedDomains).", valueName: "mode"))
    var pinMode: PinMode = .trustkit

    @Flag(help: "Do not send an HTTP request after the handshake.")
    var noHttp = false

    @Flag(help: "Handshake as a default client of the linked OpenSSL does (its suites, protocol floor, security level and chain-size limit), so weak servers fail as they do with curl.")
    var defaultClient = false

    @Option(help: ArgumentHelp("Seconds the whole probe may take (connect, handshake, HTTP answer), however slowly the server sends.", valueName: "seconds"))
    var timeout: Double = 10

    @OptionGroup var output: OutputOptions

    func validate() throws {
        var probeTarget = try ProbeTarget(parsing: target)
        try probeTarget.apply(resolve: resolve)
        if tlsMin.value > tlsMax.value { throw CLIError("--tls-min \(tlsMin.value.word) is above --tls-max \(tlsMax.value.word)") }
        if (clientCert == nil) != (clientKey == nil) { throw CLIError("--client-cert and --client-key go together") }
        // Before connecting: a pair that does not match is the user's mistake, not the server's refusal.
        _ = try clientCredential()
        if ca != nil && builtinCA { throw CLIError("--ca and --builtin-ca each choose the trusted roots; give one") }
        _ = try pin.map(SPKIPin.parse)
        _ = try SecondsOption.check(timeout, "--timeout")
        if defaultClient && (ciphers != nil || tls13Suites != nil || tlsMin.value != .tls1_0 || tlsMax.value != .tls1_3) {
            throw CLIError("--default-client uses the linked OpenSSL's own protocols and suites; leave out --tls-min, --tls-max, --ciphers and --tls13-suites")
        }
    }

    func run() async throws {
        var probeTarget = try ProbeTarget(parsing: target)
        try probeTarget.apply(resolve: resolve)
        var options = ProbeOptions()
        options.minVersion = tlsMin.value
        options.maxVersion = tlsMax.value
        if let ciphers { options.ciphers = ciphers }
        options.tls13Suites = tls13Suites
        options.serverName = servername
        options.timeout = timeout
        options.sendHTTPRequest = !noHttp
        options.handshake = defaultClient ? .defaultClient : .permissive
        options.checkDefaultClient = true
        if let ca { options.trustRoots = try readCertificates(ca, "--ca") }
        if builtinCA {
            // Never make a CA here: a new one would trust nothing the fixtures serve.
            let store = storeOptions.store
            guard let root = try store.existingCA() else { throw PKIError.noCA(path: store.directory.path) }
            options.trustRoots = [root.certificate]
        }
        options.clientCredential = try clientCredential()
        let host = servername ?? probeTarget.host
        let pinList = try pin.map(SPKIPin.parse)
        let policy: PinPolicy? = pinList.isEmpty ? nil : PinPolicy(pinMode.rule(pinList))
        if let policy {
            // As a pinning client does: a connection whose pins fail carries no request.
            options.beforeHTTPRequest = { result in
                let outcome = policy.evaluate(host: host, presentedChain: result.presentedChain, trust: result.trust)
                return outcome.matched ? nil : "no pin matched, so the request was not sent"
            }
        }
        let result = try await TLSProbe(options: options).probe(probeTarget)
        let pinOutcome = policy?.evaluate(host: host, presentedChain: result.presentedChain, trust: result.trust)
        if output.json {
            try Output.json(ProbeJSON(result: result, pins: pinOutcome.map { PinJSON(matched: $0.matched, reason: $0.reason) }))
        } else {
            print(ProbeReport.text(result, pins: pinOutcome))
        }
        if !result.succeeded { throw ExitCode(2) }
        if probeTarget.scheme == "https" && result.verification?.error != nil { throw ExitCode(3) }
        if let pinOutcome, !pinOutcome.matched { throw ExitCode(4) }
        if result.defaultClient?.outcome == "refuses" { throw ExitCode(5) }
    }

    /// `--client-cert` and `--client-key` read and checked to be one pair; nil without them.
    private func clientCredential() throws -> Credential? {
        guard let clientCert, let clientKey else { return nil }
        let chain = try readCertificates(clientCert, "--client-cert")
        let key: PrivateKey
        do { key = try PrivateKey(pem: try FlagHints.read(clientKey, flag: "--client-key")) } catch let error as OpenSSLError {
            throw CLIError("--client-key \(clientKey): \(error)")
        }
        guard key.matches(chain[0]) else {
            throw CLIError("--client-key \(clientKey) is not the key of --client-cert \(clientCert)'s certificate; give the key "
                           + "that certificate was issued for")
        }
        return Credential(certificate: chain[0], privateKey: key, intermediates: Array(chain.dropFirst()), root: chain.last!)
    }

    private func readCertificates(_ path: String, _ option: String) throws -> [Certificate] {
        let data = try FlagHints.read(path, flag: option)
        let certificates: [Certificate]
        do { certificates = try Certificate.read(data) } catch { throw CLIError("\(option) \(path) is not a PEM or DER certificate (\(error))") }
        guard !certificates.isEmpty else { throw CLIError("\(option) \(path) contains no certificate") }
        return certificates
    }
}

struct PinJSON: Encodable {
    var matched: Bool
    var reason: String
}

/// `probe --json`: the library's result, and the pin verdict (null without --pin).
struct ProbeJSON: Encodable {
    var result: ProbeResult
    var pins: PinJSON?

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(result, forKey: .result)
        try c.encode(pins, forKey: .pins)
    }

    enum CodingKeys: String, CodingKey { case result, pins }
}
