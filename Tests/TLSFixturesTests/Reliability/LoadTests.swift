import Foundation
import NIOCore
import Testing
@testable import TLSFixtures

/// Raw connections kept across suspension points (they are only touched from one task at a time).
final class HeldConnections: @unchecked Sendable {
    var connections: [RawConnection] = []
}

extension ReliabilitySuite {
    /// Many clients at once and many in a row. Each test has a warm-up round that is not measured: glibc malloc keeps
    /// the arenas a burst of connections needed, so resident memory plateaus after the first burst instead of
    /// returning to where it was. A leak shows as growth *between* identical rounds, which is what is bounded.
    @Suite("Load", .enabled(if: Platform.isLinux, "reads /proc/self"))
    struct Load {
        static let scenarios = ["tls-v1-0", "tls-v1-3"]
        static let concurrent = 1_000

        /// Opens `concurrent` connections that each send the first 5 bytes of a ClientHello (a record header, then
        /// nothing: a slowloris), waits until the fixture holds them all, checks a normal client is still served,
        /// then drops them (half with FIN, half with a reset).
        static func holdRound(_ fixture: FixtureServer, header: [UInt8]) async throws {
            let port = fixture.port
            let held = try await offThePool { () -> HeldConnections in
                let held = HeldConnections()
                held.connections = try (0..<concurrent).map { _ in
                    let connection = try RawConnection(port: port)
                    connection.send(header)
                    return connection
                }
                return held
            }
            let admitted = await settle(timeout: 20) { fixture.connectionCount >= concurrent }
            #expect(admitted, "the fixture holds \(fixture.connectionCount) of \(concurrent) connections")

            let result = try await ReliabilityFixtures.probe(fixture)
            #expect(result.failure == nil, "a normal client was refused while \(concurrent) connections were held: \(result.failure ?? "")")
            #expect(result.http?.status == 200)
            // They were all still open while the normal client was served.
            #expect(fixture.connectionCount >= concurrent)

            for (index, connection) in held.connections.enumerated() {
                if index % 2 == 0 { connection.close() } else { connection.reset() }
            }
            held.connections = []
        }

