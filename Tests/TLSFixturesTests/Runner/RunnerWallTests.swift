import Foundation
import Testing

/// The wall between the runner's two rooms (issue 23), read from the sources: the fleet speaks no HTTP, and no room
/// of the front door holds the whole runner or the whole fleet, only the narrow views it uses. (That the fleet does not
/// depend on NIOHTTP1 at all, check-layers.py holds.)
@Suite("The wall between the fleet and the front door")
struct RunnerWallTests {
    static func sources(_ target: String) throws -> [(name: String, text: String)] {
        let folder = TestEnvironment.packageRoot.appendingPathComponent("Sources/\(target)")
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
            .map { ($0.lastPathComponent, try String(contentsOf: $0, encoding: .utf8)) }
    }

    /// Lines that name an HTTP status: a 4xx or 5xx number on its own, NIO's status type, or HTTP itself.
    static func httpMentions(_ files: [(name: String, text: String)]) -> [String] {
        var found: [String] = []
        for (name, text) in files {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(/(?:^|[^\w.:])[45]\d\d(?:$|[^\w.])/) || line.contains("HTTPResponseStatus")
                || line.contains("NIOHTTP1")
                || line.contains(/\bstatus(Code)?:\s*\d/)
            {
                found.append("\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        return found
    }

    @Test("no file in the fleet mentions an HTTP status")
    func fleetKnowsNoHTTP() throws {
        let fleet = try Self.sources("TLSFixturesFleet")
        #expect(fleet.count >= 8, "the scan found \(fleet.map(\.name))")
        #expect(Self.httpMentions(fleet).isEmpty, "\(Self.httpMentions(fleet))")
        // The scan finds what it looks for (it would otherwise pass on anything).
        let planted = Self.httpMentions([
            ("Planted.swift", "throw ControlAPIFailure(429, \"full\")\nlet s = HTTPResponseStatus.ok\n")
        ])
        #expect(planted.count == 2, "\(planted)")
        #expect(
            Self.httpMentions([("Ports.swift", "let port = 9800 + 404_000\nlet bits = 4096\nlet t = 0.500\n")]).isEmpty)
    }

    @Test("no type of the front door holds a FixtureRunner or a FixtureFleet; they hold the fleet's narrow views")
    func frontDoorHoldsNarrowViews() throws {
        // FixtureRunner.swift is the composition itself: it holds both rooms by design.
        let door = try Self.sources("TLSFixturesRunner").filter { $0.name != "FixtureRunner.swift" }
        #expect(door.count >= 10, "the scan found \(door.map(\.name))")
        var holders: [String] = []
        for (name, text) in door {
            for line in text.split(separator: "\n")
            where line.contains(/^\s*(private |package |public )?(let|var) \w+: .*(FixtureRunner|FixtureFleet)\b/) {
                holders.append("\(name): \(line.trimmingCharacters(in: .whitespaces))")
            }
            // Initializers and functions that take the whole runner would hold it too.
            for line in text.split(separator: "\n") where line.contains(/\w+: (FixtureRunner|FixtureFleet)[,)]/) {
                holders.append("\(name): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(holders.isEmpty, "\(holders)")
        let views = door.map(\.text).joined()
        for view in ["any FleetQueries", "any FixtureLookup", "FleetQueries & FleetCommands"] {
            #expect(views.contains(view), "no room of the front door uses \(view)")
        }
    }
}
