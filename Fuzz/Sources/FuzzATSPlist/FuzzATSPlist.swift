import Foundation
import FuzzSupport
import TLSFixtures

/// One plist, as `tls-fixtures ats check --plist FILE` reads a user's: every public entry point that takes plist
/// bytes, then what the tool does with the policy (print its warnings one per line, render it, ask for the requirements
/// of the hosts it names). Any outcome but a policy or a one-line `ATSPolicyError` is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATSPlist(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    use(attempt { try ATSPolicy.parse(plist: data) })
    use(attempt { try ATSPolicy(infoPlist: data) })
    use(attempt { try ATSPolicy(atsDictionary: data) })
    return 0
}

private func attempt(_ body: () throws -> ATSPolicy) -> ATSPolicy? {
    do {
        return try body()
    } catch let error as ATSPolicyError {
        requireOneLine("\(error)", "ATS policy error")
        return nil
    } catch {
        preconditionFailure("threw something other than ATSPolicyError: \(type(of: error)): \(error)")
    }
}

private func use(_ policy: ATSPolicy?) {
    guard let policy else { return }
    for warning in policy.warnings { requireOneLine(warning.description, "warning") }
    _ = ATSPlistRendering.openStep(policy.dictionary)
    _ = ATSPlistRendering.xml(policy.dictionary)
    _ = try? JSONEncoder().encode(policy.dictionary)
    let evaluator = ATSEvaluator(policy: policy)
    for key in policy.exceptionDomains.keys.sorted().prefix(8) + policy.pinnedDomains.keys.sorted().prefix(8) {
        for url in ["https://\(key)/", "http://sub.\(key)/"] {
            guard let url = URL(string: url) else { continue }
            _ = evaluator.requirements(for: url)
            _ = evaluator.offer(for: url)
        }
    }
}
