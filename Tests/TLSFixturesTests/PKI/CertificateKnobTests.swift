import Foundation
import Testing
@testable import TLSFixtures

/// Every profile knob, judged by `openssl x509 -text` rather than by our own reader.
@Suite("Certificate profiles, checked with openssl x509", .requires(Tools.openssl), .ownThreads)
struct CertificateKnobTests {
    static let ca = try! CertificateAuthority.ephemeral()

    func text(_ certificate: Certificate) throws -> String {
        let result = try TestEnvironment.openssl(["x509", "-noout", "-text"], stdin: certificate.pem)
        #expect(result.status == 0, "openssl x509 failed: \(result.stderr)")
        return result.stdout
    }

    func server(_ hosts: [String] = ["localhost"], configure: (inout CertificateProfile) -> Void = { _ in }) throws -> CertificateProfile {
        var profile = try CertificateProfile.server(hosts: hosts)
        configure(&profile)
        return profile
    }

    // The strings on the right are how OpenSSL prints each key type (openssl-x509(1) -text).
    @Test("key types and sizes", arguments: [
        ("rsa:512", ["rsaEncryption", "Public-Key: (512 bit)"]),
        ("rsa:1024", ["rsaEncryption", "Public-Key: (1024 bit)"]),
        ("rsa:2048", ["rsaEncryption", "Public-Key: (2048 bit)"]),
        ("ec:p224", ["id-ecPublicKey", "secp224r1"]),
        ("ec:p256", ["id-ecPublicKey", "prime256v1"]),
        ("ec:p384", ["id-ecPublicKey", "secp384r1"]),
        ("ec:p521", ["id-ecPublicKey", "secp521r1"]),
        ("ed25519", ["ED25519"]),
    ])
    func keyTypes(spec: String, expected: [String]) throws {
        let credential = try Self.ca.issue(try server(), keySpec: try KeySpec(parsing: spec))
        let printed = try text(credential.certificate)
        for fragment in expected { #expect(printed.contains(fragment), "\(spec): missing \(fragment)") }
    }

    @Test("signature digests, including MD5 and SHA-1", arguments: [
        (SignatureDigest.md5, "md5WithRSAEncryption"),
        (.sha1, "sha1WithRSAEncryption"), (.sha224, "sha224WithRSAEncryption"), (.sha256, "sha256WithRSAEncryption"),
        (.sha384, "sha384WithRSAEncryption"), (.sha512, "sha512WithRSAEncryption"),
    ])
    func rsaDigests(digest: SignatureDigest, algorithm: String) throws {
        let rsaCA = try CertificateAuthority.ephemeral(key: .rsa(bits: 2048))
        let credential = try rsaCA.issue(try server { $0.digest = digest }, keySpec: .ec(.p256))
        #expect(try text(credential.certificate).contains("Signature Algorithm: \(algorithm)"))
    }

    @Test("ECDSA digests", arguments: [(SignatureDigest.sha1, "ecdsa-with-SHA1"), (.sha384, "ecdsa-with-SHA384"), (.sha512, "ecdsa-with-SHA512")])
    func ecdsaDigests(digest: SignatureDigest, algorithm: String) throws {
        let credential = try Self.ca.issue(try server { $0.digest = digest }, keySpec: .ec(.p256))
        #expect(try text(credential.certificate).contains("Signature Algorithm: \(algorithm)"))
    }

    @Test("MD5 with an EC issuer is refused with the way out")
    func md5NeedsRSA() throws {
        let error = #expect(throws: PKIError.self) { try Self.ca.issue(try server { $0.digest = .md5 }, keySpec: .ec(.p256)) }
        #expect(error?.code == .digestNotSignable)
        #expect(error?.fix?.contains("RSA issuer") == true, "no way out named: \(String(describing: error))")
    }

    @Test("DNS and IP subject alternative names, IPv6 included")
    func subjectAltNames() throws {
        let credential = try Self.ca.issue(try server(["localhost", "127.0.0.1", "::1", "api.fixtures.test"]))
        let printed = try text(credential.certificate)
        #expect(printed.contains("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:api.fixtures.test"))
    }

    @Test("a thousand SANs")
    func thousandSANs() throws {
        let hosts = (0..<1000).map { "n\($0).many.test" }
        let credential = try Self.ca.issue(try server(hosts))
        let printed = try text(credential.certificate)
        let count = printed.components(separatedBy: "DNS:").count - 1
        #expect(count == 1000)
    }

    @Test("no SAN extension at all")
    func noSAN() throws {
        let credential = try Self.ca.issue(try server { $0.subjectAltNames = nil })
        let printed = try text(credential.certificate)
        #expect(!printed.contains("Subject Alternative Name"))
        #expect(printed.contains("CN = localhost"))
    }

    @Test("common name absent and empty")
    func commonNames() throws {
        let absent = try Self.ca.issue(try server { $0.subject.commonName = nil })
        #expect(try text(absent.certificate).contains("Subject: O = swift-tls-fixtures\n"))
        let empty = try Self.ca.issue(try server { $0.subject.commonName = "" })
        #expect(try text(empty.certificate).contains("Subject: O = swift-tls-fixtures, CN = \n"))
    }

    @Test("extended key usage: server, client, both, none", arguments: [
        ([ExtendedKeyUsage.serverAuth], ["TLS Web Server Authentication"], ["TLS Web Client Authentication"]),
        ([.clientAuth], ["TLS Web Client Authentication"], ["TLS Web Server Authentication"]),
        ([.serverAuth, .clientAuth], ["TLS Web Server Authentication, TLS Web Client Authentication"], []),
    ])
    func extendedKeyUsage(usages: [ExtendedKeyUsage], present: [String], absent: [String]) throws {
        let printed = try text(try Self.ca.issue(try server { $0.extendedKeyUsage = usages }).certificate)
        for fragment in present { #expect(printed.contains(fragment)) }
        for fragment in absent { #expect(!printed.contains(fragment)) }
    }

    @Test("no EKU extension")
    func noEKU() throws {
        let printed = try text(try Self.ca.issue(try server { $0.extendedKeyUsage = nil }).certificate)
        #expect(!printed.contains("Extended Key Usage"))
    }

    @Test("validity relative to now: already expired, not yet valid, valid")
    func relativeValidity() throws {
        let expired = try Self.ca.issue(try server { $0.validity = Validity(notBefore: .daysFromNow(-30), notAfter: .daysFromNow(-1)) })
        // `-checkend 0` exits non-zero when the certificate has already expired.
        #expect(try TestEnvironment.openssl(["x509", "-noout", "-checkend", "0"], stdin: expired.certificate.pem).status != 0)
        let valid = try Self.ca.issue(try server())
        #expect(try TestEnvironment.openssl(["x509", "-noout", "-checkend", "86400"], stdin: valid.certificate.pem).status == 0)
        let printed = try text(valid.certificate)
        #expect(printed.contains("Not Before"))
        let days = valid.certificate.notAfter.timeIntervalSince(valid.certificate.notBefore) / 86_400
        #expect(Int(days.rounded()) == 397)
    }

    @Test("absolute validity dates")
    func absoluteValidity() throws {
        let profile = try server {
            $0.validity = Validity(notBefore: try! Moment(parsing: "2030-01-01"), notAfter: try! Moment(parsing: "2031-06-15T12:00:00Z"))
        }
        let printed = try text(try Self.ca.issue(profile).certificate)
        #expect(printed.contains("Not Before: Jan  1 00:00:00 2030 GMT"))
        #expect(printed.contains("Not After : Jun 15 12:00:00 2031 GMT"))
    }

    @Test("key usage, basic constraints with path length, name constraints")
    func constraints() throws {
        var profile = CertificateProfile.authority(commonName: "Sub CA", pathLength: 2,
                                                   nameConstraints: NameConstraints(permitted: ["corp.test", "10.0.0.0/8"], excluded: ["bad.corp.test"]))
        profile.keyUsage = [.keyCertSign, .cRLSign]
        let printed = try text(try Self.ca.issue(profile).certificate)
        #expect(printed.contains("CA:TRUE, pathlen:2"))
        #expect(printed.contains("Certificate Sign, CRL Sign"))
        #expect(printed.contains("DNS:corp.test"))
        #expect(printed.contains("IP:10.0.0.0/255.0.0.0"))
        #expect(printed.contains("Excluded:"))
        let leaf = try text(try Self.ca.issue(try server()).certificate)
        #expect(leaf.contains("CA:FALSE"))
        #expect(leaf.contains("Digital Signature"))
    }

    @Test("the built-in root is name-constrained to local names by default")
    func rootNameConstraints() throws {
        let printed = try text(Self.ca.certificate)
        for fragment in ["DNS:localhost", "DNS:test", "DNS:example", "DNS:invalid",
                         "IP:127.0.0.0/255.0.0.0", "IP:0:0:0:0:0:0:0:1/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF"] {
            #expect(printed.contains(fragment), "missing \(fragment)")
        }
        let open = try CertificateAuthority.ephemeral(nameConstraints: nil)
        #expect(!(try text(open.certificate)).contains("Name Constraints"))
    }

    @Test("self-signed: issuer equals subject")
    func selfSigned() throws {
        let credential = try CertificateAuthority.selfSigned(try server(), key: try KeySpec.ec(.p256).generate())
        let result = try TestEnvironment.openssl(["x509", "-noout", "-subject", "-issuer", "-nameopt", "RFC2253"], stdin: credential.certificate.pem)
        let lines = result.stdout.split(separator: "\n").map { $0.split(separator: "=", maxSplits: 1).last.map(String.init) ?? "" }
        #expect(lines.count == 2 && lines[0] == lines[1])
    }

    @Test("our reader agrees with openssl on pins and fingerprints")
    func pinsAndFingerprints() throws {
        let credential = try Self.ca.issue(try server())
        let pem = try TestEnvironment.file(credential.certificate.pem)
        // The SPKI pin as every pinning guide computes it: pubkey → DER → SHA-256 → base64.
        let pipeline = try Subprocess.run(["sh", "-c",
            "openssl x509 -in '\(pem)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
        #expect(pipeline.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == credential.certificate.spkiSHA256)
        #expect(try credential.privateKey.spkiSHA256 == credential.certificate.spkiSHA256)
        let fingerprint = try TestEnvironment.openssl(["x509", "-in", pem, "-noout", "-fingerprint", "-sha256"])
        #expect(fingerprint.stdout.contains(credential.certificate.sha256Fingerprint.colonHex))
    }

    @Test("exports: DER and PKCS#12 read back by openssl")
    func exports() throws {
        let credential = try Self.ca.issue(try server())
        let der = try TestEnvironment.file(credential.certificate.der, name: "c.cer")
        let parsed = try TestEnvironment.openssl(["x509", "-inform", "der", "-in", der, "-noout", "-subject"])
        #expect(parsed.status == 0 && parsed.stdout.contains("CN = localhost"))

        let p12 = try PKCS12Export.archive(certificate: credential.certificate, key: credential.privateKey,
                                           chain: [Self.ca.certificate], friendlyName: "leaf")
        let file = try TestEnvironment.file(p12, name: "c.p12")
        let info = try TestEnvironment.openssl(["pkcs12", "-in", file, "-passin", "pass:\(PKCS12Export.defaultPassword)", "-info", "-nodes"])
        #expect(info.status == 0, "\(info.stderr)")
        // The legacy profile Apple's importers accept (see PKCS12Export).
        #expect(info.stderr.contains("MAC: sha1"))
        #expect(info.stderr.contains("pbeWithSHA1And3-KeyTripleDES-CBC"))
        #expect(info.stdout.contains("BEGIN PRIVATE KEY"))
        #expect(info.stdout.components(separatedBy: "BEGIN CERTIFICATE").count - 1 == 2)
        let wrong = try TestEnvironment.openssl(["pkcs12", "-in", file, "-passin", "pass:wrong", "-noout"])
        #expect(wrong.status != 0)
    }
}
