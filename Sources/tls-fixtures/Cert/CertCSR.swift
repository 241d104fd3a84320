import ArgumentParser
import Foundation
import TLSFixtures

struct CertCSR: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "csr",
        abstract: "Make a certificate signing request and its key, to be signed elsewhere "
            + "(step certificate create --csr).",
        discussion: """
            Writes the request (PEM) to --out and a new private key (PEM, 0600) to --key-out, or signs the request \
            with a key you have (--use-key). Nothing is kept in the store. `cert issue --csr FILE` signs it with the \
            built-in CA or one of yours.

            Example:
              tls-fixtures cert csr --host api.example.test --out api.csr --key-out api.key
            """
    )

    @Option(name: .long, parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Subject alternative name: a DNS name or an IP address (repeatable).",
                               valueName: "host"))
    var host: [String] = []

    @Option(parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Email address subjectAltName (repeatable).", valueName: "address"))
    var email: [String] = []

    @Option(parsing: .unconditionalSingleValue,
            help: ArgumentHelp("URI subjectAltName (repeatable).", valueName: "uri"))
    var uri: [String] = []

    @Option(help: ArgumentHelp("Subject common name (default: the first --host).", valueName: "cn"))
    var cn: String?

    @Option(help: ArgumentHelp("Subject organization (default: none).", valueName: "org"))
    var org: String?

    @Option(help: ArgumentHelp("Key to make: rsa:BITS, an EC curve or ed25519 (default ec:p256).", valueName: "spec"))
    var key: KeySpec?

    @Option(help: ArgumentHelp("Sign the request with this private key (PEM) instead of making one.",
                               valueName: "file"))
    var useKey: String?

    @Option(help: ArgumentHelp("Write the request (PEM) here.", valueName: "file"))
    var out: String

    @Option(help: ArgumentHelp("Write the new private key (PEM, 0600) here.", valueName: "file"))
    var keyOut: String?

    @Flag(help: "Replace different existing files.")
    var force = false

    func validate() throws {
        if useKey != nil && (keyOut != nil || key != nil) {
            throw CLIError("--use-key and \(keyOut != nil ? "--key-out" : "--key"): --use-key brings the key; give one")
        }
        if useKey == nil && keyOut == nil {
            throw CLIError("say where the new key goes (--key-out FILE), or sign with yours (--use-key FILE)")
        }
        if out == keyOut { throw CLIError("--out and --key-out both name \(out); give each file once") }
        _ = try FlagHints.translating { try request().profile() }
    }

    private func request() throws -> CertificateRequest {
        var request = CertificateRequest(name: "csr")
        request.hosts = host
        request.emails = email
        request.uris = uri
        request.commonName = cn
        request.organization = org
        // A request names what it is for; its usages are the signer's to decide.
        request.extendedKeyUsage = host.isEmpty && email.isEmpty && uri.isEmpty ? [.clientAuth] : [.serverAuth]
        return request
    }

    func run() async throws {
        let request = try FlagHints.translating { try self.request() }
        let privateKey: PrivateKey
        if let useKey {
            do {
                privateKey = try PrivateKey(pem: try FlagHints.read(useKey, flag: "--use-key"))
            } catch let error as OpenSSLError {
                throw CLIError("--use-key \(useKey): \(error)")
            }
        } else {
            privateKey = try (key ?? .ec(.p256)).generate()
        }
        let csr = try FlagHints.translating { try request.signingRequest(key: privateKey) }
        var files: [(Data, String, mode_t, String)] = [(csr, out, 0o644, "--out")]
        if let keyOut { files.append((try privateKey.pem, keyOut, 0o600, "--key-out")) }
        // Every file is checked before one is written.
        for (data, path, _, option) in files {
            try outputs(option) {
                try ExportWriter.checkReplaceable(path: URL(fileURLWithPath: path), data: data, force: force)
            }
        }
        for (data, path, mode, option) in files {
            try outputs(option) {
                try ExportWriter.write(data, to: URL(fileURLWithPath: path), mode: mode, force: true)
            }
            let kind = option == "--out" ? "certificate signing request (PEM)" : "private key (PEM, PKCS#8)"
            print("Wrote \(path) — \(kind)")
        }
    }

    private func outputs(_ option: String, _ body: () throws -> Void) throws {
        do { try body() } catch let error as PKIError where [.outputUnavailable, .fileExists].contains(error.code) {
            let fix = error.code == .fileExists ? "pass --force to replace it" : error.fix ?? ""
            throw CLIError("\(option): \(error.reason); \(fix)",
                           code: error.code.description)
        }
    }
}
