import TLSFixturesATS

/// The verify result a standard client would report.
public struct VerifyOutcome: Codable, Sendable, Equatable {
    /// The name checked (nil: none).
    public var host: String?
    /// OpenSSL auth level used (2 = a default OpenSSL 3 client).
    public var securityLevel: Int
    /// nil when the chain verified.
    public var error: VerifyError?
    /// Who judged, when not OpenSSL: the platform's evaluator (`macOS trust settings (SecTrust)`) for system trust.
    public var verifier: String? = nil
    /// `ok`, or OpenSSL's text.
    public var summary: String { error?.text ?? "ok" }
}
