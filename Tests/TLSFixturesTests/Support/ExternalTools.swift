import Foundation
import Testing
@testable import TLSFixtures

// The programs the tests use as independent judges, found and identified once per test process.
//
// A test that judges the server with `openssl verify` asserts OpenSSL 3's texts and security levels; run by LibreSSL
// (macOS's /usr/bin/openssl), Apple's curl (LibreSSL, and the Keychain) or the Command Line Tools' python3 (LibreSSL)
// it would fail for reasons that say nothing about the server — or pass for the wrong ones. So each tool is located
// (Homebrew's keg first on macOS), asked what it is, and a test that needs it carries `.requires(Tools.x)`: where the
// tool is missing or is not the one the test judges with, the test is skipped with the reason and the fix.
// `Subprocess` runs the located program for a bare name ("openssl", "curl", …) and refuses, loudly, to run one that
// failed its check, so a test that forgot its trait fails instead of judging with the wrong tool.

/// The OS the tests run on, as far as tool choices care.
enum HostOS: String, Sendable {
    case linux, darwin, other

    static let current: HostOS = {
        #if os(Linux)
        return .linux
        #elseif canImport(Darwin)
        return .darwin
        #else
        return .other
        #endif
    }()
}

/// One program a test runs, and whether it is the one the test judges with.
struct ExternalTool: Sendable, CustomStringConvertible {
    enum Kind: String, CaseIterable, Sendable {
        /// The OpenSSL 3 command line (s_client, verify, x509, …).
        case openssl
        /// curl on OpenSSL 3.
        case curl
        /// python3 whose `ssl` module is OpenSSL 3 (the judge of Python clients).
        case pythonSSL = "python3"
        /// Any python3 that can run the repository's scripts (no TLS involved).
        case python = "python3 (scripts)"
        /// Headless Chromium that trusts an NSS database (Linux).
        case chromium
        /// NSS's certutil, to make that database.
        case certutil
        /// iproute2's ss (Linux): which process listens where.
        case ss
        /// util-linux's setpriv (Linux): run the CLI as another user.
        case setpriv

        /// The name tests spawn it by.
        var command: String {
            switch self {
            case .pythonSSL, .python: return "python3"
            default: return rawValue
            }
        }

        /// `TLS_FIXTURES_TEST_OPENSSL=/path/to/openssl` chooses the program outright.
        var overrideVariable: String {
            "TLS_FIXTURES_TEST_" + (self == .pythonSSL || self == .python ? "PYTHON3" : rawValue.uppercased())
        }
    }

    let kind: Kind
    /// The program that runs, absolute; nil when none was found.
    let path: String?
    /// What it said it is (`OpenSSL 3.0.19 …`, `curl 7.88.1 … OpenSSL/3.0.19 …`).
    let identity: String?
    /// Why it cannot judge here, with the fix; nil when it can.
    let problem: String?

    var isUsable: Bool { problem == nil }
    var description: String { "\(kind.rawValue): \(path ?? "not found")" + (identity.map { " (\($0))" } ?? "") + (problem.map { " — \($0)" } ?? "") }
}

/// The judges of this test run.
enum Tools {
    static let openssl = probe(.openssl)
    static let curl = probe(.curl)
    static let pythonSSL = probe(.pythonSSL)
    static let python = probe(.python)
    static let chromium = probe(.chromium)
    static let certutil = probe(.certutil)
    static let ss = probe(.ss)
    static let setpriv = probe(.setpriv)

    static func tool(_ kind: ExternalTool.Kind) -> ExternalTool {
        switch kind {
        case .openssl: return openssl
        case .curl: return curl
        case .pythonSSL: return pythonSSL
        case .python: return python
        case .chromium: return chromium
        case .certutil: return certutil
        case .ss: return ss
        case .setpriv: return setpriv
        }
    }

    /// The checked tool a bare command name in a test's argument list stands for (`chromium-browser` is Chromium).
    static func forCommand(_ command: String) -> ExternalTool? {
        switch command {
        case "openssl": return openssl
        case "curl": return curl
        // Every python3 a test runs judges Python's ssl, but for the repository's scripts, which run by path.
        case "python3": return pythonSSL
        case "chromium", "chromium-browser": return chromium
        case "certutil": return certutil
        case "ss": return ss
        case "setpriv": return setpriv
        default: return nil
        }
    }

