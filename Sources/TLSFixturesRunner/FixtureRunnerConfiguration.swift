import Foundation
import Logging
import NIOCore
import TLSFixturesFleet
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer
import TLSFixturesWire

extension FixtureRunner {
    /// Everything a runner is started with, checked once (`validate()`), the same for `tls-fixtures serve` (which
    /// builds it from its flags) and for a test or an app: the defaults are the CLI's.
    public struct Configuration: Sendable {
        /// The scenarios to serve on their catalog ports, by name; empty: every scenario of `catalog`.
        public var scenarios: [String] = []
        /// Where the names are looked up: the built-in catalog, or it plus your own files
        /// (`ScenarioCatalog.withUserScenarios(from:)`).
        public var catalog: ScenarioCatalog = .builtIn
        /// The certificate store the fixtures' certificates come from (and its CA, which devices trust).
        public var store: CertificateStore = .resolved()
        /// The dashboard's port; catalog scenario `P` listens on `P - 9800 + portBase`.
        public var portBase: Int = ScenarioCatalog.defaultPortBase
        /// Addresses to listen on; empty: loopback (127.0.0.1, and ::1 where it can).
        public var bindAddresses: [String] = []
        /// Time a client has to finish the handshake.
        public var handshakeTimeout: TimeAmount = .seconds(10)
        /// Silence after which a connection is closed (fixtures and front door alike).
        public var idleTimeout: TimeAmount = .seconds(60)
        /// Time each request has to arrive whole (fixtures and front door alike).
        public var headerTimeout: TimeAmount = .seconds(20)
        /// Connections one fixture holds at once; nil: a quarter of the descriptors this process may open.
        public var maximumConnections: Int? = nil
        /// Who serves the built-in scenarios the linked OpenSSL cannot (SSLv3, RC4, 3DES).
        public var legacyHelper: LegacyHelperChoice = .automatic
        /// Also name every fixture `NAME.DOMAIN` for each of these, and let the proxy resolve those names; the CA must
        /// permit them.
        public var domains: [String] = []
        /// Serve the proxy on this port of its own instead of the dashboard's.
        public var proxyPort: Int? = nil
        /// Let clients on other machines use the control API and the proxy (loopback only by default).
        public var allowRemoteClients = false
        /// Let SIGINT and SIGTERM stop `run()` (as `tls-fixtures serve` does); off, a signal keeps its default action.
        /// A process takes signals over once: set it for one runner at most.
        public var stopsOnSignals = false
        /// Serve the dashboard, the control API and the proxy; false serves the fixtures alone.
        package var frontDoor = true
        /// Told every connection to any fixture once it has closed (`serve --log-connections`, `--connection-log`).
        package var connectionEnded: (@Sendable (FleetConnection) -> Void)? = nil
        /// Told each request the proxy answers with an error instead of reaching a fixture.
        package var proxyRefused: (@Sendable (ProxyRefusal) -> Void)? = nil
        package var logger: Logger? = nil

        /// The CLI's defaults: every built-in scenario, the store `CertificateStore.resolved()` names, port base 9800,
        /// loopback, the legacy helper when one is built.
        public init() {}

        /// Throws the first thing wrong with this configuration, before anything is made or bound: an unknown
        /// scenario, a port base or proxy port that does not fit, a timeout or connection limit out of range, a
        /// domain that is not one, a legacy helper that is not an executable.
        public func validate() throws {
            for (timeout, name) in [(handshakeTimeout, "handshakeTimeout"), (idleTimeout, "idleTimeout"),
                                    (headerTimeout, "headerTimeout")] {
                _ = try Timeout(timeout, name: name)
            }
            if let maximumConnections, maximumConnections < 1 { throw RunnerConfigurationError.maximumConnections }
            if case .at(let helper) = legacyHelper, !FileManager.default.isExecutableFile(atPath: helper.path) {
                throw RunnerConfigurationError.legacyHelperNotExecutable(helper.path)
            }
            _ = try FixtureDomains.normalize(domains)
            _ = try catalog.scenarios(named: scenarios)
            guard (1...65_535).contains(portBase) else { throw RunnerConfigurationError.portBaseOutOfRange }
            let highest = catalog.highestPort(portBase: portBase)
            if highest > 65_535 {
                throw RunnerConfigurationError.portsAboveRange(portBase: portBase, span: highest - portBase)
            }
            if let proxyPort, !(1...65_535).contains(proxyPort) || proxyPort == portBase {
                throw RunnerConfigurationError.proxyPort(portBase: portBase)
            }
        }

