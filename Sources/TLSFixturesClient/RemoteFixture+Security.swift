#if canImport(Security)
import Foundation
import Security

// On Apple platforms the certificates also come as Security's own type, under the names the in-process
// `FixtureServer` uses for OpenSSL's: what `SecTrustSetAnchorCertificates` and Alamofire's evaluators take.
extension RemoteFixture {
    /// The built-in CA.
    public var caCertificate: SecCertificate? {
        caCertificateDER.flatMap { SecCertificateCreateWithData(nil, $0 as CFData) }
    }

    /// The certificates the server sends, leaf first.
    public var chain: [SecCertificate] { chainDER.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) } }
}
#endif
