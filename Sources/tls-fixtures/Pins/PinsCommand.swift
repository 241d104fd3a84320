import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

struct PinsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pins",
        abstract: "Pins for your app: NSPinnedDomains, .cer files, with --domain TrustKit, with --android a pin-set "
            + "and OkHttp's pinner.",
        discussion: """
            Without a scenario: the published pins every pinning scenario is judged against — the `pinned` leaf key, \
            the built-in CA, and a backup key no server uses (TrustKit requires two pins). With a scenario: that \
            fixture's own leaf instead. The DER .cer files (CA and leaf) are written to the store's exports/ folder \
            for AFNetworking/Alamofire bundles. For a scenario that demands a client \
            certificate (client-cert-required), also the client identity: its certificate and key files and a .p12 \
            of both (exports/client.p12).

            TrustKit refuses names outside the public suffix list, NAME.fixtures.test among them, so its configuration \
            comes with --domain only (the domain `serve --domain` serves): then both configurations are for \
            NAME.DOMAIN and the leaf .cer is the one that names it.

            With --android: a Network Security Config <pin-set> (with the backup pin and an expiration) and OkHttp's \
            CertificatePinner, for the same keys. Both pass on any one pin of the chain, so they pin the leaf key and \
            the backup, not the CA: a new leaf key from the CA (pin-rotated-key) is then refused, as on iOS.

            A revocation scenario's leaf names the OCSP responder and CRL of the `serve` it is served by: give the \
            same --port-base as that `serve`, so the leaf .cer and the URLs printed are the ones it presents.
            """
    )

    @Argument(help: ArgumentHelp("A scenario.", valueName: "scenario"))
    var scenario: String = "pinned"

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Pins for NAME.DOMAIN, as `serve --domain DOMAIN` serves it: a name TrustKit accepts (it refuses .test).",
        valueName: "domain"))
    var domain: String?

    @Option(help: ArgumentHelp(
        "The --port-base of the `serve` the pins are for: a revocation scenario's leaf names its OCSP responder and CRL there.",
        valueName: "port"))
    var portBase = ScenarioCatalog.defaultPortBase

    @Flag(help: ArgumentHelp("Android's formats instead: a Network Security Config <pin-set> and OkHttp's "
                             + "CertificatePinner, for the same keys."))
    var android = false

    @Option(help: ArgumentHelp("With --android: the pin-set's expiration (yyyy-MM-dd). Default: a year from today.",
                               valueName: "day"))
    var expiration: String?

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var source: ScenarioSourceOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        let catalog = try FlagHints.translating { try source.catalog() }
        _ = try FlagHints.translating { try catalog.scenario(named: scenario) }
        _ = try FlagHints.translating { try FixtureDomains.normalize(domain.map { [$0] } ?? []) }
        try PortBaseOption.check(portBase, catalog: catalog)
        if expiration != nil && !android { throw ValidationError("--expiration is for --android's pin-set") }
        _ = try expirationDay()
    }

    func expirationDay() throws -> NSCDay {
        guard let expiration else { return NSCPinFormats.defaultExpiration(from: NSCDay(Date(), timeZone: .current)) }
        guard let day = NSCDay(parsing: expiration) else {
            throw ValidationError("--expiration \(expiration) is not a day written yyyy-MM-dd")
        }
        return day
    }

    func run() async throws {
        let store = storeOptions.store
        let domains = try FixtureDomains.normalize(domain.map { [$0] } ?? [])
        if !domains.isEmpty { try FixtureDomains.requirePermitted(domains, by: try store.ca().certificate) }
        let prepared = try store.prepare(try source.catalog().scenario(named: scenario), domains: domains,
                                         revocationEndpoints: .serve(portBase: portBase))
        var material = try store.pinMaterial(for: prepared)
        // The name the app connects by, and the name its pinning configuration must carry.
        if let first = domains.first { material.domain = "\(prepared.scenario.name).\(first)" }
        if android {
            try printAndroid(material)
            return
        }
        if output.json { try Output.json(material); return }
        print("Pins for \(material.domain) (sha256/ base64 of the DER SubjectPublicKeyInfo):")
        print("  leaf    sha256/\(material.leaf)")
        print("  CA      sha256/\(material.ca)")
        print("  backup  sha256/\(material.backup)   (no server uses this key)")
        print("\nNSPinnedDomains (Info.plist, iOS 14+):\n")
        print(try PinFormats.pinnedDomainsPlistXML(material.pinSet))
        print("\nTrustKit:\n")
        if domains.isEmpty {
            // A configuration for this name would only be refused at TrustKit's start: say how to get one it takes.
            let command = "tls-fixtures pins \(scenario) --domain DOMAIN\(storeOptions.dirArgument)"
            print("TrustKit refuses \(material.domain): .test is not on the public suffix list. Serve the fixtures under a "
                  + "domain of your own (`serve --domain DOMAIN`) and run `\(command)` for its configuration.")
        } else {
            print(try PinFormats.trustKitSwift(material.pinSet))
        }
        print("\nCertificates for AFNetworking / Alamofire bundles (DER):")
        print("  \(material.caCertificateFile)")
        print("  \(material.leafCertificateFile)")
        if let revocation = material.revocation {
            print("\nRevocation (this leaf is served by `tls-fixtures serve` with the URLs below; in tests withFixture names its own):")
            if let sources = material.revocationSources {
                for url in sources.ocsp { print("  OCSP responder   \(url)") }
                for url in sources.crl { print("  CRL              \(url)") }
                if sources.mustStaple { print("  TLS Feature      status_request (must-staple)") }
            }
            print("  openssl ocsp     \(revocation.ocsp);  openssl verify -crl_check: \(revocation.crl);  stapled: \(revocation.staple)")
            print("  Apple (default)  \(revocation.apple)")
            print("  Apple + SecPolicyCreateRevocation / RevocationTrustEvaluator: \(revocation.appleWithRevocationPolicy)")
        }
        if let identity = material.clientIdentity {
            print("\nClient identity this scenario demands:")
            print("  certificate  \(identity.certificateFile)")
            print("  key          \(identity.keyFile)")
            print("  PKCS#12      \(identity.pkcs12File)   (password \"\(identity.pkcs12Password)\"; SecPKCS12Import, curl --cert-type P12)")
        }
    }

    /// `--android`: the leaf and backup pins as a `<pin-set>` and a `CertificatePinner`, and the CA for res/raw.
    func printAndroid(_ material: PinMaterial) throws {
        let report = AndroidPinReport(material, expiration: try expirationDay())
        if output.json {
            try Output.json(report)
            return
        }
        print("Pins for \(report.domain) (sha256/ base64 of the DER SubjectPublicKeyInfo):")
        print("  leaf    sha256/\(report.leaf)")
        print("  backup  sha256/\(report.backup)   (no server uses this key)")
        print("  CA      sha256/\(report.ca)   (not pinned below: Android passes on any one pin of the chain, so a "
              + "new leaf key from this CA would pass)")
        print("\nNetwork Security Config (res/xml/network_security_config.xml, Android 7+; from the expiration day on "
              + "the pins are not enforced):\n")
        print(report.networkSecurityConfig)
        print("\nOkHttp (CertificatePinner checks after the handshake; it has no expiration):\n")
        print(report.okHttpCertificatePinner)
        print("\nTrust the kit's CA in the app: copy \(report.caCertificateFile) to "
              + "app/src/main/res/raw/tls_fixtures_ca.cer and add <certificates src=\"@raw/tls_fixtures_ca\"/> to "
              + "the domain-config's <trust-anchors> (docs/android.md).")
    }
}
