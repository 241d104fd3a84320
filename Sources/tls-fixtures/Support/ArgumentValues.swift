import ArgumentParser
import Foundation
import TLSFixtures

// The library's value types as option values. The conformances live here, not beside the types (the library must not
// link ArgumentParser, and only this executable parses arguments; being in the same package they need no
// `@retroactive`), and each lists its values (`allValueStrings`), so `--help` shows them and a bad value gets the
// parser's one-line error naming them.

/// A library enum that the command line spells with its own words (`one-label`, `fewest-keys`, `1.2`), not its raw
/// values (`everySubdomain`, `TLSv1.2`). Options hold it in a `Spelled`: ArgumentParser shows the default of a raw-value
/// enum by its raw value, whatever its `defaultValueDescription` says.
protocol CommandLineSpelled: CaseIterable, Sendable {
    /// The word for this value on the command line.
    var word: String { get }
    /// The value a word names (by default, the case whose `word` it is).
    init?(word: String)
    /// The words `--help` and the parser's error list (by default, every case's).
    static var allWords: [String] { get }
}

extension CommandLineSpelled {
    init?(word: String) {
        guard let value = Self.allCases.first(where: { $0.word == word }) else { return nil }
        self = value
    }
    static var allWords: [String] { allCases.map(\.word) }
}

/// An option's value of a `CommandLineSpelled` type: parsed, listed and shown as a default by its words.
struct Spelled<Value: CommandLineSpelled>: ExpressibleByArgument, Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
    init?(argument: String) {
        guard let value = Value(word: argument) else { return nil }
        self.value = value
    }
    var defaultValueDescription: String { value.word }
    static var allValueStrings: [String] { Value.allWords }
}

extension KeySpec: ExpressibleByArgument {
    public init?(argument: String) { try? self.init(parsing: argument) }
    public var defaultValueDescription: String { description }
    /// RSA and EC as patterns (any size in `rsaBitsRange`, any curve listed): three values keep the parser's error to
    /// one line, where six would make it a list.
    public static var allValueStrings: [String] {
        ["rsa:BITS (\(KeySpec.rsaBitsRange.lowerBound)–\(KeySpec.rsaBitsRange.upperBound))", "ec:CURVE (\(KeySpec.Curve.allCases.map(\.rawValue).joined(separator: ", ")))", "ed25519"]
    }
    public static var defaultCompletionKind: CompletionKind { .default }
}

extension SignatureDigest: ExpressibleByArgument {
    public init?(argument: String) { try? self.init(parsing: argument) }
}

extension TLSVersion: CommandLineSpelled {
    /// The short form the probe's options are written with (`1.2`).
    var word: String { rawValue.replacingOccurrences(of: "TLSv", with: "") }
    /// Every spelling the library reads (`TLSv1.2`, `tls1.2`, `1.2`, …).
    init?(word: String) { self.init(parsing: word) }
    /// What a client can still offer; SSLv3 parses too, but no current OpenSSL speaks it.
    static var allWords: [String] { [TLSVersion.tls1_0, .tls1_1, .tls1_2, .tls1_3].map(\.word) }
}

extension ExportFormat: ExpressibleByArgument {}
extension BuiltinAuthority: ExpressibleByArgument {}
extension PinMode: ExpressibleByArgument {}
extension TrustAnchorKind: ExpressibleByArgument {}

extension LeafIssuer: ExpressibleByArgument {
    public init?(argument: String) {
        guard let issuer = try? CertificateRequest.parseIssuer(argument) else { return nil }
        self = issuer
    }
    public var defaultValueDescription: String {
        switch self {
        case .selfSigned: return "self"
        case .authority(let id): return id.rawValue
        }
    }
    public static var allValueStrings: [String] { ["self"] + BuiltinAuthority.allCases.map(\.rawValue) }
}

extension ATSOSProfile: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension ATSLoadKind: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension ATSExceptionFinder.Strategy: CommandLineSpelled {
    var word: String {
        switch self {
        case .fewestKeys: return "fewest-keys"
        case .domainScopedFirst: return "domain-scoped-first"
        }
    }
}

extension ATSReadings.Subdomains: CommandLineSpelled {
    var word: String {
        switch self {
        case .everySubdomain: return "all"
        case .oneExtraLabel: return "one-label"
        }
    }
}

extension ATSReadings.CipherSuites: CommandLineSpelled {
    var word: String {
        switch self {
        case .currentSource: return "current"
        case .documented2015: return "2015"
        }
    }
}

extension ATSReadings.IPAddresses: CommandLineSpelled {
    var word: String {
        switch self {
        case .externalOnly: return "external"
        case .every: return "all"
        }
    }
}

extension ATSReadings.ThirdPartyKeys: CommandLineSpelled {
    var word: String {
        switch self {
        case .byProfile: return "profile"
        case .ignored: return "ignore"
        case .asPlainKeys: return "plain"
        }
    }
}

extension ATSReadings.WebViewPins: CommandLineSpelled {
    var word: String {
        switch self {
        case .notEnforced: return "ignored"
        case .enforced: return "enforced"
        }
    }
}

extension ATSReadings.DHE: CommandLineSpelled {
    var word: String {
        switch self {
        case .offeredWithoutATS: return "offered"
        case .neverOffered: return "refused"
        }
    }
}

/// The runner's URL for `wait` and `connections`: the one given (as `flag` names it), else `$TLS_FIXTURES_URL`, else
/// the default runner's; the dashboard's `http://HOST:PORT`, as `serve` prints it first.
enum RunnerURLArgument {
    static func resolve(_ given: String?, flag: String) throws -> URL {
        let text = given ?? ProcessInfo.processInfo.environment[FixtureAPI.environmentVariable]
        guard let text else { return FixtureAPI.defaultRunnerURL }
        let source = given == nil ? FixtureAPI.environmentVariable : flag
        guard let parsed = URL(string: text), parsed.scheme?.lowercased() == "http", parsed.host?.isEmpty == false
        else {
            throw CLIError("\(source) is \(text.debugDescription), not the runner's URL; give it as `serve` prints it "
                           + "first, such as \(FixtureAPI.defaultRunnerURL.absoluteString)")
        }
        return parsed
    }
}
