import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSFixtures

/// The differential check with real clients on real fixtures: curl (OpenSSL's verifier, libcurl's host-name and pin
/// checks after the handshake), `openssl s_client` (which verifies nothing) and URLSession (FoundationNetworking, over
/// cleartext, where no trust is needed). Each case of issue 34 that went green for the wrong reason fails here, saying
/// which half failed; each right refusal passes at its step.
@Suite("The differential check, live: the control accepted, the scenario refused at its step")
struct DifferentialEndToEndTests {
    static let store = TestEnvironment.suiteStore("Differential")

    static func caFile() throws -> String {
        try TestEnvironment.file(try store.ca().certificate.pem, name: "ca.pem")
    }

    static func trusting() throws -> CurlLoad { CurlLoad(trusting: [try caFile()]) }

    @Test("curl trusting the CA refuses expired at the certificate, and accepts ats-compliant", .requires(Tools.curl))
    func curlRefusesExpired() async throws {
        let verdict = try await FixtureServer.expectRefused("expired", store: Self.store, try Self.trusting().load)
        #expect(verdict.control == "ats-compliant" && verdict.step == .certificate)
        // OpenSSL's alert for X509_V_ERR_CERT_HAS_EXPIRED (ssl/statem/statem_lib.c, ssl_x509err2alert).
        #expect(verdict.refusalEvidence.contains("certificate_expired(45)"), "\(verdict)")
        #expect(verdict.controlEvidence.contains("GET / was answered 200"), "\(verdict)")
    }