        /// What these settings expose, one line each, for whoever starts the runner to show: addresses other than
        /// loopback (anyone who reaches them can use these deliberately insecure servers), privileged ports, and ports
        /// in the range the system picks outgoing ports from.
        public var warnings: [String] {
            var lines = bindAddresses.filter { !["127.0.0.1", "::1", "localhost"].contains($0) }.map { address in
                "warning: listening on \(address): these servers are deliberately insecure; anyone who can reach this "
                    + "address can use them"
            }
            // Up to the OCSP responder at base + 99.
            let highest = catalog.highestPort(portBase: portBase)
            let advice = "choose a base whose ports (base to base + \(highest - portBase)) stay from 1024 to "
                + "\(Self.ephemeralPortStart - 1), such as the default \(ScenarioCatalog.defaultPortBase)"
            if portBase < 1024 {
                // Privileged ports (below 1024) belong to system services: 22 is ssh, 53 DNS, 80 and 443 web servers.
                lines.append("warning: portBase \(portBase) puts the dashboard and fixtures on ports "
                             + "\(portBase)–\(highest), below 1024 where system services live (22 ssh, 53 DNS, 80 and "
                             + "443 web); " + advice)
            } else if highest >= Self.ephemeralPortStart {
                lines.append("warning: portBase \(portBase) puts ports up to \(highest) in Linux's ephemeral range "
                             + "(from \(Self.ephemeralPortStart)), where the system picks ports for outgoing connections "
                             + "and a fixture's port may be taken; " + advice)
            }
            return lines
        }

        /// Where Linux's ephemeral port range starts (net.ipv4.ip_local_port_range; IANA's is 49152): a base below it
        /// is advised.
        static let ephemeralPortStart = 32_768

        /// The scenarios named, in catalog order (every one when none is).
        func chosenScenarios() throws -> [Scenario] {
            scenarios.isEmpty ? catalog.scenarios : try catalog.scenarios(named: scenarios)
        }

        /// The fleet's options for these settings, with `hooks`.
        func fleetOptions(hooks: FixtureFleet.Hooks) -> FixtureFleet.Options {
            var options = FixtureFleet.Options()
            options.portBase = portBase
            options.bindAddresses = bindAddresses.isEmpty ? nil : bindAddresses
            options.handshakeTimeout = handshakeTimeout
            options.idleTimeout = idleTimeout
            options.headerTimeout = headerTimeout
            options.maximumConnections = maximumConnections
            options.logger = logger
            options.legacyHelper = legacyHelper.executable
            options.domains = domains
            options.connectionEnded = connectionEnded
            options.hooks = hooks
            return options
        }
    }

    /// Who serves the built-in scenarios the linked OpenSSL cannot (SSLv3, RC4, 3DES): the `make legacy-openssl`
    /// helper, a `tls-fixtures` linked with an OpenSSL that still has them, in a process of its own.
    public enum LegacyHelperChoice: Sendable, Equatable {
        /// `$TLS_FIXTURES_LEGACY_HELPER` (`none`: no helper), else the one built in this checkout, if any.
        case automatic
        /// No helper: those scenarios are reported unsupported, with the reason.
        case none
        /// This helper.
        case at(URL)

        /// The helper this choice names now; nil for none.
        var executable: URL? {
            switch self {
            case .automatic: return LegacyHelper.locate()
            case .none: return nil
            case .at(let url): return url
            }
        }
    }
}

/// A `FixtureRunner.Configuration` that cannot run: what is wrong, in the library's terms (the CLI names its flags).
package struct RunnerConfigurationError: CodedError {
    package typealias Code = ErrorCode<RunnerConfigurationError>

    package let code: Code
    package let reason: String
    package let fix: String?

    static let portBaseOutOfRange = RunnerConfigurationError(
        code: .portBaseOutOfRange, reason: "portBase must be a TCP port (1–65535)", fix: nil)

    static func portsAboveRange(portBase: Int, span: Int) -> RunnerConfigurationError {
        RunnerConfigurationError(
            code: .portsAboveRange,
            reason: "portBase \(portBase) puts ports above 65535 (the scenarios' and the OCSP responder's, up to base + "
                + "\(span))", fix: "use a base of at most \(65_535 - span)")
    }

    static func proxyPort(portBase: Int) -> RunnerConfigurationError {
        RunnerConfigurationError(
            code: .proxyPort,
            reason: "proxyPort must be a TCP port (1–65535) other than the dashboard's (portBase \(portBase))", fix: nil)
    }

    static let maximumConnections = RunnerConfigurationError(
        code: .maximumConnections, reason: "maximumConnections must be at least 1", fix: nil)

    static func legacyHelperNotExecutable(_ path: String) -> RunnerConfigurationError {
        RunnerConfigurationError(
            code: .legacyHelperNotExecutable, reason: "the legacy helper \(path) is not an executable",
            fix: "build it with `make legacy-openssl`, or choose LegacyHelperChoice.none")
    }
}

extension ErrorCode where Owner == RunnerConfigurationError {
    /// A port base that is not a TCP port.
    package static var portBaseOutOfRange: Self { Self("portBaseOutOfRange") }
    /// A port base that puts the catalog's highest port above 65535.
    package static var portsAboveRange: Self { Self("portsAboveRange") }
    /// A proxy port that is not a TCP port, or is the dashboard's.
    package static var proxyPort: Self { Self("proxyPort") }
    /// A connection limit below 1.
    package static var maximumConnections: Self { Self("maximumConnections") }
    /// A legacy helper path that is not an executable.
    package static var legacyHelperNotExecutable: Self { Self("legacyHelperNotExecutable") }
}
