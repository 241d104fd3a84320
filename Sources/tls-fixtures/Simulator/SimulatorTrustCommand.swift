import ArgumentParser
import Foundation
import TLSFixtures

struct SimulatorTrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Add the built-in CA to booted simulators' trusted roots.",
        discussion: """
            Makes the CA if the store has none, once xcrun has found a simulator to trust it (a failure changes \
            nothing). Give it the --dir `serve` uses: a simulator must trust the CA the runner serves. Apps in those \
            simulators then trust the fixtures as a device that installed the CA does (what ATS verdicts assume); \
            `simulator untrust` takes it out again.
            """
    )

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var deviceOptions: SimulatorDeviceOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let store = storeOptions.store
        let devices = try SimulatorTrust().trust(caOf: store, on: deviceOptions.target)
        let ca = try store.ca()
        let path = store.certificatePath(.root)
        if output.json {
            try Output.json(SimulatorReport(action: "trust", certificate: path.path, devices: devices))
            return
        }
        for device in devices {
            print("Trusted \(ca.certificate.subject) on \(device.name) (\(device.udid))")
        }
    }
}
