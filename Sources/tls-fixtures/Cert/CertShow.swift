import ArgumentParser
import Foundation
import TLSFixtures

struct CertShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Describe a certificate, a chain, a PKCS#12 archive or a certificate signing request "
            + "(step certificate inspect).",
        discussion: """
            Reads PEM or DER certificates (every certificate of a chain), a .p12 (--password, else the kit's \
            "\(PKCS12Export.defaultPassword)", mkcert's "changeit" or none), or a CSR, from a file or from standard \
            input (-). Prints subject, SANs, signature algorithm, key, validity, EKU, constraints, SPKI pin and \
            fingerprint. --json (or --format json) prints an array with one object per certificate, leaf first, \
            even for a single certificate (an object for a CSR); --format pem prints the certificates as PEM (a \
            .p12's too).
            """
    )

    /// How `cert show` prints what it read.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, pem
    }

    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("A .pem, .crt, .cer, .p12 or .csr file, or - for standard input.", valueName: "file"))
    var file: String

    @Option(help: ArgumentHelp("What to print.", valueName: "format"))
    var format: Format?

    @Option(help: ArgumentHelp("The password of a .p12.", valueName: "password"))
    var password: String?

    func validate() throws {
        if output.json, let format, format != .json {
            throw CLIError("--json and --format \(format.rawValue) each choose the output; give one")
        }
    }

    func run() async throws {
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try UserFile.read(file)
        let source = file == "-" ? "standard input" : file
        let inspected: InspectedFile
        do { inspected = try InspectedFile.read(data, password: password) } catch let error as PKIError {
            throw CLIError("\(source): \(error.reason); \(error.fix ?? "")", code: error.code.description)
        }
        let chosen = format ?? (output.json ? .json : .text)
        switch inspected {
        case .request(let request):
            let summary = try RequestSummary(request)
            switch chosen {
            case .json: try Output.json(summary)
            case .text: print(summary.text)
            case .pem:
                guard String(decoding: data, as: UTF8.self).contains("-----BEGIN") else {
                    throw CLIError("--format pem: \(source) is a DER request; convert it with openssl req -inform DER")
                }
                FileHandle.standardOutput.write(data)
            }
        case .certificates(let certificates, _):
            let summaries = certificates.map { CertificateSummary($0) }
            switch chosen {
            case .json:
                // Always an array, so a script reads a chain and a single certificate the same way.
                try Output.json(summaries)
            case .pem:
                FileHandle.standardOutput.write(Certificate.pem(certificates))
            case .text:
                for (index, summary) in summaries.enumerated() {
                    if summaries.count > 1 { print("[\(index)]") }
                    print(summary.text)
                    if index < summaries.count - 1 { print("") }
                }
            }
        }
    }
}
