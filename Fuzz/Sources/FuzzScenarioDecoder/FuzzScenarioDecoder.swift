import Foundation
import FuzzSupport
import TLSFixtures

/// One scenario file, as `tls-fixtures --scenarios DIR` reads a user's: decode it, then do what the tool does next
/// with a decoded scenario (build its certificate profile, write it back out). Any outcome but a value or a one-line
/// `ScenarioError` is a finding: libFuzzer stops on the trap and keeps the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenarioDecoder(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    let scenario: Scenario
    do {
        scenario = try ScenarioCatalog.decode(data, source: "fuzz.json")
    } catch let error as ScenarioError {
        requireOneLine("\(error)", "scenario error")
        return 0
    } catch {
        preconditionFailure("decode threw something other than ScenarioError: \(type(of: error)): \(error)")
    }
    // What a decoded scenario goes on to: the certificate profile (throws on bad hosts; must never trap) …
    if let plan = scenario.certificate {
        do { _ = try plan.profile(scenarioName: scenario.name) } catch { requireOneLine("\(error)", "profile error") }
    }
    // … and `scenarios show --json` / the catalog document, which encode it. A decoded scenario encodes, and
    // decodes again to the same value.
    do {
        let encoded = try JSONEncoder().encode(scenario)
        let again = try ScenarioCatalog.decode(encoded, source: "round-trip.json")
        precondition(again == scenario, "round trip changed the scenario:\n\(scenario)\n\(again)")
    } catch {
        preconditionFailure("a decoded scenario does not round-trip: \(error)")
    }
    return 0
}
