import Foundation

/// A TLS protocol version, spelled the way Apple's ATS keys spell it (`TLSv1.2`). A plain value every layer shares —
/// the ATS model and TLSFixturesClient included — so OpenSSL's constants for it live with the OpenSSL owners.
public enum TLSVersion: String, Codable, CodingKeyRepresentable, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case ssl3 = "SSLv3"
    case tls1_0 = "TLSv1.0"
    case tls1_1 = "TLSv1.1"
    case tls1_2 = "TLSv1.2"
    case tls1_3 = "TLSv1.3"

    public var description: String { rawValue }

    /// Accepts the ATS spelling (`TLSv1.0`), OpenSSL's (`TLSv1`), and the short forms `1.0`…`1.3`.
    public init?(parsing text: String) {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let v = TLSVersion(rawValue: t) { self = v; return }
        switch t.lowercased() {
        case "tlsv1", "tls1", "tls1.0", "1.0", "tls1_0": self = .tls1_0
        case "tls1.1", "1.1", "tls1_1": self = .tls1_1
        case "tls1.2", "1.2", "tls1_2": self = .tls1_2
        case "tls1.3", "1.3", "tls1_3": self = .tls1_3
        case "ssl3", "sslv3", "3": self = .ssl3
        default: return nil
        }
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let version = TLSVersion(parsing: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription:
                "\"\(text)\" is not a protocol version: use \(TLSVersion.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = version
    }

    /// Oldest first: the order the cases are declared in, which is the order of the protocols' wire numbers.
    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
