import Foundation
import XCTest
// The same file builds in the scratch package (module ATSModel) and in swift-tls-fixtures (module TLSFixtures).
#if canImport(TLSFixtures)
import TLSFixtures
#else
import ATSModel
#endif

/// A fake server for the diagnostics: answers each offer from `AcceptedSuites` the way a real server
/// would (newest common version, first common suite), and records the offers it saw.
final class ATSFakeServer: ATSHandshaker, @unchecked Sendable {
    // @unchecked: `lock` guards `offers` (NSLock.withLock needs macOS 14, the package targets 13).
    private let lock = NSLock()
    private var offers: [ATSClientOffer] = []
    let replay: ATSReplayHandshaker

    init(_ facts: ServerFacts) { replay = ATSReplayHandshaker(facts: facts) }

    func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        record(offer)
        return await replay.handshake(offer, url: url)
    }

    /// Synchronous, because NSLock may not be used directly in an async function.
    private func record(_ offer: ATSClientOffer) {
        lock.lock()
        defer { lock.unlock() }
        offers.append(offer)
    }

    var seenOffers: [ATSClientOffer] {
        lock.lock()
        defer { lock.unlock() }
        return offers
    }
}

final class ATSDiagnosticsTests: XCTestCase {
    func row(_ name: String) throws -> ATSCatalogRow { try XCTUnwrap(ATSCatalog.rows().first { $0.name == name }) }

    func run(_ name: String) async throws -> ATSDiagnosticsReport {
        let row = try row(name)
        return await ATSDiagnostics().run(url: row.url, handshaker: ATSFakeServer(row.facts))
    }

    /// The configuration sequence of ats-reference.md, §nscurl --ats-diagnostics.
    func testConfigurationSequence() {
        let configurations = ATSDiagnostics.configurations(host: "h.test")
        XCTAssertEqual(configurations.map(\.name), [
            "ATS Default Connection", "Allow All Loads",
            "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0",
            "Disabling Perfect Forward Secrecy", "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
            "TLSv1.3 with PFS disabled", "TLSv1.2 with PFS disabled", "TLSv1.1 with PFS disabled", "TLSv1.0 with PFS disabled",
            "TLSv1.3 with PFS disabled and insecure HTTP allowed", "TLSv1.2 with PFS disabled and insecure HTTP allowed",
            "TLSv1.1 with PFS disabled and insecure HTTP allowed", "TLSv1.0 with PFS disabled and insecure HTTP allowed",
        ])
        XCTAssertEqual(Set(configurations.map(\.group)).count, 7)
        XCTAssertEqual(configurations[0].dictionary, [:])
        XCTAssertEqual(configurations[1].dictionary, ["NSAllowsArbitraryLoads": true])
        XCTAssertEqual(configurations[15].dictionary, ["NSExceptionDomains": ["h.test": [
            "NSExceptionMinimumTLSVersion": "TLSv1.0", "NSExceptionRequiresForwardSecrecy": false,
            "NSExceptionAllowsInsecureHTTPLoads": true]]])
        for configuration in configurations {
            XCTAssertEqual(ATSPolicy(configuration.dictionary).warnings, [], configuration.name)
        }
    }

    func pattern(_ report: ATSDiagnosticsReport) -> String {
        report.results.map { $0.passed ? "P" : "F" }.joined()
    }

    // Order: default, arbitrary, TLS 1.3/1.2/1.1/1.0, PFS, PFS+HTTP, TLS+PFS ×4, TLS+PFS+HTTP ×4.
    func testATSCompliantPassesEverything() async throws {
        let report = try await run("ats-compliant")
        XCTAssertEqual(pattern(report), "PPPPPPPPPPPPPPPP")
    }

    func testTLS10() async throws {
        // Default FAIL, TLSv1.0 exception PASS, TLSv1.1 FAIL; arbitrary loads PASS.
        let report = try await run("tls-v1-0")
        XCTAssertEqual(pattern(report), "FPFFFPFFFFFPFFFP")
    }

    func testStaticRSA() async throws {
        // Only configurations that disable PFS (at TLS 1.2 or below) and arbitrary loads pass.
        let report = try await run("static-rsa")
        XCTAssertEqual(pattern(report), "FPFFFFPPFPPPFPPP")
    }

