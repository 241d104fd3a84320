import Foundation
import NIOConcurrencyHelpers
import XCTest
import TLSFixtures

/// A fake server for the diagnostics: answers each offer from `AcceptedSuites` the way a real server
/// would (newest common version, first common suite), and records the offers it saw.
final class ATSFakeServer: ATSHandshaker, Sendable {
    private let offers = NIOLockedValueBox<[ATSClientOffer]>([])
    let replay: ATSReplayHandshaker

    init(_ facts: ServerFacts) { replay = ATSReplayHandshaker(facts: facts) }

    func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
        offers.withLockedValue { $0.append(offer) }
        return await replay.handshake(offer, url: url)
    }

    var seenOffers: [ATSClientOffer] { offers.withLockedValue { $0 } }
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
            NSExceptionDomains =     {
                "tls-v1-0.fixtures.test" =         {
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
        guard case .failure(let reason, let kind)? = failure.handshake else { return XCTFail("expected a failed handshake") }
        XCTAssertTrue(reason.contains("protocol version"), reason)
        XCTAssertEqual(kind, .protocolVersion)
        XCTAssertTrue(failure.error?.detail.contains(reason) == true)
        XCTAssertEqual(failure.error?.failureKind, .protocolVersion)
    }
}

/// `ats diagnose` against real nscurl transcripts (issue 13): layout, error form, PASS semantics and JSON shape.
/// Layout sources: Apple's "Identifying the source of blocked connections" (a verbose run against example.com:
/// no blank line after "Default ATS Secure Connection", one after "Allowing Arbitrary Loads"), and a verbose
/// macOS transcript in kiwix/kiwix-apple#1430 (a blank line after "Configuring … for HOST"; nested dictionaries
/// printed as NSDictionary does, `NSExceptionDomains =     {`; errors as
/// `Error : Error Domain=NSURLErrorDomain Code=-1200 "…" UserInfo={… _kCFStreamErrorCodeKey=-98xx …}`).
final class ATSDiagnoseParityTests: XCTestCase {
    func report(_ name: String, handshaker: (ServerFacts) -> some ATSHandshaker = { ATSFakeServer($0) }) async throws -> ATSDiagnosticsReport {
        let row = try XCTUnwrap(ATSCatalog.rows().first { $0.name == name })
        return await ATSDiagnostics().run(url: row.url, handshaker: handshaker(row.facts))
    }

    func testGroupHeadingsAreFollowedByABlankLineAsInNscurl() async throws {
        let text = try await report("tls-v1-0").text()
        XCTAssertTrue(text.contains("\n\nDefault ATS Secure Connection\n---\nATS Default Connection\n"), text)
        XCTAssertTrue(text.contains("\n\nAllowing Arbitrary Loads\n\n---\nAllow All Loads\n"), text)
        XCTAssertTrue(text.contains("\n\nConfiguring TLS exceptions for tls-v1-0.fixtures.test\n\n---\nTLSv1.3\n"), text)
        XCTAssertTrue(text.contains("\n\nConfiguring PFS exceptions for tls-v1-0.fixtures.test\n\n---\n"), text)
    }

    func testNestedDictionariesAreIndentedAsNSDictionaryPrintsThem() async throws {
        let text = try await report("tls-v1-0").text(verbose: true)
        XCTAssertTrue(text.contains("""
        ATS Dictionary:
        {
            NSExceptionDomains =     {
                "tls-v1-0.fixtures.test" =         {
                    NSExceptionMinimumTLSVersion = "TLSv1.0";
                };
            };
        }
        Result : PASS
        """), text)
    }

    func testErrorsReadAsNscurlPrintsThem() async throws {
        let text = try await report("tls-v1-0").text(verbose: true)
        XCTAssertTrue(text.contains("""
        ATS Default Connection
        ATS Dictionary:
        {
        }
        Result : FAIL
        Error : Error Domain=NSURLErrorDomain Code=-1200 "An SSL error has occurred and a secure connection to the server \
        cannot be made." UserInfo={_kCFStreamErrorCodeKey=-9836,
        """), text)
        XCTAssertTrue(text.contains("NSLocalizedDescription=An SSL error has occurred and a secure connection to the server cannot be made."), text)
        XCTAssertTrue(text.contains("NSErrorFailingURLKey=https://tls-v1-0.fixtures.test:8443/"), text)
    }

