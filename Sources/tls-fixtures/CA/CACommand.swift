import ArgumentParser

struct CACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create, inspect and export the built-in certificate authority.",
        discussion: """
            The built-in CA signs every fixture's certificate. Install it once as a trusted root on each simulator \
            or device (`xcrun simctl keychain booted add-root-cert ROOT.pem`); it is name-constrained to the names \
            localhost, test, example and invalid (each with every name under it) and the addresses 127.0.0.0/8 and ::1, \
            so it cannot vouch for any real site. `ca show` warns about a CA made by an earlier version.
            """,
        subcommands: [CAInit.self, CAShow.self, CAExport.self, CAInstall.self, CAUninstall.self]
    )
}
