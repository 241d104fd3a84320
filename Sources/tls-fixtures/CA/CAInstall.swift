import ArgumentParser
import Foundation
import TLSFixtures

/// `--system`, `--nss`, `--keychain`: which trust stores `ca install` and `ca uninstall` change. None is implied.
struct TrustStoreOptions: ParsableArguments {
    @Flag(help: "Linux's system store (update-ca-certificates or update-ca-trust): OpenSSL, curl, FoundationNetworking, Python, Node; needs root.")
    var system = false

    @Flag(help: "NSS databases: Chromium's ~/.pki/nssdb (made if missing) and every Firefox profile (needs certutil).")
    var nss = false

    @Flag(help: "The macOS login keychain, as a trusted root (security add-trusted-cert; macOS only).")
    var keychain = false

    @Flag(help: "A Java cacerts keystore, with keytool (--cacerts, else the JDK of JAVA_HOME or of the java on PATH).")
    var java = false

    @Option(help: ArgumentHelp("The Java keystore --java changes (store password changeit).", valueName: "file"))
    var cacerts: String?

    @Option(help: ArgumentHelp("Act on the system store under this folder instead of / (for packaging and tests).", valueName: "dir"))
    var trustRoot: String?

    var stores: [TrustStores.Store] {
        [(system, TrustStores.Store.system), (nss, .nss), (keychain, .keychain), (java, .java)].filter(\.0).map(\.1)
    }

    func validate() throws {
        if stores.isEmpty {
            throw CLIError("name the trust stores to change: --system (Linux, as root), --nss (Chromium, Firefox), --keychain (macOS), "
                + "--java (a JDK's cacerts); nothing is installed unless you ask")
        }
        if cacerts != nil && !java { throw CLIError("--cacerts names the keystore of --java; add --java") }
    }

    var trustStores: TrustStores {
        var environment = TrustStores.Environment.current(root: trustRoot.map { URL(fileURLWithPath: $0).standardizedFileURL })
        environment.javaCacerts = cacerts.map { URL(fileURLWithPath: $0).standardizedFileURL }
        return TrustStores(environment: environment)
    }
}

struct CAInstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Trust the built-in CA on this machine (mkcert -install), in the stores you name.",
        discussion: """
            Only when you run this, and only in the stores you name; `ca uninstall` takes it out again. The CA must \
            exist (`ca init`). Under sudo, name the store (--dir): sudo changes HOME, and with it the default store.

            Examples:
              sudo tls-fixtures ca install --system --dir ~/.local/share/swift-tls-fixtures
              tls-fixtures ca install --nss
              tls-fixtures ca install --keychain
              tls-fixtures ca install --java --cacerts ./cacerts
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var trust: TrustStoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try TrustAction.run(store: storeOptions.store, json: output.json) { ca, pem in
            try trust.trustStores.install(ca, pemFile: pem, into: trust.stores)
        }
    }
}

struct CAUninstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        abstract: "Take the built-in CA out of the trust stores you name (what `ca install` added).",
        discussion: "Removes this CA's own entries only: its file in the system store, its nickname in NSS, its keychain item."
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var trust: TrustStoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try TrustAction.run(store: storeOptions.store, json: output.json) { ca, pem in
            try trust.trustStores.uninstall(ca, pemFile: pem, from: trust.stores)
        }
    }
}

/// What `ca install` and `ca uninstall` share: the CLI's words for a refusal, and the report.
enum TrustAction {
    /// The store's CA (refused when there is none) into or out of the stores, `change` says which; then the report.
    static func run(store: CertificateStore, json: Bool,
                    _ change: (Certificate, URL) throws -> [TrustStores.Outcome]) throws {
        guard let ca = try store.existingCA() else { throw PKIError.noCA(path: store.directory.path) }
        let outcomes = try translating(store) { try change(ca.certificate, store.certificatePath(.root)) }
        try report(outcomes, certificate: ca.certificate, json: json)
    }

    static func translating<T>(_ store: CertificateStore, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PKIError where error.code == .trustStoreUnavailable && error.subject == "system"
                                                                  && error.reason.hasPrefix("cannot write") {
            throw CLIError("\(error.reason): the system store belongs to root; run it with sudo, naming the CA's store "
                + "(sudo changes HOME): sudo tls-fixtures ca install --system --dir '\(store.directory.path)'",
                code: error.code.description)
        }
    }

    static func report(_ outcomes: [TrustStores.Outcome], certificate: Certificate, json: Bool) throws {
        if json {
            try Output.json(TrustReport(certificate: certificate.subject, sha256Fingerprint: certificate.sha256Fingerprint.hexString,
                                        stores: outcomes))
            return
        }
        for outcome in outcomes { print("\(outcome.store.rawValue): \(outcome.action) — \(outcome.location)") }
        if outcomes.isEmpty { print("nothing to do: no such store on this machine") }
    }
}

/// `ca install --json` and `ca uninstall --json`.
struct TrustReport: Encodable {
    var certificate: String
    var sha256Fingerprint: String
    var stores: [TrustStores.Outcome]
}
