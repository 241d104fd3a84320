import ArgumentParser
import Foundation
import TLSFixtures

struct CertIssue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issue",
        abstract: "Issue a certificate from the built-in CA, a CA of your own, or self-signed, with every knob exposed.",
        discussion: """
            The certificate and its key are kept in the store under NAME and reused while nothing you pass changes; \
            --out-dir also writes NAME.pem (chain), NAME.key (0600), NAME.cer (DER) and NAME.p12 (password \
            "\(PKCS12Export.defaultPassword)", or --p12-password); --cert-file, --leaf-file (the certificate without \
            the chain), --key-file, --p12-file and --bundle-file (key and chain in one PEM) write files named as you like, in folders that exist (--out-dir's folder is made if missing). \
            Every destination is checked before anything is written, so a \
            refusal (a different existing file without --force, a folder you cannot write to) changes neither the store \
            nor your files.

            Examples:
              tls-fixtures cert issue --name api --host api.example.test --host 127.0.0.1
              tls-fixtures cert issue --name weak --host localhost --key rsa:1024 --digest sha1
              tls-fixtures cert issue --name old --host localhost --not-before 2020-01-01 --not-after 2021-01-01
              tls-fixtures cert issue --name old2 --host localhost --not-before -10 --not-after -1
              tls-fixtures cert issue --name my-client --cn "Test Client" --eku clientAuth --issuer client-ca
              tls-fixtures cert issue --name team-ca --ca --cn "Team CA" --permit team.test
              tls-fixtures cert issue --name svc --host svc.team.test --issuer team-ca --cert-file svc.crt --key-file svc.key
              tls-fixtures cert issue --name web --csr web.csr --cert-file web.crt
              tls-fixtures cert issue --name stapled --host a.test --ocsp-url http://127.0.0.1:9898/ --must-staple

            A certificate for a server (any --eku that includes serverAuth, the default) needs a --host (or an \
            --email or --uri); a client certificate (--eku clientAuth) or a CA (--ca) does not, and takes --cn \
            (default: NAME). A name in Unicode is written as its IDNA A-label (bücher.test → xn--bcher-kva.test). \
            A --host outside the issuing CA's name constraints is issued with a one-line warning: clients that \
            enforce them refuse it.

            --issuer takes self, a built-in authority, or the NAME of a CA you issued with --ca; --issuer-cert and \
            --issuer-key sign with a CA from files. --csr signs a certificate signing request: the key is the \
            requester's, so nothing is kept in the store and only the certificate is written. NAMEs the store uses \
            for itself (every scenario's, client, backup, pinned) are refused without --force.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "Name in the store (lowercase letters, digits, - _ .).")
    var name: String

    // `.unconditional` on the options below: a value may start with "-" (`--not-before -10`, or a mistyped `--host -a`),
    // which the parser would otherwise take for an option and report as a missing value.
    @Option(name: .long, parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Subject alternative name: a DNS name (Unicode is written as IDNA) or an IP address (repeatable).", valueName: "host"))
    var host: [String] = []

    @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("Email address subjectAltName (repeatable).", valueName: "address"))
    var email: [String] = []

    @Option(parsing: .unconditionalSingleValue, help: ArgumentHelp("URI subjectAltName, such as a SPIFFE ID (repeatable).", valueName: "uri"))
    var uri: [String] = []

    @Option(help: ArgumentHelp("Key: rsa:BITS (BITS from 512 to 8192), an EC curve or ed25519 (default ec:p256).", valueName: "spec"))
    var key: KeySpec?

    @Option(help: ArgumentHelp("Reuse the key of another certificate in the store (same SPKI pin).", valueName: "name"))
    var reuseKeyOf: String?

    @Option(help: ArgumentHelp("Use this private key (PEM, unencrypted) instead of one the store makes; it is not copied into the store.", valueName: "file"))
    var useKey: String?

    @Option(help: ArgumentHelp("Sign this certificate signing request (PEM or DER) instead of making a key.", valueName: "file"))
    var csr: String?

    @Option(help: ArgumentHelp("Signature digest.", valueName: "digest"))
    var digest: SignatureDigest = .sha256

    @Option(parsing: .unconditional, help: ArgumentHelp("Validity in days, starting one day ago.", valueName: "n"))
    var days: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Start of validity: days from now (may be negative), a duration (-1h, 30m) or an ISO 8601 date.", valueName: "when"))
    var notBefore: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("End of validity: days from now (negative = already expired), a duration (2h, 90m) or an ISO 8601 date.", valueName: "when"))
    var notAfter: String?

    @Option(help: ArgumentHelp("Serial number: decimal, or hex as 0x04d2 or 04:d2 (default: random).", valueName: "n"))
    var serial: String?

    @Option(help: ArgumentHelp("Extended key usage (repeatable or comma-separated): serverAuth, clientAuth, both, none, …", valueName: "usage"))
    var eku: [String] = []

    @Option(help: ArgumentHelp("Key usage (repeatable): digitalSignature, keyEncipherment, keyCertSign, …, or none.", valueName: "usage"))
    var keyUsage: [String] = []

    @Option(help: ArgumentHelp("Subject common name (default: the first --host).", valueName: "cn"))
    var cn: String?

    @Flag(help: "Leave the common name out of the subject.")
    var noCn = false

    @Option(help: ArgumentHelp("Subject organization (default: swift-tls-fixtures; \"\" for none).", valueName: "org"))
    var org: String?

    @Option(help: ArgumentHelp("Subject organizational unit.", valueName: "ou"))
    var ou: String?

    @Option(help: ArgumentHelp("Subject country: two capital letters (ISO 3166).", valueName: "cc"))
    var country: String?

    @Option(help: ArgumentHelp("Subject state or province.", valueName: "st"))
    var state: String?

    @Option(help: ArgumentHelp("Subject locality (city).", valueName: "l"))
    var locality: String?

    @Flag(help: "Leave the subjectAltName extension out (CN only).")
    var noSan = false

    @Option(help: ArgumentHelp("OCSP responder URL (authorityInfoAccess).", valueName: "url"))
    var ocspUrl: String?

    @Option(help: ArgumentHelp("CRL distribution point URL.", valueName: "url"))
    var crlUrl: String?

    @Option(help: ArgumentHelp("URL of the issuer's certificate (authorityInfoAccess caIssuers).", valueName: "url"))
    var caIssuersUrl: String?

    @Flag(help: "Add the TLS Feature extension asking for a stapled OCSP answer (must-staple, RFC 7633).")
    var mustStaple = false

    @Flag(help: "Make a CA certificate (basicConstraints CA:TRUE).")
    var ca = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Path length constraint of a CA certificate.", valueName: "n"))
    var pathLen: String?

    @Option(help: ArgumentHelp("Permitted name constraint on a CA: a DNS name (covers every name under it, no leading dot) or a CIDR block (repeatable).", valueName: "name"))
    var permit: [String] = []

    @Option(help: ArgumentHelp("Excluded name constraint on a CA (repeatable).", valueName: "name"))
    var exclude: [String] = []

    @Option(help: ArgumentHelp("Signer: self, a built-in authority (\(BuiltinAuthority.allCases.map(\.rawValue).joined(separator: ", "))) or the NAME of a CA issued with --ca (default root).", valueName: "issuer"))
    var issuer: String?

    @Option(help: ArgumentHelp("Sign with this CA certificate (PEM, may include the chain above it) …", valueName: "file"))
    var issuerCert: String?

    @Option(help: ArgumentHelp("… and this key (PEM, unencrypted).", valueName: "file"))
    var issuerKey: String?

    @Flag(help: "Self-signed (same as --issuer self).")
    var selfSigned = false

    @Option(help: ArgumentHelp("Also write NAME.pem, NAME.key, NAME.cer and NAME.p12 here (the folder is made if missing).", valueName: "dir"))
    var outDir: String?

    @Option(help: ArgumentHelp("Write the certificate chain (PEM) here.", valueName: "file"))
    var certFile: String?

    @Option(help: ArgumentHelp("Write the private key (PEM, 0600) here.", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("Write a PKCS#12 archive (key and chain, password --p12-password) here.", valueName: "file"))
    var p12File: String?

    @Option(help: ArgumentHelp("The password of the .p12 written (default \"\(PKCS12Export.defaultPassword)\"; mkcert uses changeit).", valueName: "password"))
    var p12Password: String?

    @Option(help: ArgumentHelp("Write the certificate alone (PEM, no chain: mkcert's and step's default) here.", valueName: "file"))
    var leafFile: String?

    @Option(help: ArgumentHelp("Write the private key and the chain in one PEM file (0600) here.", valueName: "file"))
    var bundleFile: String?

    @Flag(help: "Replace different existing output files, and allow --name (or --reuse-key-of) to be one the store uses itself.")
    var force = false

    func validate() throws {
        // ArgumentParser wraps what validate() throws, so the flags go into library errors here rather than in main.
        try FlagHints.translating {
            try ScenarioCatalog.builtIn.requireFreeCertificateName(name, overriding: force)
            if let reuseKeyOf {
                do { try ScenarioCatalog.builtIn.requireFreeCertificateName(reuseKeyOf, overriding: force) } catch {
                    let reason = (error as? any CodedError)?.reason ?? "\(error)"
                    throw CLIError("--reuse-key-of \(reuseKeyOf): that key is not yours to reuse (\(reason)); use another, "
                        + "or add --force")
                }
            }
            try refuseConflictingOptions()
            if p12Password != nil && p12File == nil && outDir == nil {
                throw CLIError("--p12-password: no .p12 is written; add --p12-file FILE or --out-dir DIR")
            }
            if p12Password?.isEmpty == true {
                throw CLIError("--p12-password is empty; iOS's SecPKCS12Import refuses an archive without a password, so give one")
            }
            if csr != nil {
                if selfSigned || issuer == "self" { throw CLIError("a certificate for a --csr cannot be self-signed (its key is the requester's); leave out --self-signed") }
                if keyFile != nil || p12File != nil || bundleFile != nil {
                    throw CLIError("--csr: the private key stays with whoever made the request, so there is no --key-file, --p12-file or --bundle-file to write")
                }
                if outDir == nil && certFile == nil { throw CLIError("--csr: say where the certificate goes (--cert-file FILE or --out-dir DIR); it is not kept in the store") }
            }
            // A CSR's names come from the CSR (read in run()), so its profile is checked there.
            if csr == nil { _ = try request(resolvingIssuerIn: nil).profile() }
        }
    }

    /// Two options that each decide the same thing, or where one would be silently ignored, are refused naming both.
    private func refuseConflictingOptions() throws {
        func given(_ pairs: [(Bool, String)]) -> [String] { pairs.filter(\.0).map(\.1) }
        let keySources = given([(reuseKeyOf != nil, "--reuse-key-of"), (useKey != nil, "--use-key"), (csr != nil, "--csr")])
        if keySources.count > 1 { throw CLIError("\(keySources.joined(separator: " and ")) each choose the key; give one") }
        if key != nil, let other = given([(useKey != nil, "--use-key"), (csr != nil, "--csr")]).first {
            throw CLIError("--key and \(other): \(other) brings its own key, so --key would be ignored; give one")
        }
        if csr != nil, let names = given([(!host.isEmpty, "--host"), (!email.isEmpty, "--email"), (!uri.isEmpty, "--uri"),
                                           (noSan, "--no-san")]).first {
            throw CLIError("--csr and \(names): the names come from the CSR, and \(names) would replace them; give one (make a "
                + "CSR with the names you want)")
        }
        let signers = given([(issuer != nil, "--issuer"), (selfSigned, "--self-signed"), (issuerCert != nil, "--issuer-cert")])
        if signers.count > 1 { throw CLIError("\(signers.joined(separator: " and ")) each choose the signer; give one") }
        if (issuerCert == nil) != (issuerKey == nil) { throw CLIError("--issuer-cert and --issuer-key go together") }
    }

    /// The password of every `.p12` this command writes.
    private var password: String { p12Password ?? PKCS12Export.defaultPassword }

    /// The request the options describe. With a store, a stored CA (`--issuer NAME`) or CA files are loaded; without
    /// one (in `validate()`), only what can be checked without reading the store is.
    func request(resolvingIssuerIn store: CertificateStore?) throws -> CertificateRequest {
        var request = CertificateRequest(name: name)
        request.hosts = host
        request.emails = email
        request.uris = uri
        // A key reused by name is of the type it is stored as, when it is stored as one only.
        let stored = reuseKeyOf.flatMap { name in store?.storedKeySpecs(named: name) } ?? []
        request.key = key ?? (stored.count == 1 ? stored[0] : .ec(.p256))
        request.keyName = reuseKeyOf
        request.digest = digest
        if days != nil && (notBefore != nil || notAfter != nil) {
            throw CLIError("give either --days or --not-before/--not-after, not both")
        }
        if let days {
            guard let count = Int(days) else { throw CLIError("--days takes a whole number of days, not \"\(days)\"") }
            guard count > 0 else { throw CLIError("--days must be positive, not \(count); for an expired certificate use --not-after -1") }
            guard count <= Moment.maximumDays else { throw CLIError("--days is at most \(Moment.maximumDays) (100 years), not \(count)") }
            request.validity = .days(count)
        } else if notBefore != nil || notAfter != nil {
            let start = try moment(notBefore, "--not-before") ?? .daysFromNow(-1)
            request.validity = Validity(notBefore: start, notAfter: try moment(notAfter, "--not-after")
                                            ?? Validity.standardLeaf(startingAt: start).notAfter)
        }
        if let serial {
            do { request.serial = try CertificateProfile.parseSerial(serial) } catch let error as PKIError {
                throw CLIError("--serial: \(error.reason); \(error.fix ?? "")", code: error.code.description)
            }
        }
        if !eku.isEmpty { request.extendedKeyUsage = try CertificateRequest.parseExtendedKeyUsage(eku) }
        if ca && eku.isEmpty { request.extendedKeyUsage = nil }
        request.keyUsage = try CertificateRequest.parseKeyUsage(keyUsage)
        request.commonName = cn
        request.omitCommonName = noCn
        if let org { request.organization = org.isEmpty ? nil : org }
        request.organizationalUnit = ou
        request.country = country
        request.state = state
        request.locality = locality
        request.omitSubjectAltNames = noSan
        if ocspUrl != nil || crlUrl != nil || caIssuersUrl != nil || mustStaple {
            request.statusSources = CertificateStatusSources(ocspURL: ocspUrl, crlURL: crlUrl, mustStaple: mustStaple, caIssuersURL: caIssuersUrl)
        }
        request.isCA = ca
        if let pathLen {
            guard let length = Int(pathLen), length >= 0 else { throw CLIError("--path-len takes a whole number from 0 up, not \"\(pathLen)\"") }
            request.pathLength = length
        }
        request.permitted = permit
        request.excluded = exclude
        if selfSigned {
            request.issuer = .selfSigned
        } else if issuerCert != nil {
            // The signer comes from the files, read below.
        } else if let builtIn = try? CertificateRequest.parseIssuer(issuer ?? "root") {
            request.issuer = builtIn
        } else if let issuer {
            let known = "self, " + BuiltinAuthority.allCases.map(\.rawValue).joined(separator: ", ")
            do {
                try CertificateStore.validate(name: issuer)
                if let store { request.issuerAuthority = try store.storedAuthority(named: issuer) }
            } catch let error as PKIError where error.code == .invalidName || error.reason.hasPrefix("no certificate named") {
                throw CLIError("unknown issuer \"\(echoed(issuer))\": --issuer takes \(known), or the NAME of a CA you issued into the store "
                    + "(`cert issue --ca --name NAME`)")
            }
        }
        if store != nil, let issuerCert, let issuerKey {
            request.issuerAuthority = try CertificateAuthority(chain: try readCertificates(issuerCert, "--issuer-cert"),
                                                               privateKey: try readKey(issuerKey, "--issuer-key"))
        }
        if store != nil, let useKey { request.privateKey = try readKey(useKey, "--use-key") }
        return request
    }

    private func moment(_ text: String?, _ option: String) throws -> Moment? {
        guard let text else { return nil }
        let moment: Moment
        do { moment = try Moment(parsingWithDurations: text) } catch let error as PKIError {
            throw CLIError("\(option): \(error.reason), nor a duration from now (2h, 30m, -1h30m)", code: error.code.description)
        }
        // Out of range: the reason names the option already.
        do { try moment.check(option) } catch let error as PKIError { throw CLIError(error.reason, code: error.code.description) }
        return moment
    }

    /// Every file this command writes outside the store, with the option that asked for it.
    private func destinations(withKey: Bool) -> [(ExportWriter.Destination, String)] {
        var result: [(ExportWriter.Destination, String)] = []
        if let outDir {
            result += ExportWriter.destinations(name: name, in: URL(fileURLWithPath: outDir), withKey: withKey).map { ($0, "--out-dir") }
        }
        let files: [(String?, ExportWriter.Content, String)] = [(certFile, .chainPEM, "--cert-file"), (keyFile, .key, "--key-file"),
                                                                (p12File, .pkcs12, "--p12-file"), (bundleFile, .bundle, "--bundle-file"),
                                                                (leafFile, .leafPEM, "--leaf-file")]
        for case let (path?, content, option) in files {
            result.append((ExportWriter.Destination(URL(fileURLWithPath: path).standardizedFileURL, content), option))
        }
        return result
    }

    func run() async throws {
        let store = storeOptions.store
        let outputs = destinations(withKey: csr == nil)
        let duplicates = Dictionary(grouping: outputs, by: { $0.0.url.path }).filter { $0.value.count > 1 }
        if let (path, options) = duplicates.first {
            throw CLIError("\(options.map(\.1).joined(separator: " and ")) both name \(path); give each file once")
        }
        // Every destination is checked before the store or any file changes (a refusal then leaves both as they were).
        if let outDir {
            do { try store.requireOutside(URL(fileURLWithPath: outDir)) } catch let error as PKIError {
                throw CLIError("--out-dir \(error.reason); write it elsewhere", code: error.code.description)
            }
        }
        try onOutputs(outputs) {
            for (destination, _) in outputs { try store.requireOutside(destination.url) }
            try ExportWriter.checkWritable(outputs.map(\.0))
        }
        let keysBefore = PrivateKey.generatedCount
        let issuedBefore = CertificateStore.issuedCount
        let request = try FlagHints.translating { try self.request(resolvingIssuerIn: store) }
        if let csr {
            try await issue(csr: csr, request: request, store: store, outputs: outputs)
            return
        }
        if !force && !outputs.isEmpty {
            // nil when the store would make something new, which then differs from any file already there.
            let reused = try store.reusable(request)
            try onOutputs(outputs) {
                try ExportWriter.checkReplaceable(reused.map { ExportWriter.Material($0, name: name, password: password) },
                                                  outputs.map(\.0), force: false)
            }
        }
        let credential = try store.issue(request)
        for line in request.warnings(leaf: credential.certificate, signer: try signer(of: request, store: store)) {
            Output.error("warning: \(line)")
        }
        let written = try onOutputs(outputs) {
            try ExportWriter.write(ExportWriter.Material(credential, name: name, password: password), to: outputs.map(\.0),
                                   force: force)
        }
        let report = IssueReport(
            name: name, storedAt: store.leafPath(name).path,
            keysGenerated: PrivateKey.generatedCount - keysBefore,
            certificatesIssued: CertificateStore.issuedCount - issuedBefore,
            summary: CertificateSummary(credential.certificate), files: written)
        if output.json { try Output.json(report); return }
        print(report.certificatesIssued == 0 ? "Reused \(name) (nothing changed)" : "Issued \(name)")
        print(CertificateSummary(credential.certificate).text)
        print("Stored: \(report.storedAt ?? "")")
        print("Keys generated: \(report.keysGenerated)")
        for file in written { print("Wrote \(file.path) — \(file.kind)") }
    }

    private func issue(csr path: String, request: CertificateRequest, store: CertificateStore,
                       outputs: [(ExportWriter.Destination, String)]) async throws {
        let signingRequest: CertificateSigningRequest
        do { signingRequest = try CertificateSigningRequest(try FlagHints.read(path, flag: "--csr")) } catch let error as OpenSSLError {
            throw CLIError("--csr \(path): \(error)")
        }
        // A new certificate (a new serial) differs from any file already there.
        try onOutputs(outputs) { try ExportWriter.checkReplaceable(nil, outputs.map(\.0), force: force) }
        let chain = try FlagHints.translating { try request.sign(signingRequest, store: store) }
        for line in request.warnings(leaf: chain[0], signer: try signer(of: request, store: store)) {
            Output.error("warning: \(line)")
        }
        let written = try onOutputs(outputs) {
            try ExportWriter.write(ExportWriter.Material(chain: chain, key: nil, name: name), to: outputs.map(\.0), force: force)
        }
        let report = IssueReport(name: name, storedAt: nil, keysGenerated: 0, certificatesIssued: 1,
                                 summary: CertificateSummary(chain[0]), files: written)
        if output.json { try Output.json(report); return }
        print("Signed \(name) from \(path) (the key stays with the requester; nothing is kept in the store)")
        print(CertificateSummary(chain[0]).text)
        for file in written { print("Wrote \(file.path) — \(file.kind)") }
    }

    /// The CA that signed what `request` issued (made by then): nil for a self-signed certificate.
    private func signer(of request: CertificateRequest, store: CertificateStore) throws -> CertificateAuthority? {
        if let own = request.issuerAuthority { return own }
        if case .authority(let id) = request.issuer { return try store.existingAuthority(id) }
        return nil
    }

    /// Errors about an output file, worded with the option that named it (never as the store's).
    private func onOutputs<T>(_ outputs: [(ExportWriter.Destination, String)], _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PKIError where [.outputUnavailable, .fileExists, .insideStore].contains(error.code) {
            let path = error.subject ?? ""
            let option = outputs.first { $0.0.url.path == path || path.hasPrefix($0.0.url.deletingLastPathComponent().path + "/") }?.1
                ?? outputs.first { path.hasPrefix($0.0.url.deletingLastPathComponent().path) }?.1 ?? "output"
            let code = error.code.description
            switch error.code {
            case .fileExists: throw CLIError("\(option): \(error.reason); pass --force to replace it, or write somewhere else", code: code)
            case .insideStore: throw CLIError("\(option) \(error.reason); write it elsewhere", code: code)
            default: throw CLIError("\(option): \(error.reason); \(error.fix ?? "choose a folder you can write to")", code: code)
            }
        }
    }

    private func readCertificates(_ path: String, _ option: String) throws -> [Certificate] {
        let data = try FlagHints.read(path, flag: option)
        let certificates: [Certificate]
        do { certificates = try Certificate.read(data) } catch { throw CLIError("\(option) \(path) is not a PEM or DER certificate (\(error))") }
        guard !certificates.isEmpty else { throw CLIError("\(option) \(path) contains no certificate") }
        return certificates
    }

    private func readKey(_ path: String, _ option: String) throws -> PrivateKey {
        do { return try PrivateKey(pem: try FlagHints.read(path, flag: option)) } catch let error as OpenSSLError {
            throw CLIError("\(option) \(path): \(error)")
        }
    }
}

/// `cert issue --json`.
struct IssueReport: Encodable {
    var name: String
    /// Where the store keeps it; nil for a certificate signed from a CSR (not kept).
    var storedAt: String?
    var keysGenerated: Int
    var certificatesIssued: Int
    var summary: CertificateSummary
    var files: [ExportWriter.Written]

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(storedAt, forKey: .storedAt)   // null, not absent, for a CSR's certificate
        try c.encode(keysGenerated, forKey: .keysGenerated)
        try c.encode(certificatesIssued, forKey: .certificatesIssued)
        try c.encode(summary, forKey: .summary)
        try c.encode(files, forKey: .files)
    }

    enum CodingKeys: String, CodingKey { case name, storedAt, keysGenerated, certificatesIssued, summary, files }
}
