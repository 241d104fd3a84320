import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TLSFixturesClient

/// Apple's URLSession with default trust and a default ATS policy (the kit's CA trusted as the README says), loading
/// every scenario and its control by the qualified name through the runner's proxy: the whole report card, written
/// to `TLS_FIXTURES_APPLE_REPORT_DIR` as `CARD.json` and `CARD.md` (CARD: `macos-VERSION`, `ios-simulator-VERSION`).
/// `make apple-report` runs it on a Mac and in a booted simulator (xcodebuild passes `TEST_RUNNER_`-prefixed variables
/// through to the simulator's test process).
@Test func appleReportCard() async throws {
    let environment = ProcessInfo.processInfo.environment
    let folder = try #require(environment["TLS_FIXTURES_APPLE_REPORT_DIR"],
                              "run by make apple-report, which names the folder for the cards")
    let fixtures = RemoteFixtures()   // TLS_FIXTURES_URL, as make apple-report sets it
    let session = URLSession(configuration: .fixtures(through: fixtures.proxy))
    let version = ProcessInfo.processInfo.operatingSystemVersion
    let os = "\(version.majorVersion).\(version.minorVersion)" + (version.patchVersion > 0 ? ".\(version.patchVersion)" : "")
    #if os(iOS)
    let name = "ios-simulator-\(os)"
    let device = environment["SIMULATOR_MODEL_IDENTIFIER"] ?? environment["SIMULATOR_DEVICE_NAME"] ?? "simulator"
    #else
    let name = "macos-\(os)"
    let device = "Mac"
    #endif
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apple-report-\(UUID().uuidString)")
    let card = try await fixtures.reportCard(
        client: "URLSession, default trust, default ATS policy", family: .apple, url: .qualifiedName,
        context: ["os": ProcessInfo.processInfo.operatingSystemVersionString, "device": device,
                  "xcode": environment["XCODE_VERSION_ACTUAL"] ?? environment["TLS_FIXTURES_XCODE"] ?? "?"],
        to: scratch) { url in try await session.data(from: url) }
    let out = URL(fileURLWithPath: folder)
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    for (file, suffix) in [("report.json", "json"), ("report.md", "md")] {
        let target = out.appendingPathComponent("\(name).\(suffix)")
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: scratch.appendingPathComponent(file), to: target)
    }
    print("\(name): \(card.summaryLine)")
    #expect(card.counts[.unproven] == nil, "\(card.summaryLine): the CA is not trusted, or the runner not reached")
}
