import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
@testable import TLSFixtures
import TLSFixturesXCTest
import XCTest

/// The XCTest helper, exactly as the README shows it (the region between the README markers is copied there, and
/// `ReadmeExamplesTests` fails if the two drift apart).
final class XCTestHelperTests: XCTestCase {
    override func setUp() {
        TestEnvironment.useSharedStoreAsDefault()
    }

    // README: xctest-example begin
    func testExpiredCertificateIsRejected() async throws {
        let fixture = try await startFixture("expired")   // stopped automatically in teardown

        let client = TLSProbe(trusting: [fixture.caCertificate])
        let result = try await client.probe(ProbeTarget(host: "localhost", port: fixture.port))

        XCTAssertEqual(result.verification?.summary, "certificate has expired")
        XCTAssertEqual(result.presentedChain.first?.spkiSHA256, fixture.pins.leaf)
    }
    // README: xctest-example end

    /// The XCTest form of the assertion, with a real client (URLSession refuses a self-signed certificate as unknown_ca).
    func testAssertRefusedWithURLSession() async throws {
        let fixture = try await startFixture("self-signed")
        await XCTAssertRefused(fixture) { try await URLSession.shared.data(from: fixture.url) }
        XCTAssertEqual(fixture.connections.last?.outcome?.alert, .unknownCA)
    }

    func testTeardownStopsTheFixture() async throws {
        // Teardown blocks run last-registered first, so this one runs after the fixture's own stop.
        let port = PortBox()
        addTeardownBlock {
            XCTAssertTrue(port.released, "the fixture still listens after teardown")
        }
        let fixture = try await startFixture("ats-compliant")
        port.value = fixture.port
        XCTAssertTrue(Ports.accepts(fixture.port))
    }
}

/// A port number handed out of a closure that may run on another thread.
final class PortBox: Sendable {
    private let box = NIOLockedValueBox(HeldPort(port: 0, host: "127.0.0.1", listeners: nil))
    /// The port; setting it, while its fixture runs, also notes the sockets listening on it (`HeldPort`).
    var value: Int {
        get { box.withLockedValue { $0.port } }
        set { box.withLockedValue { $0 = Ports.held(newValue) } }
    }
    /// Whether the sockets that listened when `value` was set are gone.
    var released: Bool { box.withLockedValue { $0 }.released }
}

