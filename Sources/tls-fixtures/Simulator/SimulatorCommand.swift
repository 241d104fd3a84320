import ArgumentParser
import TLSFixtures

struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract: "Trust the built-in CA in iOS simulators, or take it out again (macOS, Xcode).",
        discussion: """
            `simulator trust` runs `xcrun simctl keychain DEVICE add-root-cert` with the store's CA on every booted \
            simulator (or the one --device names); `simulator untrust` resets those simulators' keychains. Run trust \
            once per simulator after `simctl erase`, or in CI after booting one.
            """,
        subcommands: [SimulatorTrustCommand.self, SimulatorUntrustCommand.self]
    )
}

/// `--device`, shared by both subcommands.
struct SimulatorDeviceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A simulator's UDID, or `booted` for every booted one.", valueName: "udid|booted"))
    var device = "booted"

    var target: SimulatorTrust.Target { SimulatorTrust.Target(device) }
}


/// What both subcommands print with --json.
struct SimulatorReport: Encodable {
    var action: String
    var certificate: String?
    var devices: [SimulatorTrust.Device]
}
