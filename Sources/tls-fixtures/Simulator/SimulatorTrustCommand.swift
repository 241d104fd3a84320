import ArgumentParser
import Foundation
import TLSFixtures

struct SimulatorTrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Add the built-in CA to booted simulators' trusted roots.",
        discussion: """
            Makes the CA first if the store has none. Apps in those simulators then trust the fixtures as a device \
            that installed the CA does (what ATS verdicts assume); `simulator untrust` takes it out again.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var deviceOptions: SimulatorDeviceOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let store = storeOptions.store
        let ca = try store.ca()
        let path = store.certificatePath(.root)
        let devices = try SimulatorTrust().trust(rootPEM: path, on: deviceOptions.target)
        if output.json {
            try Output.json(SimulatorReport(action: "trust", certificate: path.path, devices: devices))
            return
        }
        for device in devices {
            print("Trusted \(ca.certificate.subject) on \(device.name) (\(device.udid))")
        }
    }
}
