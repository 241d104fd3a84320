import ArgumentParser
import Foundation
import TLSFixtures

/// The one place the CLI puts its flags into the library's errors.
///
/// A library error says what to change in the library's terms (a property, an argument, `initializeCA(ifExists:)`),
/// since an XCTest user has no flags to pass. A CLI user has only flags, so each error code whose remedy is a flag gets
/// that flag here, and the one-line message keeps the library's reason.
enum FlagHints {
    /// How the CLI words an error's remedy.
    enum Hint {
        /// Say this instead of the library's fix.
        case instead(String)
        /// Say this after the library's fix.
        case also(String)
    }

    /// The hint for each PKI error code whose remedy is a flag; the other codes print as the library words them. `dir`
    /// is the store's `--dir` for the commands a hint prints (`StoreOptions.dirArgument`).
    static func pki(dir: String = "") -> [PKIError.Code: Hint] { [
        .emptySubjectAltNames: .instead("omit it instead (--no-san)"),
        .missingHost: .instead("give at least one --host (DNS name or IP address), or --no-san for a certificate without subjectAltName"),
        .requiresCA: .instead("add --ca (--permit, --exclude and --path-len apply to CA certificates only)"),
        .digestNotSignable: .instead("choose an RSA issuer (for example `--issuer rsa-intermediate`) or another --digest"),
        .fileExists: .instead("pass --force to replace it, or write somewhere else"),
        .caExists: .instead("pass --force to replace it (the old one is moved aside, not deleted), or --if-missing to keep it"),
        .noCA: .instead("run `tls-fixtures ca init\(dir)` (or point --dir / TLS_FIXTURES_CERTS at an existing store)"),
        .storeUnavailable: .instead("choose another with --dir or TLS_FIXTURES_CERTS"),
        .expiredCA: .instead("give `ca init` at least \(CAOptions.minimumDays) --days (3650 by default)"),
        .weakCAKey: .instead("use --key rsa:\(CAOptions.minimumRSABits) or larger, or leave --key out for EC P-256; "
                             + "--allow-weak-key makes it anyway (to test that refusal)"),
        .damagedCA: .instead("restore it from a backup, or replace the CA with `tls-fixtures ca init --force\(dir)` (devices "
                             + "that trust the old one must then trust the new one)"),
        .caMissing: .instead("restore the CA's files from a backup (a retired one is in ca/replaced-…/), or make a new CA "
                             + "with `tls-fixtures ca init --force\(dir)` (the files left are moved aside, not deleted; "
                             + "devices and apps that trust or pin the old one need the new one)"),
        .untrustedStore: .also("(--dir or TLS_FIXTURES_CERTS)"),
    ] }

