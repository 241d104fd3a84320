import NIOPosix
import TLSFixturesServer

/// Holds a scenario's port while it is prepared, so a port that is taken fails `serve` at once rather than when the
/// scenario is ready. The port is bound but not listening: a client that connects meanwhile is refused ("connection
/// refused", what a server that is not up yet gives), never accepted and reset, and the dashboard, `/scenarios.json`
/// and `/api/health` say "preparing". Bound with SO_REUSEADDR, as the fixture will be, so a listener on the port
/// still counts as taken but the last run's connections in TIME_WAIT do not.
package final class PortReservation: Sendable {
    private let port: RefusingPort

    private init(port: RefusingPort) { self.port = port }

    /// Binds where the fixture will listen (`configuration`'s addresses and port, loopback by default).
    static func hold(_ configuration: FixtureConfiguration) async throws -> PortReservation {
        // Binding may resolve a name: not on the cooperative pool, nor behind key generation.
        try await BlockingWork.blockingIO {
            PortReservation(
                port: try RefusingPort(
                    addresses: configuration.bindAddresses.flatMap { $0.isEmpty ? nil : $0 }, port: configuration.port,
                    reusingAddress: true))
        }
    }

    /// Frees the port for the fixture itself; again is nothing.
    func release() async { port.close() }
}
