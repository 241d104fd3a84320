import ArgumentParser
import Foundation
import TLSFixtures

/// `--dir`, shared by every command that touches the certificate store.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Certificate store directory.",
        discussion: "Default: $\(CertificateStore.environmentVariable) if set, else \(CertificateStore.defaultDirectory.path).",
        valueName: "dir"))
    var dir: String?

    var store: CertificateStore { CertificateStore.resolved(explicit: dir) }
}

/// `--json`, for commands whose output scripts read.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}
