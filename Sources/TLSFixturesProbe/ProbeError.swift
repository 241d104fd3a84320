import TLSFixturesWire

/// Why a probe produced no result at all: a target it cannot use, no TCP connection, or a scan out of time.
/// A TLS failure is not one of these: it is a `ProbeResult` with `failure` set.
public struct ProbeError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<ProbeError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<ProbeError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when the reason says it all.
    public let fix: String?
    /// The target (or the text given as one) the error is about.
    public let target: String

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, target: String, reason: String, fix: String? = nil) {
        self.code = code
        self.target = target
        self.reason = reason
        self.fix = fix
    }

    /// `text` is not a target, for the reason `hint` gives (which says what is).
    public static func invalidTarget(_ text: String, _ hint: String) -> ProbeError {
        ProbeError(code: .invalidTarget, target: text, reason: "invalid target \"\(text)\"", fix: hint)
    }

    /// No connection to `target`, because of `why`; `fix` when there is something to do about it.
    public static func connect(_ target: String, _ why: String, fix: String? = nil) -> ProbeError {
        ProbeError(code: .connect, target: target, reason: "cannot connect to \(target): \(why)", fix: fix)
    }

    /// `host`, a fixture's name, does not resolve (`why` is the resolver's word).
    public static func unresolvedFixtureName(_ target: String, host: String, _ why: String) -> ProbeError {
        ProbeError(code: .unresolvedFixtureName, target: target, reason: "cannot connect to \(target): cannot resolve \(host): \(why)",
                   fix: "set the target's connectAddress to 127.0.0.1, or map the name in /etc/hosts")
    }

    /// A scan of `target` stopped at its deadline; `what` says where.
    public static func timedOut(_ target: String, _ what: String) -> ProbeError {
        ProbeError(code: .timedOut, target: target, reason: "\(target): \(what)")
    }
}

/// The codes of `ProbeError`.
extension ErrorCode where Owner == ProbeError {
    /// A target that is not `HOST:PORT`, a URL, or a curl-style resolve entry.
    public static var invalidTarget: Self { Self("invalidTarget") }
    /// No TCP connection: the name does not resolve, or nothing accepted a connection in time.
    public static var connect: Self { Self("connect") }
    /// A `*.fixtures.test` name that does not resolve: the machine does not map the fixtures' names.
    public static var unresolvedFixtureName: Self { Self("unresolvedFixtureName") }
    /// A scan of many handshakes (`ServerFactsCollector`) reached its deadline.
    public static var timedOut: Self { Self("timedOut") }
}
