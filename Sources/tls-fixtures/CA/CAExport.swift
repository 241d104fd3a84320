import ArgumentParser
import Foundation
import TLSFixtures

struct CAExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the CA certificate as PEM, DER (.cer) or PKCS#12 (.p12).",
        discussion: """
            The export holds the certificate only, never the CA's private key. \
            The .p12 is protected with the password "\(PKCS12Export.defaultPassword)".
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("Format of the file.", valueName: "format"))
    var format: ExportFormat = .pem

    @Option(help: ArgumentHelp("Output file, in a folder that exists (- for standard output, PEM only).", valueName: "file"))
    var out: String

    @Option(help: ArgumentHelp("Which authority to export.", valueName: "name"))
    var authority: BuiltinAuthority = .root

    @Flag(help: "Replace an existing, different output file.")
    var force = false

    func validate() throws {
        if out == "-" && format != .pem { throw CLIError("only PEM can go to standard output; give --out FILE for \(format)") }
    }

    func run() async throws {
        let store = storeOptions.store
        guard try store.existingCA() != nil else { throw PKIError.noCA(path: store.directory.path) }
        let ca = try store.authority(authority)
        let data = try ca.certificate.exported(as: format)
        if out == "-" {
            FileHandle.standardOutput.write(data)
            return
        }
        do { try store.requireOutside(URL(fileURLWithPath: out)) } catch let error as PKIError {
            throw CLIError("--out \(error)", code: error.code.description)
        }
        do { try ExportWriter.write(data, to: URL(fileURLWithPath: out), force: force) } catch let error as PKIError
            where error.code == .outputUnavailable {
            throw CLIError("--out: \(error.reason); \(error.fix ?? "choose a folder you can write to")", code: error.code.description)
        }
        print("Wrote \(out) (\(format), \(data.count) bytes)")
    }
}
