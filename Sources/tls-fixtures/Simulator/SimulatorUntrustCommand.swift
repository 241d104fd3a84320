import ArgumentParser
import Foundation
import TLSFixtures

struct SimulatorUntrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "untrust",
        abstract: "Reset booted simulators' keychains, which removes the built-in CA.",
        discussion: """
            simctl cannot remove one certificate: `xcrun simctl keychain DEVICE reset` removes every certificate \
            added to that simulator, this CA included.
            """
    )

    @OptionGroup var deviceOptions: SimulatorDeviceOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let devices = try SimulatorTrust().untrust(on: deviceOptions.target)
        if output.json {
            try Output.json(SimulatorReport(action: "untrust", certificate: nil, devices: devices))
            return
        }
        for device in devices {
            print("Reset the keychain of \(device.name) (\(device.udid)): it trusts no added root now")
        }
    }
}
