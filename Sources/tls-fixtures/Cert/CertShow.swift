import ArgumentParser
import Foundation
import TLSFixtures

struct CertShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Describe a certificate file (PEM or DER; every certificate of a chain).",
        discussion: """
            Prints subject, SANs, signature algorithm, key, validity, EKU, constraints, SPKI pin and fingerprint. \
            --json prints an array with one object per certificate, leaf first, even for a single certificate.
            """
    )

    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("A .pem, .crt or .cer file.", valueName: "file"))
    var file: String

    func run() async throws {
        let data = try UserFile.read(file)
        let certificates: [Certificate]
        do { certificates = try Certificate.read(data) } catch {
            throw CLIError("\(file) is not a PEM or DER certificate (\(error))")
        }
        guard !certificates.isEmpty else { throw CLIError("\(file) contains no certificate") }
        let summaries = certificates.map { CertificateSummary($0) }
        if output.json {
            // Always an array, so a script reads a chain and a single certificate the same way.
            try Output.json(summaries)
            return
        }
        for (index, summary) in summaries.enumerated() {
            if summaries.count > 1 { print("[\(index)]") }
            print(summary.text)
            if index < summaries.count - 1 { print("") }
        }
    }
}
