import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This process's open-file limit (RLIMIT_NOFILE) after `FileDescriptorLimit.raiseOnce()`.
package struct DescriptorLimit: Sendable, Equatable {
    /// The soft limit in force: how many descriptors this process may hold.
    public var current: UInt64
    /// The hard limit (`RLIM_INFINITY` when unlimited).
    public var hard: UInt64
    /// Darwin's `kern.maxfilesperproc`: setrlimit refuses a soft limit above it with EINVAL, even when the hard limit
    /// is unlimited (as it is by default on macOS). nil elsewhere.
    public var perProcessMaximum: UInt64?
    /// Why the limit could not be raised to what was asked; nil when it was (or needed no raising).
    public var raiseFailure: String?

    package init(current: UInt64, hard: UInt64, perProcessMaximum: UInt64? = nil, raiseFailure: String? = nil) {
        self.current = current; self.hard = hard; self.perProcessMaximum = perProcessMaximum; self.raiseFailure = raiseFailure
    }
}

/// Many fixtures × many connections exceed the usual soft limits (1,024 on Linux, 256 on macOS): every fixture raises
/// this process's limit once, as far as the OS allows, and `serve` warns when that is still too few for what it serves.
public enum FileDescriptorLimit {
    /// The most ever asked for: plenty for every scenario and a load test, and what most systems grant.
    public static let cap: UInt64 = 65_536

    /// The soft limit to ask for: the hard limit, capped at `cap` and at Darwin's per-process maximum; nil when the
    /// current limit is already there.
    package static func target(current: UInt64, hard: UInt64, perProcessMaximum: UInt64?, cap: UInt64 = cap) -> UInt64? {
        var wanted = min(hard, cap)
        if let perProcessMaximum { wanted = min(wanted, perProcessMaximum) }
        return wanted > current ? wanted : nil
    }

    /// Raises the limit once per process (later calls return the first result). A failure is logged once and kept in
    /// `raiseFailure`; it is not fatal, a fixture still serves within the limit it has.
    @discardableResult
    package static func raiseOnce() -> DescriptorLimit { raised }

    private static let raised: DescriptorLimit = {
        let limit = raise()
        if let failure = limit.raiseFailure {
            Logger(label: "tls-fixtures.server").warning("\(failure)")
        }
        return limit
    }()

    static func raise() -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else {
            let reason = String(cString: strerror(errno))
            return DescriptorLimit(current: 0, hard: 0, raiseFailure: "cannot read the open-file limit: \(reason)")
        }
        let maximum = perProcessMaximum()
        guard let wanted = target(current: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max), perProcessMaximum: maximum) else {
            return DescriptorLimit(current: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max), perProcessMaximum: maximum)
        }
        let before = UInt64(limit.rlim_cur)
        var raised = limit
        raised.rlim_cur = rlim_t(wanted)
        var failure: String? = nil
        if setrlimit(resource, &raised) != 0 {
            failure = "cannot raise the open-file limit from \(before) to \(wanted): \(String(cString: strerror(errno))); "
                + "fixtures serve within \(before) descriptors (raise it with `ulimit -n \(wanted)` before starting)"
        }
        // What is in force now, whatever setrlimit said.
        var now = rlimit()
        guard getrlimit(resource, &now) == 0 else { return DescriptorLimit(current: before, hard: UInt64(limit.rlim_max), perProcessMaximum: maximum, raiseFailure: failure) }
        if failure == nil && UInt64(now.rlim_cur) < wanted {
            failure = "the open-file limit stayed at \(now.rlim_cur) after asking for \(wanted)"
        }
        return DescriptorLimit(current: UInt64(now.rlim_cur), hard: UInt64(now.rlim_max), perProcessMaximum: maximum, raiseFailure: failure)
    }

    /// Descriptors a runner wants for `scenarios` fixtures listening on `addresses` addresses each (and a dashboard):
    /// a reserve for the process itself (standard streams, event loops, the store's files), the listening sockets,
    /// and room for eight connections per scenario (a browser's live column, `ats diagnose`, a test's clients).
    public static func wanted(scenarios: Int, addresses: Int) -> UInt64 {
        UInt64(32 + (scenarios + 1) * addresses + scenarios * 8)
    }

    /// A one-line warning when `limit` is below what `scenarios` fixtures want; nil when it is enough.
    package static func warning(_ limit: DescriptorLimit, scenarios: Int, addresses: Int) -> String? {
        let wanted = wanted(scenarios: scenarios, addresses: addresses)
        guard limit.current < wanted else { return nil }
        var why = limit.current >= limit.hard ? "the hard limit is \(limit.hard)" : "it could not be raised"
        if let maximum = limit.perProcessMaximum, limit.current >= maximum { why = "kern.maxfilesperproc is \(maximum)" }
        var suggestion: UInt64 = 1_024
        while suggestion < wanted { suggestion *= 2 }
        return "warning: this process may open only \(limit.current) files (\(why)); \(scenarios) scenarios want about \(wanted), "
            + "so clients may be refused under load. Raise it before starting (`ulimit -n \(suggestion)`), or serve fewer scenarios"
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif

    /// Darwin's `kern.maxfilesperproc`; nil elsewhere (Linux's hard limit is the whole story).
    package static func perProcessMaximum() -> UInt64? {
        #if canImport(Darwin)
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard sysctlbyname("kern.maxfilesperproc", &value, &size, nil, 0) == 0, value > 0 else { return nil }
        return UInt64(value)
        #else
        return nil
        #endif
    }
}
