import Foundation
import TLSFixturesWire

/// Trusting the built-in CA in iOS simulators: `xcrun simctl keychain DEVICE add-root-cert ROOT.pem`, and `reset` to
/// take it out again. The logic (which devices, which invocations, what went wrong) is here; `tls-fixtures simulator`
/// only prints. `xcrun` is found on `PATH` and run through `Tool`, so the tests run all of it against a fake `xcrun`.
package struct SimulatorTrust: Sendable {
    /// Which simulators: every booted one, or one by UDID.
    public enum Target: Sendable, Equatable {
        case booted
        case udid(String)

        /// `booted` or a UDID, as `--device` takes it.
        public init(_ text: String) { self = text.lowercased() == "booted" ? .booted : .udid(text) }
    }

    /// A simulator as `simctl list -j devices` describes it.
    package struct Device: Sendable, Equatable, Codable {
        package var udid: String
        package var name: String
        package var state: String
        /// The runtime it belongs to, e.g. `com.apple.CoreSimulator.SimRuntime.iOS-17-5`.
        public var runtime: String

        package var isBooted: Bool { state == "Booted" }
    }

    /// Runs a program and reports how it went: the seam tests replace.
    package struct Tool: Sendable {
        package struct Output: Sendable {
            package var status: Int32
            package var stdout: Data
            package var stderr: String
            package init(status: Int32, stdout: Data, stderr: String) { self.status = status; self.stdout = stdout; self.stderr = stderr }
        }

        /// The program's path, or nil when it is not installed.
        public var path: String?
        package var run: @Sendable (_ arguments: [String]) throws -> Output

        package init(path: String?, run: @escaping @Sendable (_ arguments: [String]) throws -> Output) {
            self.path = path; self.run = run
        }

        /// `xcrun` from `PATH` (the environment's), run with Foundation's `Process`.
        public static func xcrun(environment: [String: String] = ProcessInfo.processInfo.environment) -> Tool {
            let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/xcrun" }
                .first { FileManager.default.isExecutableFile(atPath: $0) }
            return Tool(path: path) { arguments in
                guard let path else { throw SimulatorTrustError.xcrunMissing }
                return try Self.launch(path, arguments)
            }
        }

        package static func launch(_ path: String, _ arguments: [String]) throws -> Output {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            // Read both to the end before waiting: a child that fills a pipe would otherwise never exit.
            let errors = ReadAll(err.fileHandleForReading)
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Output(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: errors.finish(), as: UTF8.self))
        }

        /// Drains a pipe on another thread.
        private final class ReadAll: @unchecked Sendable {
            private var data = Data()
            private let done = DispatchSemaphore(value: 0)
            init(_ handle: FileHandle) {
                Thread.detachNewThread { [self] in
                    data = handle.readDataToEndOfFile()
                    done.signal()
                }
            }
            func finish() -> Data { done.wait(); return data }
        }
    }

    package var tool: Tool

    package init(tool: Tool = .xcrun()) { self.tool = tool }

    // MARK: Devices

    /// Every simulator `simctl` knows.
    public func devices() throws -> [Device] {
        let output = try simctl(["list", "-j", "devices"])
        struct Listing: Decodable {
            struct Entry: Decodable { var udid: String; var name: String; var state: String }
            var devices: [String: [Entry]]
        }
        let listing: Listing
        do { listing = try JSONDecoder().decode(Listing.self, from: output) } catch {
            throw SimulatorTrustError.unreadableListing("\(error)")
        }
        return listing.devices.sorted { $0.key < $1.key }.flatMap { runtime, entries in
            entries.map { Device(udid: $0.udid, name: $0.name, state: $0.state, runtime: runtime) }
        }
    }

    /// The simulators `target` names, each booted (simctl changes only a booted simulator's keychain).
    public func resolve(_ target: Target) throws -> [Device] {
        let all = try devices()
        switch target {
        case .booted:
            let booted = all.filter(\.isBooted)
            guard !booted.isEmpty else { throw SimulatorTrustError.nothingBooted(known: all.count) }
            return booted
        case .udid(let udid):
            guard let device = all.first(where: { $0.udid.caseInsensitiveCompare(udid) == .orderedSame }) else {
                throw SimulatorTrustError.unknownDevice(udid)
            }
            guard device.isBooted else { throw SimulatorTrustError.notBooted(device) }
            return [device]
        }
    }

    // MARK: Trust

    /// Adds `rootPEM` as a trusted root to every simulator `target` names; the simulators changed.
    @discardableResult
    public func trust(rootPEM: URL, on target: Target) throws -> [Device] {
        let devices = try resolve(target)
        try add(rootPEM, to: devices)
        return devices
    }

    /// Adds `store`'s CA to every simulator `target` names; the simulators changed. Checks first: without xcrun or a
    /// simulator to trust it the store is left as it was, and only then is its CA made, when it has none.
    @discardableResult
    public func trust(caOf store: CertificateStore, on target: Target) throws -> [Device] {
        let devices = try resolve(target)
        _ = try store.ca()
        try add(store.certificatePath(.root), to: devices)
        return devices
    }

    private func add(_ rootPEM: URL, to devices: [Device]) throws {
        for device in devices {
            _ = try simctl(["keychain", device.udid, "add-root-cert", rootPEM.path], device: device)
        }
    }

    /// Resets the keychain of every simulator `target` names: the CA goes, and so does every other certificate added
    /// to those simulators (simctl has no command that removes one).
    @discardableResult
    public func untrust(on target: Target) throws -> [Device] {
        let devices = try resolve(target)
        for device in devices { _ = try simctl(["keychain", device.udid, "reset"], device: device) }
        return devices
    }

    private func simctl(_ arguments: [String], device: Device? = nil) throws -> Data {
        guard tool.path != nil else { throw SimulatorTrustError.xcrunMissing }
        let output = try tool.run(["simctl"] + arguments)
        guard output.status == 0 else {
            let said = output.stderr.split(separator: "\n").first.map { String($0).escapingControlCharacters } ?? "no message"
            throw SimulatorTrustError.simctlFailed(command: (["xcrun", "simctl"] + arguments).joined(separator: " "),
                                                   status: output.status, message: said, device: device?.name)
        }
        return output.stdout
    }
}

