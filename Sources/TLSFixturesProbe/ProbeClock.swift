import NIOCore
import TLSFixturesServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
}