    func testSelfSigned() async throws {
        // Handshakes complete, trust fails every time: nscurl has no trust override.
        let report = try await run("self-signed")
        XCTAssertEqual(pattern(report), "FFFFFFFFFFFFFFFF")
        XCTAssertTrue(report.results.allSatisfy {
            if case .success = $0.handshake { return $0.verdict?.violations.first?.rule == .trustChain }
            return false
        })
    }

    func testOffersFollowTheConfiguration() async throws {
        let row = try row("ats-compliant")
        let server = ATSFakeServer(row.facts)
        _ = await ATSDiagnostics().run(url: row.url, handshaker: server)
        let offers = server.seenOffers
        XCTAssertEqual(offers.count, 16)
        XCTAssertEqual(offers[0].minVersion, .tls1_2)
        XCTAssertEqual(offers[1].minVersion, .tls1_0)
        XCTAssertEqual(offers[5].minVersion, .tls1_0)
        XCTAssertFalse(offers[0].tls12Suites.contains("TLS_RSA_WITH_AES_128_GCM_SHA256"))
        XCTAssertTrue(offers[6].tls12Suites.contains("TLS_RSA_WITH_AES_128_GCM_SHA256"))
    }

    func testTextOutput() async throws {
        let report = try await run("tls-v1-0")
        let text = report.text()
        XCTAssertEqual(text, report.text(), "deterministic")
        XCTAssertEqual(text.components(separatedBy: "\n").filter { $0 == String(repeating: "=", count: 80) }.count, 8)
        XCTAssertTrue(text.hasPrefix("Starting ATS Diagnostics\n\nConfiguring ATS Info.plist keys and displaying the result "
                                     + "of HTTPS loads to https://tls-v1-0.fixtures.test:8443/.\n"))
        XCTAssertTrue(text.contains("""
        Default ATS Secure Connection
        ---
        ATS Default Connection
        Result : FAIL
        ---
        """))
        XCTAssertTrue(text.contains("""
        Configuring TLS exceptions for tls-v1-0.fixtures.test
        ---
        TLSv1.3
        Result : FAIL
        ---

        ---
        TLSv1.2
        Result : FAIL
        ---

        ---
        TLSv1.1
        Result : FAIL
        ---

        ---
        TLSv1.0
        Result : PASS
        ---
        """))
        XCTAssertFalse(text.contains("ATS Dictionary"))
        XCTAssertFalse(text.contains("Error :"))
    }

    func testVerboseOutput() async throws {
        let text = try await run("tls-v1-0").text(verbose: true)
        XCTAssertTrue(text.contains("""
        ---
        TLSv1.0
        ATS Dictionary:
        {
            NSExceptionDomains = {
                "tls-v1-0.fixtures.test" = {
                    NSExceptionMinimumTLSVersion = "TLSv1.0";
                };
            };
        }
        Result : PASS
        ---
        """))
        XCTAssertTrue(text.contains("""
        ---
        ATS Default Connection
        ATS Dictionary:
        {
        }
        Result : FAIL
        Error : Error Domain=NSURLErrorDomain Code=-1200
        """))
        XCTAssertFalse(text.contains("Use '--verbose'"))
    }

    func testJSONRoundTrips() async throws {
        let report = try await run("static-rsa")
        let json = try report.jsonData()
        XCTAssertEqual(json, try report.jsonData(), "deterministic")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let decoded = try decoder.decode(ATSDiagnosticsReport.self, from: json)
        XCTAssertEqual(decoded.results.map(\.passed), report.results.map(\.passed))
        XCTAssertEqual(decoded.results.map(\.configuration), report.results.map(\.configuration))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any])
        XCTAssertEqual(object["host"] as? String, "static-rsa.fixtures.test")
    }

    func testHandshakeFailureIsReportedWithReason() async throws {
        let report = try await run("tls-v1-0")
        let failure = try XCTUnwrap(report.results.first)
        guard case .failure(let reason)? = failure.handshake else { return XCTFail("expected a failed handshake") }
        XCTAssertTrue(reason.contains("protocol version"), reason)
        XCTAssertTrue(failure.error?.contains(reason) == true)
    }
}