        @Test("1,000 connections held at once; a normal client is still served", .requiresDescriptors(2 * UInt64(Load.concurrent) + 256), arguments: scenarios)
        func thousandAtOnce(scenario: String) async throws {
            // A 30 s handshake deadline, so the 1,000 stay open for the whole round instead of being reaped.
            let (fixture, _) = try await ReliabilityFixtures.startWarm(scenario, handshakeTimeout: .seconds(30), idleTimeout: .seconds(60))
            do {
                let header = Array(try HandshakeBytes.clientHello().prefix(5))
                try await Self.holdRound(fixture, header: header)   // warm-up
                _ = await settle { fixture.connectionCount == 0 && SocketTable.connections(port: fixture.port) == 0 }
                let baseline = ProcessResources.now()
                try await Self.holdRound(fixture, header: header)
                try await ReliabilityFixtures.expectRecovered(fixture, baseline: baseline)
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }

        /// A connection reset by its client mid-handshake must release everything when it closes, not when the
        /// handshake deadline would have fired: otherwise a client that connects, sends a few bytes and resets, in a
        /// loop, pins memory for the whole deadline (10 s by default) per connection. The deadline here is 30 s and
        /// the rounds take a few seconds, so memory still held at the end of them is held by the deadline.
        /// A round of FIN-closed connections and one of resets come first, to warm the allocator up to the same
        /// plateau: with the FIN round alone, this test run by itself grew 33 MB (it passed only after other tests had
        /// warmed the process); with both, 12-13 MB, and with `errorCaught` no longer cancelling the deadline, 150 MB.
        @Test("connections reset mid-handshake free their memory at once, not at the handshake deadline", .requiresDescriptors(2 * UInt64(Load.concurrent) + 256),
              arguments: ["tls-v1-3"])
        func resetReleasesAtOnce(scenario: String) async throws {
            let (fixture, _) = try await ReliabilityFixtures.startWarm(scenario, handshakeTimeout: .seconds(30), idleTimeout: .seconds(60))
            do {
                let port = fixture.port
                let header = Array(try HandshakeBytes.clientHello().prefix(5))
                func round(reset: Bool) async throws {
                    let held = try await offThePool { () -> HeldConnections in
                        let held = HeldConnections()
                        held.connections = try (0..<Self.concurrent).map { _ in
                            let connection = try RawConnection(port: port)
                            connection.send(header)
                            return connection
                        }
                        return held
                    }
                    let admitted = await settle(timeout: 20) { fixture.connectionCount >= Self.concurrent }
                    #expect(admitted)
                    for connection in held.connections { if reset { connection.reset() } else { connection.close() } }
                    held.connections = []
                    let drained = await settle { fixture.connectionCount == 0 && SocketTable.connections(port: port) == 0 }
                    #expect(drained)
                }
                try await round(reset: false)
                try await round(reset: true)
                let warmed = ProcessResources.now()
                for _ in 0..<3 { try await round(reset: true) }
                let after = ProcessResources.now()
                let growthMB = (after.residentKB - warmed.residentKB) / 1024
                // 3,000 resets: a retention of 8 KB each would be 24 MB. (Observed: ~50 KB each held for the deadline,
                // 150 MB.) Under AddressSanitizer its quarantine is added, as in every memory bound of these suites:
                // freed memory it holds is resident (a CI rehearsal's ASan run measured 25 MB), and 150 MB still fails.
                let bound = 24 + Bounds.addressSanitizerQuarantineMB
                #expect(growthMB < bound, "resident memory grew by \(growthMB) MB (bound \(bound) MB) over 3,000 reset connections (\(warmed) → \(after)): each keeps its handler, SSL object and buffers until the 30 s handshake deadline")
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }

        /// Plain TCP connect/close for most (every tenth with a reset), then full handshakes with a normal client.
        static func shortConnections(_ count: Int, handshakes: Int, fixture: FixtureServer) async throws {
            let port = fixture.port
            let failures = try await offThePool { () -> Int in
                var failures = 0
                for index in 0..<count {
                    do {
                        let connection = try RawConnection(port: port)
                        if index % 10 == 9 { connection.reset() } else { connection.close() }
                    } catch {
                        failures += 1
                    }
                }
                return failures
            }
            #expect(failures == 0, "\(failures) of \(count) connects failed")
            // Six clients at a time: each TLS 1.3 probe spends ~40 ms waiting on a delayed ACK (the probe's socket
            // does not set TCP_NODELAY), which is latency, not work.
            let refused = ReliabilityBox<String>()
            let ca = fixture.caCertificate
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<6 {
                    group.addTask {
                        try await offThePool {
                            var options = ProbeOptions()
                            options.trustRoots = [ca]
                            // The probe's timeout covers its whole connection (connect, handshake, request, answer);
                            // it was 5 s per read. Under ASan on a loaded 2-core runner one handshake in fifty can
                            // take longer than 5 s in all, so the whole gets what four reads had.
                            options.timeout = 20
                            let probe = TLSProbe(options: options)
                            for _ in stride(from: worker, to: handshakes, by: 6) {
                                let result = try probe.probe(ProbeTarget(host: "localhost", port: port, connectAddress: "127.0.0.1"))
                                if let failure = result.failure ?? (result.http?.status == 200 ? nil : "no HTTP answer") { refused.append(failure) }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(refused.values.isEmpty, "\(refused.values.count) of \(handshakes) full handshakes failed, first: \(refused.values.first ?? "")")
        }

        @Test("10,000 short connections in a row, then 300 full handshakes", arguments: scenarios)
        func tenThousandInARow(scenario: String) async throws {
            let (fixture, _) = try await ReliabilityFixtures.startWarm(scenario)
            do {
                try await Self.shortConnections(1_000, handshakes: 30, fixture: fixture)   // warm-up
                _ = await settle { fixture.connectionCount == 0 }
                let baseline = ProcessResources.now()
                try await Self.shortConnections(10_000, handshakes: 300, fixture: fixture)
                try await ReliabilityFixtures.expectRecovered(fixture, baseline: baseline)
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }
    }
}