    /// PATH for a child on macOS: the folders of the checked tools first, so a shell pipeline runs the same programs.
    static func searchPath(base: String?) -> String {
        let folders = ExternalTool.Kind.allCases.compactMap { kind -> String? in
            let tool = tool(kind)
            guard tool.isUsable, let path = tool.path else { return nil }
            return (path as NSString).deletingLastPathComponent
        }
        var seen = Set<String>()
        let base = base ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (folders + base.split(separator: ":").map(String.init)).filter { seen.insert($0).inserted }.joined(separator: ":")
    }

    /// Locates `kind` and asks it what it is.
    static func probe(_ kind: ExternalTool.Kind, os: HostOS = .current,
                      environment: [String: String] = ProcessInfo.processInfo.environment) -> ExternalTool {
        if let unsupported = ToolIdentity.unsupported(kind, on: os) {
            return ExternalTool(kind: kind, path: nil, identity: nil, problem: unsupported)
        }
        guard let path = ToolLocator.locate(kind, os: os, environment: environment,
                                            isExecutable: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return ExternalTool(kind: kind, path: nil, identity: nil, problem: ToolIdentity.missing(kind, on: os))
        }
        let output = ToolIdentity.versionArguments(kind).flatMap { arguments -> String? in
            guard let result = try? Subprocess.runUnchecked([path] + arguments, timeout: 20), !result.timedOut else { return nil }
            return result.combined
        }
        let (identity, problem) = ToolIdentity.judge(kind, path: path, versionOutput: output, on: os)
        return ExternalTool(kind: kind, path: path, identity: identity, problem: problem)
    }
}

/// Where each tool is looked for, in order. Pure, so the macOS choices are tested on Linux.
enum ToolLocator {
    /// Homebrew's prefixes: Apple silicon, then Intel. `HOMEBREW_PREFIX` (set by `brew shellenv`) comes first.
    static func homebrewPrefixes(_ environment: [String: String]) -> [String] {
        var prefixes = ["/opt/homebrew", "/usr/local"]
        if let custom = environment["HOMEBREW_PREFIX"], custom.hasPrefix("/") { prefixes.insert(custom, at: 0) }
        var seen = Set<String>()
        return prefixes.filter { seen.insert($0).inserted }
    }

    static func candidates(_ kind: ExternalTool.Kind, os: HostOS, environment: [String: String]) -> [String] {
        var result: [String] = []
        if let explicit = environment[kind.overrideVariable], !explicit.isEmpty { result.append(explicit) }
        if os == .darwin {
            // Homebrew's openssl@3 and curl are keg-only (not on PATH by default), and macOS's own openssl and curl
            // are LibreSSL builds: name the kegs explicitly, before PATH.
            for prefix in homebrewPrefixes(environment) {
                switch kind {
                case .openssl: result.append("\(prefix)/opt/openssl@3/bin/openssl")
                case .curl: result.append("\(prefix)/opt/curl/bin/curl")
                case .pythonSSL, .python: result.append("\(prefix)/bin/python3")
                case .certutil: result.append("\(prefix)/opt/nss/bin/certutil")
                default: break
                }
            }
        }
        var directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        // ss and setpriv live in /usr/sbin or /sbin, which a normal user's PATH may lack.
        if os == .linux { directories += ["/usr/sbin", "/sbin"] }
        let names = kind == .chromium ? ["chromium", "chromium-browser"] : [kind.command]
        for name in names {
            for directory in directories where !directory.isEmpty { result.append("\(directory)/\(name)") }
        }
        return result
    }

    static func locate(_ kind: ExternalTool.Kind, os: HostOS, environment: [String: String],
                       isExecutable: (String) -> Bool) -> String? {
        candidates(kind, os: os, environment: environment).first(where: isExecutable)
    }
}

/// What each tool must be, judged from its own version output. Pure, so the LibreSSL answers are tested on Linux.
enum ToolIdentity {
    /// A tool that is not this OS's at all, whatever is installed.
    static func unsupported(_ kind: ExternalTool.Kind, on os: HostOS) -> String? {
        switch (kind, os) {
        case (.chromium, .darwin):
            return "Chrome and Chromium on macOS trust the Keychain, not the NSS database this test builds for them; "
                + "the dashboard browser check runs on Linux (Debian's chromium and libnss3-tools)"
        case (.ss, .darwin), (.ss, .other):
            return "ss is Linux's (iproute2); this check reads listening sockets with it and runs on Linux only"
        case (.setpriv, .darwin), (.setpriv, .other):
            return "setpriv is Linux's (util-linux); this check runs the CLI as another user with it and runs on Linux only"
        default:
            return nil
        }
    }

