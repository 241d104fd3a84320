import NIOCore
import TLSFixturesOpenSSL
import TLSFixturesServer

/// A deadline several probes share, so a command that makes many connections (`ats check`'s suite scan, `ats
/// diagnose`'s configurations) ends within one time limit overall, however slowly the server answers each of them.
public struct ProbeDeadline: Sendable, Hashable {
    /// The limit it was made from, for "timed out after …".
    public let timeout: Timeout
    /// The moment it ends, on NIO's monotonic clock.
    public let end: NIODeadline

    /// Starts now.
    public init(_ timeout: Timeout) {
        self.timeout = timeout
        end = .now() + timeout.timeAmount
    }
}
