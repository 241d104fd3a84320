import Foundation
import NIOCore
import Testing
@testable import TLSFixtures

/// The clients of one "stop with live connections" test, kept across suspension points (one task at a time).
final class LiveClients: @unchecked Sendable {
    var tls: [HeldTLSClient] = []
    var raw: [RawConnection] = []
    var responses: [String] = []
}

extension ReliabilitySuite {
    @Suite("Fixture lifecycle", .enabled(if: Platform.isLinux, "reads /proc/self"))
    struct Lifecycle {
        @Test("1,000 start/stop cycles in one process leak no descriptor, thread or port")
        func thousandCycles() async throws {
            let prepared = try reliabilityStore.prepare(try ScenarioCatalog.builtIn.scenario(named: "tls-v1-3"))
            let configuration = FixtureConfiguration(handshakeTimeout: .seconds(1), idleTimeout: .seconds(2))
            for _ in 0..<10 {   // warm-up: event-loop threads, the thread pool, allocator
                let fixture = try await FixtureServer.start(prepared, configuration: configuration)
                _ = try await ReliabilityFixtures.probe(fixture)
                await fixture.stop()
            }
            let baseline = ProcessResources.now()
            var ports = Set<Int>()
            var lastAddresses: [String] = []
            for cycle in 0..<1_000 {
                let fixture = try await FixtureServer.start(prepared, configuration: configuration)
                ports.insert(fixture.port)
                lastAddresses = fixture.boundAddresses
                if cycle % 100 == 0 {
                    // Every hundredth fixture really serves.
                    let result = try await ReliabilityFixtures.probe(fixture)
                    #expect(result.failure == nil && result.http?.status == 200, "cycle \(cycle): \(result.failure ?? "no HTTP answer")")
                }
                await fixture.stop()
            }
            var current = ProcessResources.now()
            let settled = await settle {
                current = ProcessResources.now()
                return current.descriptors <= baseline.descriptors + Bounds.descriptorSlack
                    && current.threads <= baseline.threads + Bounds.threadSlack
            }
            #expect(settled, "after 1,000 cycles: before \(baseline), after \(current)")
            #expect((current.residentKB - baseline.residentKB) / 1024 < Bounds.residentGrowthMB, "before \(baseline), after \(current)")
            let stillListening = SocketTable.ownSockets().filter { $0.state == 0x0A && ports.contains($0.localPort) }
            #expect(stillListening.isEmpty, "\(stillListening.count) stopped fixtures still listen")
            #expect(lastAddresses.contains("127.0.0.1"))
        }

        @Test("stopping a fixture with 20 live connections does not wait for its clients, and closes each of them")
        func stopWithLiveConnections() async throws {
            // Ten-minute timeouts, so nothing but stop() can close these connections, and a stop that waited on its
            // clients would take ten minutes.
            let fixture = try await ReliabilityFixtures.start("tls-v1-2", handshakeTimeout: .seconds(600),
                                                              idleTimeout: .seconds(600))
            let port = fixture.port
            let halfHello = Array(try HandshakeBytes.clientHello().prefix(100))
            // 10 keep-alive clients with an answered request, 5 silent TCP clients, 5 halfway through a ClientHello.
            let clients = try await offThePool { () -> LiveClients in
                let clients = LiveClients()
                for _ in 0..<10 {
                    let client = try HeldTLSClient(port: port)
                    clients.responses.append(client.keepAliveRequest())
                    clients.tls.append(client)
                }
                for index in 0..<10 {
                    let connection = try RawConnection(port: port)
                    if index >= 5 { connection.send(halfHello) }
                    clients.raw.append(connection)
                }
                return clients
            }
            for response in clients.responses {
                #expect(response.hasPrefix("HTTP/1.1 200"), "\(response.prefix(80))")
                #expect(!response.lowercased().contains("connection: close"))
            }
            let allOpen = await settle { fixture.connectionCount == 20 }
            #expect(allOpen, "the fixture holds \(fixture.connectionCount) of 20 connections")

            let start = Date()
            await fixture.stop()
            let elapsed = Date().timeIntervalSince(start)
            // A hang detector: stop() takes well under a second here; one that waited on its clients would take the
            // ten minutes of their timeouts. A loaded runner under a sanitizer is far from either.
            #expect(elapsed < 60, "stop() took \(elapsed) s with 20 live connections")

            let (events, rawClosed) = try await offThePool { () -> ([HeldTLSClient.NextEvent], [Bool]) in
                // Each ends at the close; 30 s only detects one that never comes.
                (clients.tls.map { $0.awaitServerClose(timeout: 30) },
                 clients.raw.map { $0.readUntilClosed(timeout: 30).closedAfter != nil })
            }
            // Established sessions end cleanly with close_notify; half-done handshakes simply close.
            #expect(events.allSatisfy { $0 == .closeNotify }, "\(events)")
            #expect(rawClosed.allSatisfy { $0 }, "\(rawClosed.filter { !$0 }.count) handshaking clients were left open")
            #expect(fixture.connectionCount == 0)
            #expect(SocketTable.serverSide(port: port) == 0)
            #expect(SocketTable.listeners(port: port) == 0)
            clients.tls = []
            clients.raw = []
        }

        @Test("a stopped fixture's port can be bound again at once, on every address it had")
        func rebindAtOnce() async throws {
            let first = try await ReliabilityFixtures.start("tls-v1-3", handshakeTimeout: .seconds(30), idleTimeout: .seconds(60))
            let port = first.port
            let addresses = first.boundAddresses
            #expect(SocketTable.listeners(port: port) == addresses.count)
            // Traffic first, and three sessions still open at stop(), which the server then closes first: its end of
            // each enters TIME_WAIT on this very port.
            for _ in 0..<5 { _ = try await ReliabilityFixtures.probe(first) }
            let clients = try await offThePool { () -> LiveClients in
                let clients = LiveClients()
                for _ in 0..<3 {
                    let client = try HeldTLSClient(port: port)
                    clients.responses.append(client.keepAliveRequest())
                    clients.tls.append(client)
                }
                return clients
            }
            await first.stop()

            let second = try await ReliabilityFixtures.start("tls-v1-3", port: port)
            #expect(second.port == port)
            #expect(second.boundAddresses == addresses, "the restarted fixture lost an address: \(addresses) → \(second.boundAddresses)")
            #expect(SocketTable.listeners(port: port) == addresses.count)
            let result = try await ReliabilityFixtures.probe(second)
            #expect(result.failure == nil && result.http?.status == 200, "\(result.failure ?? "no HTTP answer")")
            await second.stop()
            clients.tls = []
        }
    }
}
