import COpenSSL
import TLSFixturesWire

/// A failed OpenSSL call, carrying OpenSSL's own explanation from its (thread-local) error queue.
///
/// The text is OpenSSL's because that is what users search for: `dh key too small`,
/// `no cipher match`, `ee key too small`.
public struct OpenSSLError: CodedError {
    /// Its kinds of failure, the static members of `ErrorCode<OpenSSLError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<OpenSSLError>

    /// What kind of failure this is: `callFailed`, so far the only one (OpenSSL's own reasons tell them apart).
    public var code: Code { .callFailed }
    /// What we were doing, in our words (`set the TLS 1.2 cipher list "RC4-SHA"`).
    public let operation: String
    /// OpenSSL's reasons, oldest first (`SSL routines: no cipher match`).
    public let reasons: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(operation: String, reasons: [String]) {
        self.operation = operation
        self.reasons = reasons
    }

    /// What failed, in OpenSSL's own words: what users search for.
    public var reason: String {
        reasons.isEmpty ? "could not \(operation)" : "could not \(operation): \(reasons.joined(separator: "; "))"
    }

    /// Nothing to add to OpenSSL's words.
    public var fix: String? { nil }

    /// Empties the calling thread's error queue into an error. Call right after the failing OpenSSL call.
    package static func drain(_ operation: String) -> OpenSSLError {
        OpenSSLError(operation: operation, reasons: drainReasons())
    }

    package static func drainReasons() -> [String] {
        var reasons: [String] = []
        while true {
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            var text = ""
            if let lib = ERR_lib_error_string(code) { text = String(cString: lib) + ": " }
            if let reason = ERR_reason_error_string(code) {
                text += String(cString: reason)
            } else {
                text += "error \(String(code, radix: 16))"
            }
            if let data, (flags & ERR_TXT_STRING) != 0, data.pointee != 0 {
                text += " (\(String(cString: data)))"
            }
            reasons.append(text)
        }
        return reasons
    }

    /// Forgets stale errors so a later `drain` reports only what the next call did.
    package static func clearQueue() {
        _ = OpenSSLRuntime.initializedWithoutExitCleanup
        ERR_clear_error()
    }
}

/// Throws `OpenSSLError` when an OpenSSL call that returns 1 on success returned anything else.
@inline(__always)
package func checkOne(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
    if rc != 1 { throw OpenSSLError.drain(operation()) }
}

/// Throws `OpenSSLError` when an OpenSSL constructor returned NULL.
@inline(__always)
package func checkNotNull<T>(_ value: T?, _ operation: @autoclosure () -> String) throws -> T {
    guard let value else { throw OpenSSLError.drain(operation()) }
    return value
}

/// The codes of `OpenSSLError`.
extension ErrorCode where Owner == OpenSSLError {
    /// An OpenSSL call returned failure; `OpenSSLError.reasons` holds its error queue.
    public static var callFailed: Self { Self("callFailed") }
}