    func testTheHeaderSaysWhichSystemIsModelled() async throws {
        let text = try await report("ats-compliant").text()
        XCTAssertTrue(text.contains("iOS 17+"), text)
        let ios26 = await ATSDiagnostics(options: ATSEvaluationOptions(profile: ATSOSProfile(parsing: "26")!))
            .run(url: ATSFactsKit.url("https://tls-v1-0.fixtures.test:8443/"), handshaker: ATSFakeServer(ATSFactsKit.speaking("tls-v1-0.fixtures.test", ATSFactsKit.tls10Only)))
        XCTAssertTrue(ios26.text().contains("iOS 26"), ios26.text())
        XCTAssertTrue(ios26.results.allSatisfy { !$0.passed }, "TLS 1.0 has no fix on iOS 26")
    }

    /// A server that demands a client certificate: the handshake may complete (TLS 1.3 finishes on the client's side
    /// first), but the load fails, so every configuration FAILs with NSURLErrorClientCertificateRequired.
    func testAServerThatDemandsAClientCertificateFailsEveryConfiguration() async throws {
        struct ClientCertificateServer: ATSHandshaker {
            func handshake(_ offer: ATSClientOffer, url: URL) async -> ATSHandshakeOutcome {
                .failure(reason: "the server rejected the session after the handshake: tlsv13 alert certificate required")
            }
        }
        let url = ATSFactsKit.url("https://client-cert-required.fixtures.test:8443/")
        let report = await ATSDiagnostics().run(url: url, handshaker: ClientCertificateServer())
        XCTAssertEqual(report.results.count, 16)
        XCTAssertTrue(report.results.allSatisfy { !$0.passed })
        let text = report.text(verbose: true)
        XCTAssertEqual(text.components(separatedBy: "Result : FAIL").count - 1, 16, text)
        XCTAssertTrue(text.contains("Error : Error Domain=NSURLErrorDomain Code=-1206 \"The server \u{201C}client-cert-required.fixtures.test\u{201D} requires a client certificate.\""), text)
    }

    /// `--json` has a designed shape: no Swift enum encoding (`{"success": {"_0": …}}`), a PASS/FAIL per configuration,
    /// the error as code, message and stream code.
    func testJSONHasADesignedShape() async throws {
        let report = try await report("tls-v1-0")
        let json = try report.jsonData()
        let text = String(decoding: json, as: UTF8.self)
        XCTAssertFalse(text.contains("\"_0\""), text)
        XCTAssertFalse(text.contains("\"success\" : {"), text)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any])
        XCTAssertEqual((object["profile"] as? [String: Any])?["id"] as? String, "ios17")
        let results = try XCTUnwrap(object["results"] as? [[String: Any]])
        XCTAssertEqual(results.count, 16)
        let first = results[0]
        XCTAssertEqual(first["name"] as? String, "ATS Default Connection")
        XCTAssertEqual(first["result"] as? String, "FAIL")
        let error = try XCTUnwrap(first["error"] as? [String: Any])
        XCTAssertEqual(error["domain"] as? String, "NSURLErrorDomain")
        XCTAssertEqual(error["code"] as? Int, -1200)
        XCTAssertEqual(error["streamErrorCode"] as? Int, -9836)
        XCTAssertTrue((error["nsError"] as? String)?.hasPrefix("Error Domain=NSURLErrorDomain Code=-1200") == true)
        let handshake = try XCTUnwrap(first["handshake"] as? [String: Any])
        XCTAssertEqual(handshake["completed"] as? Bool, false)
        let passing = results[5]
        XCTAssertEqual(passing["result"] as? String, "PASS")
        XCTAssertTrue(passing["error"] == nil || passing["error"] is NSNull)
        XCTAssertEqual((passing["handshake"] as? [String: Any])?["version"] as? String, "TLSv1.0")
    }
}
