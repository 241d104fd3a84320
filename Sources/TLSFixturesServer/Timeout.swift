import NIOCore
import TLSFixturesWire

/// A time limit a person chooses in seconds — a CLI option, a configuration field — checked once, here, for every
/// caller: finite, from 1 ms to a day. Without the check, `inf`, `nan` or `1e20` trapped where the seconds were turned
/// into nanoseconds ("Double value cannot be converted"), `0` meant "no limit" to `poll` and `SO_RCVTIMEO`, and a
/// negative value was taken as given.
public struct Timeout: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Below this, a timeout can only be a typo (and rounds to nothing on some clocks).
    public static let minimumSeconds = 0.001
    /// A day: any longer and a fixture or a client is waiting on something that will not come.
    public static let maximumSeconds = 86_400.0

    /// The limit in seconds, within `minimumSeconds`…`maximumSeconds`.
    public let seconds: Double

    /// `name` is what the error message calls the value (`--timeout`, `handshakeTimeout`).
    public init(seconds: Double, name: String = "timeout") throws {
        guard seconds.isFinite, seconds >= Self.minimumSeconds, seconds <= Self.maximumSeconds else {
            throw InvalidTimeout(name: name, value: Self.format(seconds))
        }
        self.seconds = seconds
    }

    /// Checks a `TimeAmount` given in code (`FixtureConfiguration`) against the same range.
    public init(_ amount: TimeAmount, name: String) throws {
        let seconds = Double(amount.nanoseconds) / 1e9
        guard seconds >= Self.minimumSeconds, seconds <= Self.maximumSeconds else {
            throw InvalidTimeout(name: name, value: "\(Self.format(seconds)) s")
        }
        self.seconds = seconds
    }

    /// Exact to the nanosecond for every accepted value (a day is 8.64e13 ns, far inside `Int64`).
    public var timeAmount: TimeAmount { .nanoseconds(Int64((seconds * 1e9).rounded())) }

    /// `2 s`, `0.5 s`: how "timed out after …" and the CLI's help name it.
    public var description: String { "\(Self.format(seconds)) s" }

    public static func < (a: Timeout, b: Timeout) -> Bool { a.seconds < b.seconds }

    static func format(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "\(seconds)" }
        if seconds == seconds.rounded() && abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return "\(seconds)"
    }
}

/// A time limit outside `Timeout`'s range, named as the caller named it.
public struct InvalidTimeout: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<InvalidTimeout>`: new ones may be added, none changes
    /// meaning.
    public typealias Code = ErrorCode<InvalidTimeout>

    /// What kind of failure this is: `outOfRange`, so far the only one.
    public var code: Code { .outOfRange }
    /// The caller's name for the limit, e.g. `the probe's timeout`, so the message says which one.
    public let name: String
    /// The value as given, spelled as the caller spelled it.
    public let value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// What is wrong, with the range that would do, on one line.
    public var reason: String {
        "\(name) must be a number of seconds from \(Timeout.format(Timeout.minimumSeconds)) to "
            + "\(Timeout.format(Timeout.maximumSeconds)) (a day), not \(value)"
    }

    /// Nothing to add: the reason gives the range.
    public var fix: String? { nil }
}

/// The codes of `InvalidTimeout`.
extension ErrorCode where Owner == InvalidTimeout {
    /// Not finite, or outside `Timeout.minimumSeconds`…`Timeout.maximumSeconds`.
    public static var outOfRange: Self { Self("outOfRange") }
}