    @Test("a client that does not trust the CA fails on the control half, told to install it", .requires(Tools.curl))
    func untrustedCA() async throws {
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("expired", store: Self.store, CurlLoad().load)
        }
        #expect(failure?.code == .controlRefused, "\(String(describing: failure))")
        #expect(failure?.reason.contains("your client refuses the control too") == true)
        #expect(failure?.reason.contains("unknown_ca(48)") == true, "\(String(describing: failure))")
        #expect(failure?.fix?.contains("tls-fixtures ca install") == true)
    }

    @Test("curl -k accepts expired: the failure says the client accepted it", .requires(Tools.curl))
    func insecureAccepts() async throws {
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("expired", store: Self.store, CurlLoad(insecure: true).load)
        }
        #expect(failure?.code == .accepted && failure?.reason.contains("your client accepted expired") == true,
                "\(String(describing: failure))")
    }

    /// Issue 34, case 2: `openssl s_client` verifies nothing and sends no request, and the load then throws.
    @Test("openssl s_client, which verifies nothing, refuses nothing", .requires(Tools.openssl))
    func sClientVerifiesNothing() async throws {
        struct Threw: Error {}
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("expired", store: Self.store) { url in
                _ = try await Subprocess.runAwaiting(["openssl", "s_client", "-connect", "localhost:\(url.port!)",
                                                      "-servername", "localhost"], timeout: 60)
                throw Threw()
            }
        }
        #expect(failure?.code == .controlRefused, "\(String(describing: failure))")
        #expect(failure?.reason.contains("completed the handshake") == true, "\(String(describing: failure))")
        // The single-fixture form on a fixture of its own cannot tell it from a pin check: unproven, not green.
        try await withFixture("expired", store: Self.store) { fixture in
            let unproven = await #expect(throws: LoadExpectationFailure.self) {
                try await fixture.expectRefused {
                    _ = try await Subprocess.runAwaiting(["openssl", "s_client", "-connect", "localhost:\(fixture.port)",
                                                          "-servername", "localhost"], timeout: 60)
                    throw Threw()
                }
            }
            #expect(unproven?.code == .unproven, "\(String(describing: unproven))")
        }
    }

    @Test("a pinning client refuses pin-rotated-key after the handshake and accepts pinned; no pin accepts both",
          .requires(Tools.curl))
    func pins() async throws {
        let pinned = try await FixtureServer.start("pinned", store: Self.store)
        let pin = pinned.pins.leaf
        await pinned.stop()
        var pinning = try Self.trusting()
        pinning.pinnedKey = pin
        let verdict = try await FixtureServer.expectRefused("pin-rotated-key", store: Self.store, pinning.load)
        #expect(verdict.control == "pinned" && verdict.step == .afterHandshake, "\(verdict)")
        // Issue 34, case 1: a client that checks no pin accepts the scenario too, and is told so.
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("pin-rotated-key", store: Self.store, try Self.trusting().load)
        }
        #expect(failure?.code == .accepted && failure?.reason.contains("no pin was checked") == true,
                "\(String(describing: failure))")
    }

    @Test("pin-mitm: a pinning client trusting the interception root refuses it; one that does not, for another reason",
          .requires(Tools.curl))
    func interception() async throws {
        let pinned = try await FixtureServer.start("pinned", store: Self.store)
        let pin = pinned.pins.leaf
        await pinned.stop()
        let roots = try CurlLoad.bundle([try Self.store.ca().certificate.pem,
                                         try Self.store.authority(.interceptionRoot).certificate.pem])
        let verdict = try await FixtureServer.expectRefused(
            "pin-mitm", store: Self.store, CurlLoad(trusting: [roots], pinnedKey: pin).load)
        #expect(verdict.refusalEvidence.contains("without sending a request"), "\(verdict)")
        var untrusting = try Self.trusting()
        untrusting.pinnedKey = pin
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("pin-mitm", store: Self.store, untrusting.load)
        }
        #expect(failure?.code == .refusedForAnotherReason && failure?.reason.contains("unknown_ca(48)") == true,
                "\(String(describing: failure))")
    }

    /// libcurl matches the host name itself, after `SSL_connect` (lib/vtls/openssl.c, ossl_verifyhost): wrong-host's
    /// file names it (`lateCheck`), so its close after the handshake counts, with a note.
    @Test("wrong-host: curl's host-name check after the handshake counts, by the scenario's lateCheck, with a note",
          .requires(Tools.curl))
    func lateHostNameCheck() async throws {
        let verdict = try await FixtureServer.expectRefused("wrong-host", store: Self.store, try Self.trusting().load)
        #expect(verdict.step == .certificate)
        #expect(verdict.refusalEvidence.contains("the handshake completed"), "\(verdict)")
        #expect(verdict.notes.contains { $0.contains("libcurl") && $0.contains("ossl_verifyhost") }, "\(verdict)")
    }

    @Test("the negotiation and client-certificate steps: tls-v1-0 and client-cert-required", .requires(Tools.curl))
    func serverSideSteps() async throws {
        let version = try await FixtureServer.expectRefused("tls-v1-0", store: Self.store, try Self.trusting().load)
        // Debian's curl offers TLS 1.0 but its OpenSSL refuses the server's legacy signature: internal_error(80)
        // after the server's flight; a client that does not offer TLS 1.0 gets the server's protocol_version(70).
        #expect(version.step == .negotiation, "\(version)")
        #expect(version.refusalEvidence.contains("internal_error(80)")
                    || version.refusalEvidence.contains("protocol_version(70)"), "\(version)")
        let certificate = try await FixtureServer.expectRefused("client-cert-required", store: Self.store,
                                                                try Self.trusting().load)
        #expect(certificate.step == .clientCertificate && certificate.refusalEvidence.contains("the server refused"),
                "\(certificate)")
    }

    @Test("http off Apple platforms: loaded and answered, so accepted, and told that only ATS refuses it",
          .requires(Tools.curl))
    func httpAccepted() async throws {
        let failure = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("http", store: Self.store, try Self.trusting().load)
        }
        #expect(failure?.code == .accepted && failure?.reason.contains("App Transport Security") == true,
                "\(String(describing: failure))")
    }

    @Test("a scenario with no refusal, and a name the catalog lacks, are refused before any fixture starts")
    func nothingToRefuse() async throws {
        let control = await #expect(throws: LoadExpectationFailure.self) {
            try await FixtureServer.expectRefused("ats-compliant", store: Self.store) { (_: URL) in }
        }
        #expect(control?.code == .noRefusal)
        await #expect(throws: ScenarioError.self) {
            try await FixtureServer.expectRefused("expird", store: Self.store) { (_: URL) in }
        }
    }

    // MARK: The single-fixture checks, with URLSession

    /// Issue 34, case 4: two `expectAccepted` in a row on one URLSession. libcurl keeps the first connection alive, so
    /// the second load opens none: the request it made is counted by its number, and its answer's stamp names it.
    @Test("two expectAccepted in a row on one URLSession, the second on the first's kept-alive connection")
    func keptAlive() async throws {
        try await withFixture("http", store: Self.store) { fixture in
            let session = URLSession(configuration: .ephemeral)
            defer { session.invalidateAndCancel() }
            try await fixture.expectAccepted { try await session.data(from: fixture.url) }
            try await fixture.expectAccepted { try await session.data(from: fixture.url) }
            let records = fixture.connections
            #expect(records.count == 1 && records.first?.requestCount == 2, "libcurl did not keep it alive: \(records)")
        }
    }

    /// Issue 34, case 3, for acceptance: the load's own answer came from another fixture, while another client's
    /// request reached this one within the window.
    @Test("an answer from another fixture fails expectAccepted, though another client's request arrived meanwhile",
          .requires(Tools.curl))
    func answeredElsewhere() async throws {
        try await withFixture("http", store: Self.store) { shared in
            try await withFixture("http", store: Self.store) { other in
                let session = URLSession(configuration: .ephemeral)
                defer { session.invalidateAndCancel() }
                let failure = await #expect(throws: LoadExpectationFailure.self) {
                    try await shared.expectAccepted {
                        _ = try await CurlLoad()(shared.url)                   // another test's client
                        return try await session.data(from: other.url)        // this load, gone elsewhere
                    }
                }
                #expect(failure?.code == .loadSucceeded && failure?.reason.contains("port \(other.port)") == true,
                        "\(String(describing: failure))")
            }
        }
    }

    /// Issue 34, case 3: a load refused before it reached the shared fixture (a name that does not resolve), while
    /// another test's client refused it within the window.
    @Test("a load that reached nothing is never credited with another client's refusal", .requires(Tools.curl))
    func othersRefusalNotCounted() async throws {
        try await withFixture("expired", store: Self.store) { shared in
            let trusting = try Self.trusting()
            let failure = await #expect(throws: LoadExpectationFailure.self) {
                try await shared.expectRefused {
                    _ = try? await trusting(shared.url)                         // another test's client refuses it
                    return try await trusting(URL(string: "https://expired.fixtures.tset:\(shared.port)/")!)
                }
            }
            #expect(failure?.code == .neverReached, "\(String(describing: failure))")
            #expect(failure?.reason.contains("another client's connection arrived, not counted") == true,
                    "\(String(describing: failure))")
            // Two refusing connections in the window, both real: which was the load's is unknown.
            let ambiguous = await #expect(throws: LoadExpectationFailure.self) {
                try await shared.expectRefused {
                    _ = try? await trusting(shared.url)
                    return try await trusting(shared.url)
                }
            }
            #expect(ambiguous?.code == .ambiguous, "\(String(describing: ambiguous))")
        }
    }
}

extension CurlLoad {
    init(trusting: [String] = [], insecure: Bool = false, pinnedKey: String?) {
        self.init(trusting: trusting, insecure: insecure, proxy: nil, pinnedKey: pinnedKey)
    }
}
