import ArgumentParser
import Foundation
import TLSFixtures

struct CertIssue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issue",
        abstract: "Issue a certificate from the built-in CA (or self-signed) with every knob exposed.",
        discussion: """
            The certificate and its key are kept in the store under NAME and reused while nothing you pass changes; \
            --out-dir also writes NAME.pem (chain), NAME.key (0600), NAME.cer (DER) and NAME.p12 (password \
            "\(PKCS12Export.defaultPassword)"), refusing to replace different existing files without --force.

            Examples:
              tls-fixtures cert issue --name api --host api.example.test --host 127.0.0.1
              tls-fixtures cert issue --name weak --host localhost --key rsa:1024 --digest sha1
              tls-fixtures cert issue --name old --host localhost --not-before 2020-01-01 --not-after 2021-01-01
              tls-fixtures cert issue --name old2 --host localhost --not-before -10 --not-after -1
              tls-fixtures cert issue --name client --cn "Test Client" --eku clientAuth --issuer client-ca

            A certificate for a server (any --eku that includes serverAuth, the default) needs a --host; a client \
            certificate (--eku clientAuth) or a CA (--ca) does not, and takes --cn (default: NAME). A --host outside \
            the issuing CA's name constraints is issued with a one-line warning: clients that enforce them refuse it.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "Name in the store (lowercase letters, digits, - _ .).")
    var name: String

    @Option(name: .long, help: ArgumentHelp("Subject alternative name: a DNS name or an IP address (repeatable).", valueName: "host"))
    var host: [String] = []

    @Option(help: ArgumentHelp("Key: rsa:BITS (BITS from 512 to 8192), an EC curve or ed25519.", valueName: "spec"))
    var key: KeySpec = .ec(.p256)

    @Option(help: ArgumentHelp("Reuse the key of another certificate in the store (same SPKI pin).", valueName: "name"))
    var reuseKeyOf: String?

    @Option(help: ArgumentHelp("Signature digest.", valueName: "digest"))
    var digest: SignatureDigest = .sha256

    @Option(help: ArgumentHelp("Validity in days, starting one day ago.", valueName: "n"))
    var days: Int?

    // `.unconditional`: the value may start with "-" (`--not-before -10`), which the parser would otherwise take for an
    // option and refuse, accepting only `--not-before=-10`.
    @Option(parsing: .unconditional, help: ArgumentHelp("Start of validity: days from now (may be negative) or an ISO 8601 date.", valueName: "when"))
    var notBefore: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("End of validity: days from now (negative = already expired) or an ISO 8601 date.", valueName: "when"))
    var notAfter: String?

    @Option(help: ArgumentHelp("Extended key usage (repeatable or comma-separated): serverAuth, clientAuth, both, none, …", valueName: "usage"))
    var eku: [String] = []

    @Option(help: ArgumentHelp("Key usage (repeatable): digitalSignature, keyEncipherment, keyCertSign, …, or none.", valueName: "usage"))
    var keyUsage: [String] = []

    @Option(help: ArgumentHelp("Subject common name (default: the first --host).", valueName: "cn"))
    var cn: String?

    @Flag(help: "Leave the common name out of the subject.")
    var noCn = false

    @Option(help: ArgumentHelp("Subject organization.", valueName: "org"))
    var org = "swift-tls-fixtures"

    @Flag(help: "Leave the subjectAltName extension out (CN only).")
    var noSan = false

    @Flag(help: "Make a CA certificate (basicConstraints CA:TRUE).")
    var ca = false

    @Option(help: ArgumentHelp("Path length constraint of a CA certificate.", valueName: "n"))
    var pathLen: Int?

    @Option(help: ArgumentHelp("Permitted name constraint on a CA: a DNS name (covers every name under it, no leading dot) or a CIDR block (repeatable).", valueName: "name"))
    var permit: [String] = []

    @Option(help: ArgumentHelp("Excluded name constraint on a CA (repeatable).", valueName: "name"))
    var exclude: [String] = []

    @Option(help: ArgumentHelp("Signer: self or a built-in authority.", valueName: "issuer"))
    var issuer: LeafIssuer = .authority(.root)

    @Flag(help: "Self-signed (same as --issuer self).")
    var selfSigned = false

    @Option(help: ArgumentHelp("Also write NAME.pem, NAME.key, NAME.cer and NAME.p12 here.", valueName: "dir"))
    var outDir: String?

    @Flag(help: "Replace different existing files in --out-dir, and allow --name to be a built-in scenario's.")
    var force = false

    func validate() throws {
        // ArgumentParser wraps what validate() throws, so the flags go into library errors here rather than in main.
        try FlagHints.translating {
            if !force { try ScenarioCatalog.builtIn.requireFreeCertificateName(name) }
            _ = try request().profile()
        }
    }

    func request() throws -> CertificateRequest {
        var request = CertificateRequest(name: name)
        request.hosts = host
        request.key = key
        request.keyName = reuseKeyOf
        request.digest = digest
        if days != nil && (notBefore != nil || notAfter != nil) {
            throw CLIError("give either --days or --not-before/--not-after, not both")
        }
        if let days {
            guard days > 0 else { throw CLIError("--days must be positive; for an expired certificate use --not-after -1") }
            guard days <= Moment.maximumDays else { throw CLIError("--days is at most \(Moment.maximumDays) (100 years), not \(days)") }
            request.validity = .days(days)
        } else if notBefore != nil || notAfter != nil {
            request.validity = Validity(notBefore: try notBefore.map(Moment.init(parsing:)) ?? .daysFromNow(-1),
                                        notAfter: try notAfter.map(Moment.init(parsing:)) ?? .daysFromNow(396))
            try request.validity.notBefore.check("--not-before")
            try request.validity.notAfter.check("--not-after")
        }
        if !eku.isEmpty { request.extendedKeyUsage = try CertificateRequest.parseExtendedKeyUsage(eku) }
        if ca && eku.isEmpty { request.extendedKeyUsage = nil }
        request.keyUsage = try CertificateRequest.parseKeyUsage(keyUsage)
        request.commonName = cn
        request.omitCommonName = noCn
        request.organization = org.isEmpty ? nil : org
        request.omitSubjectAltNames = noSan
        request.isCA = ca
        request.pathLength = pathLen
        request.permitted = permit
        request.excluded = exclude
        request.issuer = selfSigned ? .selfSigned : issuer
        return request
    }

    func run() async throws {
        let store = storeOptions.store
        if let outDir {
            do { try store.requireOutside(URL(fileURLWithPath: outDir)) } catch let error as PKIError { throw CLIError("--out-dir \(error)") }
        }
        let keysBefore = PrivateKey.generatedCount
        let issuedBefore = CertificateStore.issuedCount
        let request = try self.request()
        if case .authority(let id) = request.issuer {
            // Issued all the same (a certificate that breaks its CA's constraints is a legitimate fixture), but said.
            for violation in request.nameConstraintViolations(issuer: try store.authority(id)) {
                FileHandle.standardError.write(Data("warning: \(violation); use a name under one of them, or issue from a CA made with `ca init --no-name-constraints`\n".utf8))
            }
        }
        let credential = try store.issue(request)
        var written: [ExportWriter.Written] = []
        if let outDir {
            written = try ExportWriter.write(credential, name: name, to: URL(fileURLWithPath: outDir), force: force)
        }
        let report = IssueReport(
            name: name, storedAt: store.leafPath(name).path,
            keysGenerated: PrivateKey.generatedCount - keysBefore,
            certificatesIssued: CertificateStore.issuedCount - issuedBefore,
            summary: CertificateSummary(credential.certificate), files: written)
        if output.json { try Output.json(report); return }
        print(report.certificatesIssued == 0 ? "Reused \(name) (nothing changed)" : "Issued \(name)")
        print(report.summary.text)
        print("Stored: \(report.storedAt)")
        print("Keys generated: \(report.keysGenerated)")
        for file in written { print("Wrote \(file.path) — \(file.kind)") }
    }
}

struct IssueReport: Encodable {
    var name: String
    var storedAt: String
    var keysGenerated: Int
    var certificatesIssued: Int
    var summary: CertificateSummary
    var files: [ExportWriter.Written]
}
