import Foundation
import Testing
@testable import TLSFixtures

extension ReliabilitySuite {
    /// The connection records' ring under load: however many clients come, a fixture keeps `connectionRecordLimit`
    /// records and no more, so its memory stays bounded. Every connection here carries a full ClientHello (the heaviest
    /// record: OpenSSL's every suite, capped at 128 names), offering TLS 1.0–1.2 to the TLS 1.3-only fixture, which
    /// refuses it at once with protocol_version instead of spending a key exchange on it.
    @Suite("Connection records under load", .enabled(if: Platform.isLinux, "reads /proc/self"))
    struct ConnectionRecordLoad {
        static func round(_ count: Int, fixture: FixtureServer, hello: [UInt8]) async throws {
            let port = fixture.port
            let failures = try await offThePool { () -> Int in
                var failures = 0
                for _ in 0..<count {
                    do {
                        let connection = try RawConnection(port: port)
                        connection.send(hello)
                        _ = connection.readFirst(timeout: 5)   // the alert: the fixture has read and recorded the hello
                        connection.close()
                    } catch {
                        failures += 1
                    }
                }
                return failures
            }
            #expect(failures == 0, "\(failures) of \(count) connects failed")
            _ = await settle { fixture.connectionCount == 0 }
        }

        @Test("10,000 connections to one fixture: 64 records kept, the newest, and memory bounded")
        func tenThousand() async throws {
            let (fixture, _) = try await ReliabilityFixtures.startWarm("tls-v1-3")
            do {
                let hello = try HandshakeBytes.clientHello(minVersion: .tls1_0, maxVersion: .tls1_2)
                try await Self.round(1_000, fixture: fixture, hello: hello)   // warm-up: the allocator's plateau
                let baseline = ProcessResources.now()
                let first = fixture.latestConnectionID + 1
                try await Self.round(10_000, fixture: fixture, hello: hello)
                let after = ProcessResources.now()

                let last = fixture.latestConnectionID
                #expect(last - first + 1 == 10_000)
                let records = fixture.connections
                #expect(records.count == 64)
                #expect(records.first?.id == last - 63 && records.last?.id == last, "kept \(records.first?.id ?? 0)…\(records.last?.id ?? 0)")
                #expect(records.allSatisfy { ($0.clientHello?.cipherSuites.count ?? 0) > 50 }, "every record carries a full hello")
                #expect(records.allSatisfy { $0.outcome?.alert == .protocolVersion })
                let growthMB = (after.residentKB - baseline.residentKB) / 1024
                // Measured: with the ring unbounded (its capacity raised past 10,000) this round grew 23 MB, about
                // 2.3 KB a record (its JSON is 5.9 KB); with 64 kept, 0 MB. The bound sits between them.
                #expect(growthMB < 8, "resident memory grew by \(growthMB) MB over 10,000 recorded connections (\(baseline) → \(after))")
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }
    }
}
