import Foundation
import TLSFixtures

/// The two scenarios the throughput benchmarks serve, built in code (peers get the same certificate, key,
/// protocol and cipher).
enum BenchScenario: String, CaseIterable {
    /// TLS 1.2 only, ECDHE-RSA-AES128-GCM-SHA256, RSA-2048 leaf.
    case tls12 = "bench-tls12"
    /// TLS 1.0 only, AES128-SHA (static RSA key exchange), RSA-1024 leaf: the weak path.
    case tls10 = "bench-tls10"

    var scenario: Scenario {
        var tls = TLSPlan()
        var certificate = CertificatePlan()
        switch self {
        case .tls12:
            tls.minVersion = .tls1_2; tls.maxVersion = .tls1_2
            tls.ciphers = cipher
            certificate.key = .rsa(bits: 2048)
        case .tls10:
            tls.minVersion = .tls1_0; tls.maxVersion = .tls1_0
            tls.ciphers = cipher
            tls.securityLevel = 0
            certificate.key = .rsa(bits: 1024)
        }
        return Scenario(name: rawValue, group: .custom, summary: "benchmark: \(protocolName) \(cipher) \(keyName)",
                        tls: tls, certificate: certificate, expect: Expectations(verify: nil, ats: .notApplicable))
    }

    var cipher: String { self == .tls12 ? "ECDHE-RSA-AES128-GCM-SHA256" : "AES128-SHA" }
    var protocolName: String { self == .tls12 ? "TLSv1.2" : "TLSv1" }
    var keyName: String { self == .tls12 ? "RSA-2048" : "RSA-1024" }
    var protocolLabel: String { self == .tls12 ? "TLS 1.2" : "TLS 1.0" }
    /// `openssl speed`'s name for the signing operation each full handshake costs.
    var speedName: String { self == .tls12 ? "rsa2048" : "rsa1024" }
    /// The protocol as `openssl s_server`/`s_client` take it.
    var openSSLVersionFlag: String { self == .tls12 ? "-tls1_2" : "-tls1" }
    /// The cipher string for an OpenSSL-based peer, at the security level the scenario serves with.
    var openSSLCipherString: String { securityLevel == 0 ? cipher + ":@SECLEVEL=0" : cipher }
    var version: TLSVersion { self == .tls12 ? .tls1_2 : .tls1_0 }
    /// The client side needs security level 0 for TLS 1.0 too.
    var securityLevel: Int32 { self == .tls12 ? 1 : 0 }
}
