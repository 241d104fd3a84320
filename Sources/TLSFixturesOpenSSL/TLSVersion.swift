import COpenSSL
import TLSFixturesWire

extension TLSVersion {
    /// OpenSSL's wire constant (`TLS1_2_VERSION`, …).
    public var openSSLValue: Int32 {
        switch self {
        case .ssl3: return SSL3_VERSION
        case .tls1_0: return TLS1_VERSION
        case .tls1_1: return TLS1_1_VERSION
        case .tls1_2: return TLS1_2_VERSION
        case .tls1_3: return TLS1_3_VERSION
        }
    }

    /// What `SSL_get_version` prints (`TLSv1`, `TLSv1.2`), which is also what `openssl s_client`
    /// and Python's `ssl` report.
    public var openSSLName: String {
        switch self {
        case .ssl3: return "SSLv3"
        case .tls1_0: return "TLSv1"
        case .tls1_1: return "TLSv1.1"
        case .tls1_2: return "TLSv1.2"
        case .tls1_3: return "TLSv1.3"
        }
    }

    /// The version for OpenSSL's constant (`TLS1_2_VERSION`); nil for a value it does not name.
    public init?(openSSLValue: Int32) {
        guard let match = Self.allCases.first(where: { $0.openSSLValue == openSSLValue }) else { return nil }
        self = match
    }
}