package struct SimulatorTrustError: CodedError {
    package typealias Code = ErrorCode<SimulatorTrustError>

    package let code: Code
    package let reason: String
    package let fix: String?
    /// For `nothingBooted`: how many simulators there are.
    package let known: Int?

    private init(_ code: Code, _ reason: String, fix: String?, known: Int? = nil) {
        self.code = code; self.reason = reason; self.fix = fix; self.known = known
    }

    package static let xcrunMissing = SimulatorTrustError(
        .xcrunMissing, "xcrun was not found on PATH: iOS simulators need Xcode on a Mac",
        fix: "install Xcode, then `sudo xcode-select -s /Applications/Xcode.app`")

    package static func nothingBooted(known: Int) -> SimulatorTrustError {
        SimulatorTrustError(.nothingBooted, "no simulator is booted (\(known) known)",
                            fix: "boot one (`xcrun simctl list devices available` names them; `xcrun simctl boot NAME`), or name one "
                                + "(SimulatorTrust.Target.udid)",
                            known: known)
    }

    package static func unknownDevice(_ udid: String) -> SimulatorTrustError {
        SimulatorTrustError(.unknownDevice, "no simulator has the UDID \(udid.escapingControlCharacters)",
                            fix: "`xcrun simctl list devices` lists them")
    }

    package static func notBooted(_ device: SimulatorTrust.Device) -> SimulatorTrustError {
        SimulatorTrustError(.notBooted, "\(device.name) (\(device.udid)) is \(device.state.lowercased()): simctl changes a booted "
                                + "simulator's keychain only", fix: "boot it first (`xcrun simctl boot \(device.udid)`)")
    }

    package static func unreadableListing(_ why: String) -> SimulatorTrustError {
        SimulatorTrustError(.unreadableListing, "cannot read `xcrun simctl list -j devices`: \(why)", fix: nil)
    }

    package static func simctlFailed(command: String, status: Int32, message: String, device: String?) -> SimulatorTrustError {
        // The Command Line Tools alone have xcrun but no simctl.
        let fix = message.contains("unable to find utility") ? "select a full Xcode: `sudo xcode-select -s /Applications/Xcode.app`" : nil
        return SimulatorTrustError(.simctlFailed, "`\(command)` failed (exit \(status))\(device.map { " on \($0)" } ?? ""): \(message)",
                                   fix: fix)
    }
}

extension ErrorCode where Owner == SimulatorTrustError {
    package static var xcrunMissing: Self { Self("xcrunMissing") }
    package static var nothingBooted: Self { Self("nothingBooted") }
    package static var unknownDevice: Self { Self("unknownDevice") }
    package static var notBooted: Self { Self("notBooted") }
    package static var unreadableListing: Self { Self("unreadableListing") }
    package static var simctlFailed: Self { Self("simctlFailed") }
}
