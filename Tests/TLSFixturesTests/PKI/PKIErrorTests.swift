import Foundation
import Testing
@testable import TLSFixtures

/// Issue 14: the PKI layer's errors carry a stable code, checked here by code (never by matching their text), and speak
/// the library's language: an XCTest user has no flags to pass, so no description names one.
@Suite("PKI errors: codes and reasons")
struct PKIErrorTests {
    /// The error `body` throws, which must be a `PKIError` with `code`; its text must name no command-line flag.
    @discardableResult
    static func expectCode(_ code: PKIError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> PKIError? {
        let error = #expect(throws: PKIError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == code, "\(String(reflecting: error))", sourceLocation: sourceLocation)
        if let error {
            #expect(!error.description.contains("--"), "a flag in a library error: \(error)", sourceLocation: sourceLocation)
            #expect(!error.description.contains("\n"), sourceLocation: sourceLocation)
            #expect(error.localizedDescription == error.description, sourceLocation: sourceLocation)
        }
        return error
    }

    @Test("key specs and digests")
    func keySpecsAndDigests() {
        Self.expectCode(.invalidKeySpec) { _ = try KeySpec(parsing: "dsa:1024") }
        Self.expectCode(.invalidKeySpec) { _ = try KeySpec(parsing: "rsa:100") }
        let digest = Self.expectCode(.invalidDigest) { _ = try SignatureDigest(parsing: "sha3") }
        #expect(digest?.subject == "sha3")
    }

    @Test("certificate requests name the property to change, not a flag")
    func requests() throws {
        var request = CertificateRequest(name: "nohost")
        let missing = Self.expectCode(.missingHost) { _ = try request.profile() }
        #expect(missing?.fix?.contains("omitSubjectAltNames") == true)
        request.omitSubjectAltNames = true
        _ = try request.profile()

        var constrained = CertificateRequest(name: "constrained")
        constrained.hosts = ["a.test"]
        constrained.permitted = ["a.test"]
        Self.expectCode(.requiresCA) { _ = try constrained.profile() }
        constrained.permitted = []
        constrained.pathLength = 0
        Self.expectCode(.requiresCA) { _ = try constrained.profile() }
        constrained.isCA = true
        _ = try constrained.profile()

        Self.expectCode(.invalidUsage) { _ = try CertificateRequest.parseExtendedKeyUsage(["flying"]) }
        Self.expectCode(.invalidUsage) { _ = try CertificateRequest.parseKeyUsage(["flying"]) }
        Self.expectCode(.invalidIssuer) { _ = try CertificateRequest.parseIssuer("nobody") }
        Self.expectCode(.invalidHost) { _ = try SubjectAltName(host: "bad host,DNS:evil") }
        Self.expectCode(.invalidNameConstraint) { _ = try NameConstraints(permitted: [".a.test"]).configText() }
        Self.expectCode(.invalidValidity) { _ = try Moment(parsing: "yesterday") }
        Self.expectCode(.invalidValidity) { try Moment.daysFromNow(Int.max).check("notAfter") }
        Self.expectCode(.tooManyNames) { try CertificateProfile.checkNameCount(CertificateProfile.maximumSubjectAltNames + 1) }
    }

    @Test("signing: an empty subjectAltName and a digest the issuer's key cannot sign with")
    func signing() throws {
        let ecCA = try CertificateAuthority.ephemeral(key: .ec(.p256))
        let edCA = try CertificateAuthority.ephemeral(key: .ed25519)
        var profile = CertificateProfile(subject: Subject(commonName: "x"), subjectAltNames: [])
        let empty = Self.expectCode(.emptySubjectAltNames) { _ = try ecCA.issue(profile) }
        #expect(empty?.fix?.contains("subjectAltNames") == true)
        profile.subjectAltNames = [try SubjectAltName(host: "a.test")]
        profile.digest = .md5
        Self.expectCode(.digestNotSignable) { _ = try ecCA.issue(profile) }
        profile.digest = .sha1
        Self.expectCode(.digestNotSignable) { _ = try edCA.issue(profile) }
        // The control: the same profile is signed with a digest each issuer's key can use.
        profile.digest = .sha256
        _ = try ecCA.issue(profile)
        _ = try edCA.issue(profile)
    }

    @Test("the store: an existing CA, paths inside it, exports that would replace a file, a damaged CA")
    func store() throws {
        let directory = TestEnvironment.temporaryDirectory("pkierrors").appendingPathComponent("store")
        let store = CertificateStore(directory: directory)
        try store.initializeCA()
        let exists = Self.expectCode(.caExists) { try store.initializeCA() }
        #expect(exists?.fix?.contains("ifExists: .replace") == true)
        #expect(try store.initializeCA(ifExists: .keep).created == false)

        Self.expectCode(.insideStore) { try store.requireOutside(directory.appendingPathComponent("exports/x.pem")) }

        let out = TestEnvironment.temporaryDirectory("pkierrors-out").appendingPathComponent("ca.pem")
        try ExportWriter.write(Data("one".utf8), to: out, force: false)
        let replaced = Self.expectCode(.fileExists) { try ExportWriter.write(Data("two".utf8), to: out, force: false) }
        #expect(replaced?.subject == out.path)
        try ExportWriter.write(Data("two".utf8), to: out, force: true)

        let notAFolder = TestEnvironment.temporaryDirectory("pkierrors-file").appendingPathComponent("store")
        try Data("x".utf8).write(to: notAFolder)
        Self.expectCode(.storeUnavailable) { _ = try CertificateStore(directory: notAFolder).ca() }

        let damaged = TestEnvironment.temporaryDirectory("pkierrors-damaged").appendingPathComponent("store")
        try CertificateStore(directory: damaged).initializeCA()
        try Data("not a certificate".utf8).write(to: CertificateStore(directory: damaged).certificatePath(.root))
        let error = Self.expectCode(.damagedCA) { _ = try CertificateStore(directory: damaged).existingCA() }
        #expect(error?.subject == CertificateStore(directory: damaged).certificatePath(.root).path)
    }

    @Test("equality is the code's, as CertificateError's is; file and line are kept for debugging only")
    func equality() {
        let one = PKIError(code: .noCA, reason: "one")
        let other = PKIError(code: .noCA, reason: "other", fix: "something")
        #expect(one == other && one.hashValue == other.hashValue)
        #expect(one != PKIError(code: .caExists, reason: "one"))
        #expect(one.description == "one" && other.description == "other; something")
        #expect(String(reflecting: one).hasPrefix("PKIError.noCA: one (TLSFixturesTests/PKIErrorTests.swift:"))
        #expect(PKIError.Code.untrustedStoreFile.description == "untrustedStoreFile")
    }

    @Test("other layers' errors speak the library's language too")
    func otherLayers() {
        for error in [FixtureError.portInUse(port: 9810, address: "127.0.0.1") as any Error,
                      ScenarioError.certificateNameTaken("pinned"), ScenarioError.portTaken("a.json", 9800, "the dashboard"),
                      FixtureDomainError.invalid("a..b", "no empty labels"), FixtureDomainError.notPermitted("x.example", permitted: ["test"]),
                      SimulatorTrustError.nothingBooted(known: 2)] {
            #expect(!"\(error)".contains("--"), "a flag in a library error: \(error)")
        }
    }
}
