import NIOCore
import NIOPosix
import TLSFixturesServer

/// Holds a scenario's port while its keys are made in the background, so a port that is taken fails `serve` at once
/// (as it always did) rather than minutes later. A client that connects meanwhile is closed at once: an immediate,
/// unmistakable failure rather than a hang, and the dashboard says "preparing…".
package final class PortReservation: Sendable {
    private let channels: [Channel]

    private init(channels: [Channel]) { self.channels = channels }

    /// Listens where the fixture will (`configuration`'s addresses and port, loopback by default).
    static func hold(_ configuration: FixtureConfiguration) async throws -> PortReservation {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { $0.close() }
        var channels: [Channel] = []
        do {
            if let explicit = configuration.bindAddresses, !explicit.isEmpty {
                channels = try await FixtureServer.bind(bootstrap, addresses: explicit, port: configuration.port)
            } else {
                channels.append(try await FixtureServer.bind(bootstrap, address: "127.0.0.1", port: configuration.port))
                if let v6 = try? await FixtureServer.bind(bootstrap, address: "::1", port: configuration.port) { channels.append(v6) }
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return PortReservation(channels: channels)
    }

    /// Frees the port for the fixture itself.
    func release() async {
        for channel in channels { try? await channel.close() }
    }
}
