import Foundation
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

    func testTeardownStopsTheFixture() async throws {
        // Teardown blocks run last-registered first, so this one runs after the fixture's own stop.
        let port = PortBox()
        addTeardownBlock {
            XCTAssertFalse(isListening(port: port.value), "the fixture still listens after teardown")
        }
        let fixture = try await startFixture("ats-compliant")
        port.value = fixture.port
        XCTAssertTrue(isListening(port: fixture.port))
    }
}

final class PortBox: @unchecked Sendable { var value = 0 }

/// True when something accepts TCP connections on 127.0.0.1:`port`.
func isListening(port: Int) -> Bool {
    let fd = socket(AF_INET, streamSocketType, 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}
