import ArgumentParser

struct CertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cert",
        abstract: "Issue any certificate a test could want, including the broken ones, and inspect certificates.",
        subcommands: [CertIssue.self, CertShow.self, CertCSR.self]
    )
}
