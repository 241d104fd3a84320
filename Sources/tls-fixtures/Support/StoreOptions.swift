import ArgumentParser
import Foundation
import TLSFixtures
import TLSFixturesCLISupport

/// `--dir`, shared by every command that touches the certificate store.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Certificate store directory.",
        discussion: "Default: $\(CertificateStore.environmentVariable) if set, else \(CertificateStore.defaultDirectory.path).",
        valueName: "dir"))
    var dir: String?

    var store: CertificateStore { CertificateStore.resolved(explicit: dir) }

    /// ` --dir PATH` when the store in use is not the default one, else empty: for every command line the CLI
    /// prints for the user to run (a fix, an instruction). Without it, after `serve --dir X` a printed `ca init` or
    /// `ca export` would act on another store than the one the runner serves. (With `TLS_FIXTURES_CERTS` it repeats
    /// that store.)
    var dirArgument: String {
        let directory = store.directory
        guard directory != CertificateStore.defaultDirectory.standardizedFileURL else { return "" }
        return " --dir \(ShellWord.quoted(directory.path))"
    }
}

/// A command that works on a certificate store: the CLI words its printed commands with that store (`dirArgument`).
protocol StoreCommand {
    var storeOptions: StoreOptions { get }
}

extension ServeCommand: StoreCommand {}
extension PrepareCommand: StoreCommand {}
extension PinsCommand: StoreCommand {}
extension NSCCheck: StoreCommand {}
extension ProbeCommand: StoreCommand {}
extension ATSException: StoreCommand {}
extension CertIssue: StoreCommand {}
extension SimulatorTrustCommand: StoreCommand {}
extension CAExport: StoreCommand {}
extension CAInit: StoreCommand {}
extension CAShow: StoreCommand {}

/// `--json`, for commands whose output scripts read.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
