import Foundation

/// The shape every public error of the library has, after swift-certificates' `CertificateError`: a stable ``code`` to
/// branch and test on, a one-line ``reason`` saying what is wrong, and a ``fix`` saying what to do about it in the
/// library's own terms (a property or an argument, never a command-line flag: the `tls-fixtures` CLI adds its flags
/// itself).
///
/// Why a struct with a code and not an enum with associated values: a new kind of failure is then a new static
/// ``Code`` value, not a new case that breaks every exhaustive `switch` in the apps and tests that catch it; and a test
/// can say which kind of failure it expects without restating the message.
///
/// Equality and hashing compare the ``code`` only, as `CertificateError`'s do:
/// `#expect(throws: FixtureError.portInUse(port: 0, address: ""))` passes for any port in use, and
/// `catch let error as ScenarioError where error.code == .unknown` reads as it says. ``description`` is the reason and
/// the fix on one line, fit for an XCTest failure or a log; it is also the `localizedDescription` that test logs and apps
/// print (without `LocalizedError`, Foundation would say "The operation could not be completed. (… error 0.)").
public protocol CodedError: LocalizedError, Hashable, Sendable, CustomStringConvertible {
    /// The kinds of failure of this error type: static values of a struct, so that new ones can be added.
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    /// What kind of failure this is.
    var code: Code { get }
    /// What is wrong, one line.
    var reason: String { get }
    /// What to do about it, in the library's terms; nil when the reason says it all.
    var fix: String? { get }
}

extension CodedError {
    /// The reason, then the fix after a semicolon: one line.
    public var description: String { fix.map { "\(reason); \($0)" } ?? reason }

    /// The ``description``, so that `localizedDescription` says the same.
    public var errorDescription: String? { description }

    /// Whether two errors are the same kind of failure (their wording may differ).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the ``code``, as equality compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// The code of an error of type `Owner`: its name, which is also its `description`.
///
/// Each error type's codes are `ErrorCode<ThatError>`, so the codes of `FixtureError` and `ScenarioError` are different
/// types and cannot be compared by mistake; each type lists its codes as static members of a constrained extension.
public struct ErrorCode<Owner>: Hashable, Sendable, CustomStringConvertible {
    /// The code's name (`portInUse`), stable: tests and logs may rely on it.
    public let description: String
    /// A code named `name`; only the library makes codes.
    package init(_ name: String) { description = name }
}


/// A value a user typed, as an error message repeats it: whole when short, else its start and its length, so a
/// 5,000-character mistake is named in one readable line rather than echoed back in full.
package func echoed(_ value: String, limit: Int = 64) -> String {
    let count = value.count
    guard count > limit else { return value }
    return "\(value.prefix(limit))… (\(count) characters)"
}
