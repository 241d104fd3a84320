import Foundation
import Testing
@testable import TLSFixtures

/// `openssl verify` is the judge: good chains pass, each broken one fails with OpenSSL's own words.
@Suite("Chains judged by openssl verify", .requires(Tools.openssl), .ownThreads)
struct OpenSSLVerifyTests {
    static let ca = try! CertificateAuthority.ephemeral()

    /// Runs `openssl verify -CAfile root [-untrusted intermediates] leaf` and returns (passed, output).
    func verify(_ credential: Credential, trusting root: Certificate = ca.certificate, extra: [String] = []) throws -> (Bool, String) {
        let rootFile = try TestEnvironment.file(root.pem)
        let leafFile = try TestEnvironment.file(credential.certificate.pem)
        var arguments = ["verify", "-CAfile", rootFile] + extra
        if !credential.intermediates.isEmpty {
            arguments += ["-untrusted", try TestEnvironment.file(Certificate.pem(credential.intermediates))]
        }
        let result = try TestEnvironment.openssl(arguments + [leafFile])
        return (result.status == 0 && result.stdout.contains(": OK"), result.combined)
    }

    func server(_ configure: (inout CertificateProfile) -> Void = { _ in }) throws -> CertificateProfile {
        var profile = try CertificateProfile.server(hosts: ["localhost", "127.0.0.1"])
        configure(&profile)
        return profile
    }

    @Test("a good leaf verifies, also with hostname and purpose checks")
    func good() throws {
        let credential = try Self.ca.issue(try server())
        let (ok, output) = try verify(credential, extra: ["-verify_hostname", "localhost", "-purpose", "sslserver"])
        #expect(ok, "\(output)")
    }

    @Test("a chain through an intermediate verifies")
    func intermediate() throws {
        let intermediate = try Self.ca.intermediate(commonName: "Intermediate")
        let credential = try intermediate.issue(try server())
        #expect(credential.intermediates.count == 1)
        let (ok, output) = try verify(credential)
        #expect(ok, "\(output)")
    }

    @Test("broken chains fail with OpenSSL's reason", arguments: [
        ("expired", "certificate has expired"),
        ("not yet valid", "certificate is not yet valid"),
        ("self-signed", "self-signed certificate"),
        ("outside the name constraints", "permitted subtree violation"),
        ("from an unknown CA", "unable to get local issuer certificate"),
        ("wrong host", "hostname mismatch"),
    ])
    func broken(kind: String, reason: String) throws {
        var extra: [String] = []
        let credential: Credential
        switch kind {
        case "expired":
            credential = try Self.ca.issue(try server { $0.validity = Validity(notBefore: .daysFromNow(-10), notAfter: .daysFromNow(-1)) })
        case "not yet valid":
            credential = try Self.ca.issue(try server { $0.validity = Validity(notBefore: .daysFromNow(10), notAfter: .daysFromNow(100)) })
        case "self-signed":
            credential = try CertificateAuthority.selfSigned(try server(), key: try KeySpec.ec(.p256).generate())
        case "outside the name constraints":
            credential = try Self.ca.issue(try CertificateProfile.server(hosts: ["www.example.com"]))
        case "from an unknown CA":
            credential = try CertificateAuthority.ephemeral().issue(try server())
        default:
            credential = try Self.ca.issue(try CertificateProfile.server(hosts: ["wrong.host.invalid"]))
            extra = ["-verify_hostname", "localhost"]
        }
        let (ok, output) = try verify(credential, extra: extra)
        #expect(!ok)
        #expect(output.contains(reason), "\(kind): \(output)")
    }
}
