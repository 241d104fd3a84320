import ArgumentParser
import Foundation
import TLSFixtures

struct CAShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Describe the built-in CA (or another built-in authority) and how to trust it.",
        discussion: "Never prints a private key."
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("Which authority.", valueName: "name"))
    var authority: BuiltinAuthority = .root

    func run() async throws {
        let store = storeOptions.store
        let id = authority
        // Showing must not create: a missing CA is reported, and `ca init` makes one.
        guard let root = try store.existingCA() else { throw PKIError.noCA(path: store.directory.path) }
        // Nor an authority not made yet (or due to be re-made): that is the job of what uses it.
        guard let ca = id == .root ? root : try store.existingAuthority(id) else {
            throw PKIError.authorityNotMade(id.rawValue, path: store.certificatePath(id).path)
        }
        let legacy = LegacyNameConstraints(ca.certificate)
        let expiry = ca.expiryWarning(name: id == .root ? "the built-in CA" : "the \(id.rawValue) CA", store: store.directory.path)
        let warnings = [legacy?.explanation(for: id), expiry].compactMap { $0 }
        if output.json {
            try Output.json(CAReport(created: false, store: store.directory.path, certificate: store.certificatePath(id).path,
                                     summary: CertificateSummary(ca.certificate), warnings: warnings))
            return
        }
        print("\(id.rawValue): \(store.certificatePath(id).path)")
        print(CertificateSummary(ca.certificate).text)
        if let legacy { Output.error(legacy.explanation(for: id)) }
        if id == .root {
            print("")
            let path = store.certificatePath(id).path
            print(TrustInstructions.text(rootPEM: path, dirArgument: storeOptions.dirArgument))
        }
    }
}
