import ArgumentParser
import Foundation
import TLSFixtures

struct CertShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Describe a certificate file (PEM or DER; every certificate of a chain).",
        discussion: "Prints subject, SANs, signature algorithm, key, validity, EKU, constraints, SPKI pin and fingerprint."
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
            try Output.json(summaries.count == 1 ? AnyEncodable(summaries[0]) : AnyEncodable(summaries))
            return
        }
        for (index, summary) in summaries.enumerated() {
            if summaries.count > 1 { print("[\(index)]") }
            print(summary.text)
            if index < summaries.count - 1 { print("") }
        }
    }
}

struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: Encoder) throws { try value.encode(to: encoder) }
}
