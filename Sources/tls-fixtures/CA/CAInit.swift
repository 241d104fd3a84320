import ArgumentParser
import Foundation
import TLSFixtures

struct CAInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the built-in CA (once: an existing CA is kept).",
        discussion: """
            Refuses when a CA already exists, because devices trust it and apps pin it. --force replaces it; the old \
            files are moved to a new ca/replaced-DATE/ in the store (replaced-DATE-2/ for a second one in the same \
            second), never deleted or overwritten, and every certificate it signed is \
            re-issued on next use. --if-missing keeps an existing CA and exits 0, showing it as `ca show` does (for scripts and CI).

            --domain adds a domain of your own to the names the CA may sign for (it then permits every name under it), \
            for `serve --domain`: a public suffix TrustKit accepts, resolved by the runner's proxy, no DNS record needed.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("Root key: rsa:BITS (BITS from 2048 to 8192; 512 up with --allow-weak-key), an EC curve or ed25519.", valueName: "spec"))
    var key: KeySpec = .ec(.p256)

    @Option(help: "Common name of the root (default: swift-tls-fixtures CA USER@HOST).")
    var name: String?

    // `.unconditional`: `--days -5` reaches the check below instead of being taken for an option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Validity of the root in days (at least \(CAOptions.minimumDays): it starts a day back).", valueName: "n"))
    var days = 3650

    @Flag(help: "Do not restrict the CA to localhost and reserved test names (it could then vouch for any site).")
    var noNameConstraints = false

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Also permit this domain and every name under it (repeatable), for `serve --domain`.", valueName: "domain"))
    var domains: [String] = []

    @Flag(help: ArgumentHelp("Make the CA even with a key default clients refuse (RSA below \(CAOptions.minimumRSABits) bits): "
                             + "every certificate it signs then fails in curl, Python and Node with \"CA certificate key too weak\"."))
    var allowWeakKey = false

    @Flag(help: "Replace an existing CA (moved aside, not deleted).")
    var force = false

    @Flag(help: "Exit successfully, changing nothing, when a CA already exists.")
    var ifMissing = false

    func validate() throws {
        guard days >= CAOptions.minimumDays else {
            throw CLIError("--days \(days) would make a CA that is expired as it is made (its validity starts a day back); "
                + "give at least \(CAOptions.minimumDays), or leave it out for 3650")
        }
        guard days <= Moment.maximumDays else { throw CLIError("--days is at most \(Moment.maximumDays) (100 years), not \(days)") }
        if force && ifMissing { throw CLIError("--force and --if-missing contradict each other; pick one") }
        if noNameConstraints && !domains.isEmpty {
            throw CLIError("--domain adds to the CA's name constraints; with --no-name-constraints it already permits every name, so leave one out")
        }
        _ = try FlagHints.translating { try FixtureDomains.normalize(domains) }
        // Before any store is touched: `--if-missing` with a weak key is refused too, as the key would be if made.
        try FlagHints.translating { try caOptions().check() }
    }

    private func caOptions() throws -> CAOptions {
        var options = CAOptions(key: key, commonName: name ?? CertificateAuthority.defaultCommonName,
                                nameConstraints: !noNameConstraints, days: days, permittedDomains: try FixtureDomains.normalize(domains))
        options.allowWeakKey = allowWeakKey
        return options
    }

    func run() async throws {
        let store = storeOptions.store
        let options = try caOptions()
        let replacing = force ? try? store.existingCA() : nil
        let (ca, created) = try store.initializeCA(options, ifExists: force ? .replace : ifMissing ? .keep : .refuse)
        // --if-missing with --domain: the CA that was kept must permit the domains, or `serve --domain` would fail later.
        if !created { try FixtureDomains.requirePermitted(options.permittedDomains, by: ca.certificate) }
        if created, let old = replacing {
            Output.error("""
                warning: replaced the CA \(old.certificate.subject) (SHA-256 \(old.certificate.sha256Fingerprint.colonHex)); \
                its files are in \(store.retiredFolder(of: old.certificate)?.path ?? "\(store.directory.path)/ca/replaced-*")/. \
                Devices and simulators that trust it keep trusting \
                it until you remove it, and need the new one installed; apps that pin its key must pin the new one.
                """)
        }
        // A CA kept as it was is warned about as it is read (the store says so); a new one here.
        if created, let expiring = ca.expiryWarning(name: "the new CA", store: store.directory.path) {
            Output.error("warning: \(expiring)")
        }
        if created, let weak = ca.weakKeyWarning(name: "the new CA", store: store.directory.path) {
            Output.error("warning: \(weak)")
        }
        if created && noNameConstraints {
            Output.error("warning: this CA has no name constraints: a device that trusts it will accept its certificates for any site")
        }
        try report(ca, store: store, created: created)
    }

    private func report(_ ca: CertificateAuthority, store: CertificateStore, created: Bool) throws {
        let path = store.certificatePath(.root).path
        if output.json {
            try Output.json(CAReport(created: created, store: store.directory.path, certificate: path,
                                     summary: CertificateSummary(ca.certificate),
                                     warnings: ca.expiryWarning(store: store.directory.path).map { [$0] } ?? []))
            return
        }
        print(created ? "Created the built-in CA in \(store.directory.path)" : "The built-in CA already exists in \(store.directory.path)")
        print(CertificateSummary(ca.certificate).text)
        print("")
        print(TrustInstructions.text(rootPEM: path, dirArgument: storeOptions.dirArgument))
    }
}

/// `ca init --json` and `ca show --json`.
struct CAReport: Encodable {
    /// Whether this command made it (`ca show`: always false).
    var created: Bool
    var store: String
    /// The CA certificate's file (PEM).
    var certificate: String
    var summary: CertificateSummary
    /// What the user should act on (an older CA's constraints, a CA expired or expiring); empty when nothing.
    var warnings: [String]
}
