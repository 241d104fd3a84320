import COpenSSL
import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import TLSFixtures

/// The OpenSSL owners keep their promises: nothing leaks on a failed allocation, a shared context is complete when
/// built, and encodings are values or errors, never empty stand-ins.
@Suite("OpenSSL ownership", .ownThreads)
struct OpenSSLOwnershipTests {
    @Test("a failed second BIO allocation frees the first (it is not yet owned by the SSL)")
    func noBIOLeak() throws {
        let ca = try CertificateAuthority.ephemeral()
        let leaf = try ca.issueServerCertificate()
        let context = try TLSContext.server(settings: TLSSettings(), certificate: leaf.certificate, key: leaf.privateKey, chain: [])
        let made = NIOLockedValueBox<[OpaquePointer]>([])
        let freed = NIOLockedValueBox<[OpaquePointer]>([])
        var allocator = OpenSSLConnection.BIOAllocator()
        allocator.make = {
            guard made.withLockedValue({ $0.isEmpty }) else { return nil }   // the second allocation fails
            let bio = BIO_new(BIO_s_mem())!
            made.withLockedValue { $0.append(bio) }
            return bio
        }
        allocator.free = { bio in
            freed.withLockedValue { $0.append(bio) }
            BIO_free(bio)
        }
        #expect(throws: OpenSSLError.self) { try OpenSSLConnection(context: context, allocator: allocator) }
        #expect(made.withLockedValue { $0.count } == 1)
        #expect(freed.withLockedValue { $0 } == made.withLockedValue { $0 }, "the first BIO was not freed")
        // Control: with both allocations succeeding nothing is freed early (the SSL owns both).
        freed.withLockedValue { $0 = [] }
        _ = try OpenSSLConnection(context: context)
        #expect(freed.withLockedValue { $0.isEmpty })
    }

    @Test("a client context carries its ALPN from construction: the server sees http/1.1 offered and agreed")
    func alpnAtConstruction() throws {
        let offered = try TLSServerHandlerTests.Pair(alpn: ["http/1.1"])
        try offered.activate()
        try offered.handshake()
        #expect(offered.recorder.handshakes.first?.alpn == "http/1.1")
        // Control: a context made without ALPN offers none.
        let plain = try TLSServerHandlerTests.Pair()
        try plain.activate()
        try plain.handshake()
        #expect(plain.recorder.handshakes.first?.alpn == nil)
    }

    @Test("der and spkiSHA256 are the certificate's, as openssl computes them, for every key kind", arguments: ["ec:p256", "rsa:2048", "ed25519"])
    func encodingsAreReal(spec: String) throws {
        let ca = try CertificateAuthority.ephemeral()
        let certificate = try ca.issueServerCertificate(keySpec: try KeySpec(parsing: spec)).certificate
        #expect(try Certificate(der: certificate.der) == certificate)
        // openssl x509 -pubkey | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64: the pin as
        // HPKP (RFC 7469) and TrustKit compute it, every step by openssl.
        let pem = try TestEnvironment.file(certificate.pem, name: "c.pem")
        let publicKey = try TestEnvironment.openssl(["x509", "-in", pem, "-noout", "-pubkey"])
        let der = try TestEnvironment.openssl(["pkey", "-pubin", "-outform", "DER"], stdin: publicKey.stdoutData)
        #expect(!der.stdoutData.isEmpty)
        let digest = try TestEnvironment.openssl(["dgst", "-sha256", "-binary"], stdin: der.stdoutData)
        #expect(digest.stdoutData.count == 32)
        let pin = try TestEnvironment.openssl(["base64", "-A"], stdin: digest.stdoutData)
        #expect(certificate.spkiSHA256 == pin.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let fromDER = try TestEnvironment.openssl(["x509", "-in", pem, "-outform", "DER"])
        #expect(certificate.der == fromDER.stdoutData)
    }
}
