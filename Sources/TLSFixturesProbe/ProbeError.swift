/// Why a probe produced no result at all: a target it cannot use, no TCP connection, or a scan out of time.
/// A TLS failure is not one of these: it is a `ProbeResult` with `failure` set.
public enum ProbeError: Error, CustomStringConvertible, Sendable, Equatable {
    case invalidTarget(String, String)
    case connect(String, String)
    /// A scan of many handshakes (`ServerFactsCollector`) reached its deadline: target, and where it stopped.
    case timedOut(String, String)

    /// What a `connect` failure adds when a `*.fixtures.test` name does not resolve; the CLI says it in flags instead.
    package static let unresolvedFixtureNameHint = " (set the target's connectAddress to 127.0.0.1, or map the name in /etc/hosts)"

    public var description: String {
        switch self {
        case .invalidTarget(let text, let hint): return "invalid target \"\(text)\": \(hint)"
        case .connect(let target, let why): return "cannot connect to \(target): \(why)"
        case .timedOut(let target, let what): return "\(target): \(what)"
        }
    }
}
