/// The answer to the probe's `GET /`, as NIOHTTP1 decoded it: the final answer (interim `1xx` ones skipped), its body
/// without chunk framing, complete at its length, its last chunk, or the server's close.
public struct ProbeHTTPResponse: Codable, Sendable, Equatable {
    /// The final status code (`200`; interim `1xx` answers are skipped).
    public var status: Int
    /// Field names in lower case; a repeated field's values joined with ", ".
    public var headers: [String: String]
    /// The body as UTF-8 text (invalid bytes replaced).
    public var body: String
}