    /// The CLI's one line for `error`, or nil when the library's own description is already right for a CLI user.
    /// `store`: the store options of the command that failed, so printed commands name the same store.
    static func line(for error: any Error, store: StoreOptions? = nil) -> String? {
        let dir = store?.dirArgument ?? ""
        switch error {
        case let error as PKIError:
            guard let hint = pki(dir: dir)[error.code] else { return nil }
            switch hint {
            case .instead(let text): return "\(error.reason); \(text)"
            case .also(let text): return "\(error.description) \(text)"
            }
        case let error as FixtureError where error.code == .addressNotAvailable:
            return bindLine(error)
        case let error as FixtureError where error.code == .portInUse:
            return "\(error.reason); stop what listens there, or choose other ports (--port-base N)"
        case let error as ScenarioError where error.code == .certificateNameTaken:
            return "\(error.reason); choose another --name, or add --force to use it anyway (the store makes its own again the "
                + "next time a scenario needs it)"
        case let error as ScenarioError where error.code == .dashboardPortTaken:
            return "\(error.reason) (serve puts it on --port-base, 9800 by default); choose another port, or leave \"port\" out to get "
                + "the next free one"
        case let error as ScenarioError where error.code == .domainNamesDoNotFit:
            return "\(error.reason); serve it without --domain (name the scenarios to serve), or give it fewer extraHosts"
        case let error as ScenarioError where error.code == .unreadable:
            return "--scenarios: \(error.reason); give a folder of scenario files (NAME.json) this user can read"
        case let error as ScenarioError where error.code == .unknown:
            return "\(error.reason); `tls-fixtures scenarios list` shows them all"
        case let error as ProbeError where error.code == .unresolvedFixtureName:
            return "\(error.reason) (map it with --resolve \(error.target):127.0.0.1, or the lines of `tls-fixtures hosts`)"
        case let error as FixtureDomainError where error.code == .notPermitted:
            return "\(error.reason); make a CA that permits it: `tls-fixtures ca init --force --domain \(error.domain)\(dir)` (the old CA "
                + "is moved aside, not deleted; trust the new one where the old one was trusted)"
        case let error as FixtureDomainError:
            return "--domain: \(error)"
        case let error as RunnerError where error.code == .nothingToServe:
            return "\(error.reason); name scenarios this OpenSSL supports (`tls-fixtures scenarios list`)"
        case let error as RunnerError where error.code == .notReady:
            return "\(error.reason); wait longer (--timeout SECONDS: a first run makes an RSA-8192 key, about a "
                + "minute)" + (error.runnerAnswered ? "" : ", or start `tls-fixtures serve` there")
        case let error as RunnerError where error.code == .willNotServe:
            return "\(error.reason); wait for scenarios it serves (--scenario NAME), or serve the one you need"
        case let error as RunnerConfigurationError:
            return configurationLine(error)
        case let error as RunnerError where error.code == .proxyPortInUse:
            // FixtureError's line names --port-base, which does not move the proxy's own port.
            return "\(error.reason); stop what listens there, or choose another --proxy-port (or leave it out: the "
                + "proxy then shares the dashboard's port)"
        case let error as LegacyHelperError:
            return "\(error.reason); rebuild it with `make legacy-openssl`, or serve without it (--legacy-helper none)"
        case let error as SimulatorTrustError where error.code == .nothingBooted:
            return "no simulator is booted (\(error.known ?? 0) known): boot one (`xcrun simctl list devices available` names "
                + "them; `xcrun simctl boot NAME`), "
                + "or name one with --device UDID"
        default:
            return nil
        }
    }

    /// A runner's configuration in `serve`'s flags: the library names the property, the line its flag.
    static func configurationLine(_ error: RunnerConfigurationError) -> String {
        let reason = serveFlags(error.reason)
        switch error.code {
        case .legacyHelperNotExecutable: return "\(reason); build it with `make legacy-openssl`, or pass none"
        default: return error.fix.map { "\(reason); \($0)" } ?? reason
        }
    }

    /// `line` (a runner's error or warning, naming `FixtureRunner.Configuration`'s properties) with `serve`'s flags.
    static func serveFlags(_ line: String) -> String {
        let flags = [("portBase", "--port-base"), ("proxyPort", "--proxy-port"),
                     ("maximumConnections", "--max-connections"), ("the legacy helper ", "--legacy-helper ")]
        return flags.reduce(line) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }

    /// `serve --bind` with an address this machine does not have.
    static func bindLine(_ error: FixtureError) -> String {
        "--bind \(error.address ?? ""): not an address of this machine (\(error.reason)); use 127.0.0.1, ::1 or an address "
            + "`ip addr` lists"
    }

    /// Reads the file a flag names (`flag` as the user typed it, such as `--ca`), saying which flag and what to do when
    /// it cannot: the library's reason names only the file.
    static func read(_ path: String, flag: String) throws -> Data {
        do { return try UserFile.read(path) } catch let error as UserFileError {
            throw CLIError(fileLine(error, flag: flag))
        }
    }

    /// The line for a file `flag` names that cannot be read.
    static func fileLine(_ error: UserFileError, flag: String) -> String {
        let fix: String
        switch error.code {
        case .missing: fix = "check the path (a relative one starts from the current folder)"
        case .permissionDenied: fix = "make it readable by this user (chmod, chown), or copy it somewhere you can read"
        case .notRegular: fix = "give the path of a file"
        default: fix = "give the path of the right file"
        }
        return "\(flag) \(error.path): \(error.problem); \(fix)"
    }

    /// Runs `body`, turning a library error into the CLI's line. For `validate()`: ArgumentParser wraps what it throws
    /// before `main` could see it.
    static func translating<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            if let line = line(for: error) { throw CLIError(line, code: JSONError.code(of: error)) }
            throw error
        }
    }

    /// The async form, for `run()` bodies that want the CLI's words before `main` (it translates too).
    static func translating<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            if let line = line(for: error) { throw CLIError(line, code: JSONError.code(of: error)) }
            throw error
        }
    }
}