    static func missing(_ kind: ExternalTool.Kind, on os: HostOS) -> String {
        let install: String
        switch (kind, os) {
        case (.openssl, .darwin): install = "brew install openssl@3"
        case (.curl, .darwin): install = "brew install curl"
        case (.pythonSSL, .darwin), (.python, .darwin): install = "brew install python3"
        case (.certutil, .darwin): install = "brew install nss"
        case (.openssl, _): install = "apt-get install openssl (or run `make test` as root)"
        case (.curl, _): install = "apt-get install curl"
        case (.pythonSSL, _), (.python, _): install = "apt-get install python3"
        case (.chromium, _): install = "apt-get install chromium libnss3-tools (or run `make test` as root)"
        case (.certutil, _): install = "apt-get install libnss3-tools"
        case (.ss, _): install = "apt-get install iproute2"
        case (.setpriv, _): install = "apt-get install util-linux"
        }
        return "\(kind.command) is not installed (\(install); or point \(kind.overrideVariable) at one)"
    }

    /// What to run to learn what the tool is; nil: presence is enough.
    static func versionArguments(_ kind: ExternalTool.Kind) -> [String]? {
        switch kind {
        case .openssl: return ["version"]
        case .curl: return ["-V"]
        case .pythonSSL, .python: return ["-c", "import ssl, sys; print('Python', sys.version.split()[0], '|', ssl.OPENSSL_VERSION)"]
        case .chromium: return ["--version"]
        case .ss: return ["-V"]
        case .setpriv: return ["--version"]
        case .certutil: return nil
        }
    }

    /// (identity, problem): problem is nil when the tool is the one the tests judge with.
    static func judge(_ kind: ExternalTool.Kind, path: String, versionOutput: String?, on os: HostOS) -> (String?, String?) {
        guard versionArguments(kind) != nil else { return (nil, nil) }
        guard let output = versionOutput, !output.isEmpty else {
            return (nil, "\(path) did not say what it is (`\(kind.command) \(versionArguments(kind)!.joined(separator: " "))` failed)")
        }
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        switch kind {
        case .openssl:
            let line = lines.first { $0.hasPrefix("OpenSSL") || $0.hasPrefix("LibreSSL") || $0.hasPrefix("BoringSSL") } ?? lines.first ?? ""
            return (line, openSSLProblem(library: line, what: path, fix: os == .darwin ? "brew install openssl@3" : "install OpenSSL 3"))
        case .curl:
            let line = lines.first { $0.hasPrefix("curl ") } ?? lines.first ?? ""
            guard let backend = curlDefaultTLSBackend(line) else {
                return (line, "\(path) names no TLS library in `curl -V`: these tests judge with curl on OpenSSL 3")
            }
            let fix = os == .darwin ? "brew install curl (Homebrew's is built on OpenSSL 3)" : "install curl built on OpenSSL 3"
            return (line, openSSLProblem(library: backend, what: "\(path) (\(backend))", fix: fix,
                                         appleNote: backend.hasPrefix("LibreSSL") || backend.hasPrefix("SecureTransport")
                                            ? "Apple's curl also consults the Keychain" : nil))
        case .pythonSSL:
            let line = lines.first { $0.hasPrefix("Python") } ?? ""
            guard let bar = line.range(of: "|") else { return (line, "\(path) did not report its ssl module") }
            let library = line[bar.upperBound...].trimmingCharacters(in: .whitespaces)
            let fix = os == .darwin ? "brew install python3 (the Command Line Tools' python3 links LibreSSL)" : "install python3 on OpenSSL 3"
            return (line, openSSLProblem(library: library, what: "\(path)'s ssl module", fix: fix))
        case .python:
            let line = lines.first { $0.hasPrefix("Python") } ?? ""
            let version = line.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let parts = version.split(separator: ".").compactMap { Int($0) }
            if parts.count >= 2, (parts[0], parts[1]) >= (3, 8) { return (line, nil) }
            return (line, "\(path) is \(line.isEmpty ? "not a working python3" : line); the scripts need Python 3.8 or later")
        case .chromium:
            let line = lines.first { $0.contains("Chromium") || $0.contains("Chrome") } ?? ""
            return line.isEmpty ? (lines.last, "\(path) is not Chromium (`--version` said \(lines.last ?? "nothing"))") : (line, nil)
        case .ss:
            let line = lines.first { $0.contains("iproute2") } ?? ""
            return line.isEmpty ? (lines.first, "\(path) is not iproute2's ss") : (line, nil)
        case .setpriv:
            let line = lines.first { $0.contains("util-linux") } ?? ""
            return line.isEmpty ? (lines.first, "\(path) is not util-linux's setpriv") : (line, nil)
        case .certutil:
            return (nil, nil)
        }
    }

