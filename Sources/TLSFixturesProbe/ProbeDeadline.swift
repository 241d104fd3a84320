import COpenSSL
import NIOCore
import TLSFixturesOpenSSL
import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A deadline several probes share, so a command that makes many connections (`ats check`'s suite scan, `ats
/// diagnose`'s configurations) ends within one time limit overall, however slowly the server answers each of them.
public struct ProbeDeadline: Sendable, Hashable {
    /// The limit it was made from, for "timed out after …".
    public let timeout: Timeout
    public let end: NIODeadline

    /// Starts now.
    public init(_ timeout: Timeout) {
        self.timeout = timeout
        end = .now() + timeout.timeAmount
    }
}

/// One probe's clock: the earlier of its own `ProbeOptions.timeout` (counted from its start) and the shared deadline.
/// Every wait of the probe — connect, each step of the handshake, writing the request, reading the answer — polls on
/// the socket only until this deadline, so a server that sends a byte every second cannot stretch the probe: a
/// per-read timeout (`SO_RCVTIMEO`) restarts with every byte.
struct ProbeClock {
    let end: NIODeadline
    /// The limit that `end` comes from.
    let limit: Timeout

    init(timeout: Timeout, shared: ProbeDeadline?) {
        let own = NIODeadline.now() + timeout.timeAmount
        if let shared, shared.end < own {
            end = shared.end
            limit = shared.timeout
        } else {
            end = own
            limit = timeout
        }
    }

    var expired: Bool { NIODeadline.now() >= end }

    /// What a probe reports when the deadline passes.
    var timedOut: String { "timed out after \(limit)" }

    /// Waits until `fd` is ready for `events` (POLLIN, POLLOUT) or the deadline passes; false when it passed. An error
    /// or hang-up on the socket counts as ready: the next read or write reports it.
    func wait(_ fd: Int32, for events: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(events), revents: 0)
        while true {
            let remaining = end - .now()
            guard remaining > .zero else { return false }
            let milliseconds = Int32(clamping: (remaining.nanoseconds + 999_999) / 1_000_000)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }
            // 0: this wait's share of the time is up; the loop checks the deadline again.
        }
    }

    /// Runs an OpenSSL call on a non-blocking socket, waiting whenever OpenSSL wants to read or write, until it
    /// succeeds (`> 0`), fails for another reason (its result, with OpenSSL's error queue and `errno` as it left them),
    /// or the deadline passes (nil).
    func drive(_ ssl: OpaquePointer, fd: Int32, _ operation: () -> Int32) -> Int32? {
        while true {
            OpenSSLError.clearQueue()
            let rc = operation()
            if rc > 0 { return rc }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ: guard wait(fd, for: Int32(POLLIN)) else { return nil }
            case SSL_ERROR_WANT_WRITE: guard wait(fd, for: Int32(POLLOUT)) else { return nil }
            default: return rc
            }
        }
    }
}