    /// nil for OpenSSL 3 or later; otherwise why not. `library` reads `OpenSSL 3.0.19 …`, `OpenSSL/3.5.1` or
    /// `LibreSSL 3.3.6`.
    static func openSSLProblem(library: String, what: String, fix: String, appleNote: String? = nil) -> String? {
        let note = appleNote.map { "; \($0)" } ?? ""
        let scanner = library.replacingOccurrences(of: "/", with: " ")
        let words = scanner.split(separator: " ")
        guard let name = words.first else { return "\(what) is not OpenSSL: \(fix)" }
        let major = words.dropFirst().first.flatMap { Int($0.prefix { $0.isNumber }) }
        if name == "OpenSSL", let major, major >= 3 { return nil }
        if name == "OpenSSL" {
            return "\(what) is \(library): these tests judge with OpenSSL 3 or later (its security levels and verify texts); \(fix)"
        }
        return "\(what) is \(library), not OpenSSL: these tests judge with OpenSSL 3's verifier, security levels and "
            + "error texts\(note); \(fix)"
    }

    /// The TLS library curl uses by default, from the first line of `curl -V`: the first backend not in parentheses
    /// (a multi-SSL build lists the others in parentheses).
    static func curlDefaultTLSBackend(_ line: String) -> String? {
        let backends = ["OpenSSL", "LibreSSL", "BoringSSL", "AWS-LC", "quictls", "SecureTransport", "GnuTLS", "NSS",
                        "mbedTLS", "wolfSSL", "Schannel", "rustls", "BearSSL"]
        for word in line.split(separator: " ") where !word.hasPrefix("(") {
            if backends.contains(where: { word == $0 || word.hasPrefix($0 + "/") }) { return String(word) }
        }
        return nil
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where each of `tools` is the program it judges with; elsewhere the test is skipped and the
    /// skip names the tool, what was found instead, and how to get the right one.
    static func requires(_ tools: ExternalTool...) -> Self {
        let problems = tools.compactMap(\.problem)
        return .enabled(if: problems.isEmpty, Comment(rawValue: problems.joined(separator: "; ")))
    }
}

extension Trait where Self == ConditionTrait {
    /// `requires(tools)` for a test that needs them only when it runs as root (to drop to another user).
    static func requires(asRoot tools: ExternalTool...) -> Self {
        let problems = TestEnvironment.isRoot ? tools.compactMap(\.problem) : []
        return .enabled(if: problems.isEmpty, Comment(rawValue: "running as root: " + problems.joined(separator: "; ")))
    }
}

/// A test ran a tool that failed its check without saying `.requires(Tools.x)`.
struct ExternalToolUnavailable: Error, CustomStringConvertible {
    let tool: ExternalTool
    var description: String {
        "this test runs \(tool.kind.command), which cannot judge here: \(tool.problem ?? "?"). "
            + "Give the test `.requires(Tools.\(tool.kind == .pythonSSL ? "pythonSSL" : tool.kind.rawValue))` so it is skipped with that reason"
    }
}

extension Trait where Self == ConditionTrait {
    /// For a test that holds `count` descriptors at once in this process (a raw client and the fixture's end of each
    /// connection): skipped, saying so, where the open-file limit cannot be raised that far (`ulimit -n 256` as hard
    /// limit). Asking raises this process's limit as far as the OS allows, before any test runs.
    static func requiresDescriptors(_ count: UInt64) -> Self {
        let limit = FileDescriptorLimit.raiseOnce()
        return .enabled(if: limit.current >= count, Comment(rawValue: "holds about \(count) descriptors at once; this process may open "
            + "only \(limit.current) (ulimit -n; hard limit \(limit.hard))"))
    }
}
