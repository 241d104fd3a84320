import Foundation
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesServer

// Preparing scenarios against a store, a core each: what `serve` does before it listens and `tls-fixtures prepare`
// does alone. No state of the fleet's: a static function of the scenarios and the store.
extension FixtureFleet {
    /// The order `prepare` takes scenarios in.
    package enum PreparationOrder: Sendable {
        /// Slowest keys first: everything done soonest (`tls-fixtures prepare`).
        case slowestFirst
        /// Cheapest first: the most scenarios ready soonest (`serve`, which serves each the moment it is ready).
        case cheapestFirst
    }

    /// Prepares scenarios in parallel (one per core, in `order`): key generation is CPU-bound, and the store's per-item
    /// locks keep parallel preparations from making anything twice. The results come back by scenario name.
    @discardableResult
    package static func prepare(
        _ scenarios: [Scenario], store: CertificateStore, domains: [String] = [],
        revocationEndpoints: RevocationEndpoints = .serveDefault, order: PreparationOrder = .slowestFirst,
        progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> [String: Result<PreparedScenario, Error>] {
        try await prepare(
            scenarios, store: store, domains: domains, revocationEndpoints: revocationEndpoints, order: order,
            progress: progress, before: { _ in }, each: { _, result in result })
    }

    /// `prepare`, with `each` run on every result as it comes (on the task that made it, so a slow `each` holds back
    /// nothing else); what `each` returns comes back by scenario name.
    static func prepare<Outcome: Sendable>(
        _ scenarios: [Scenario], store: CertificateStore, domains: [String],
        revocationEndpoints: RevocationEndpoints, order: PreparationOrder,
        progress: @escaping @Sendable (Progress) -> Void,
        before: @escaping @Sendable (Scenario) async -> Void,
        each: @escaping @Sendable (Scenario, Result<PreparedScenario, Error>) async -> Outcome
    ) async throws -> [String: Outcome] {
        // The CA first, once, so parallel preparations do not all wait on its lock.
        // May generate a key: not on the cooperative pool.
        _ = try await BlockingWork.blockingIO { try store.ca() }
        let ordered = Self.ordered(scenarios, store: store, order)
        let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (String, Outcome).self) { group in
            var results: [String: Outcome] = [:]
            var iterator = ordered.makeIterator()
            func launch(_ scenario: Scenario) {
                group.addTask {
                    await before(scenario)
                    if let plan = scenario.certificate, case .rsa(let bits) = plan.key, bits >= 4096,
                        !store.hasKey(named: plan.keyName ?? scenario.name, spec: plan.key)
                    {
                        progress(.generating(scenario: scenario.name, key: plan.key))
                    }
                    // Slow keys on every core (finishing soonest is what matters here), quick ones beside them, and
                    // what makes nothing at once.
                    let lane = BlockingWork.Lane.preparing(scenario, in: store, quick: .quick, slow: .everyCore)
                    let result = await Result {
                        try await BlockingWork.prepare(lane) {
                            try store.prepare(scenario, domains: domains, revocationEndpoints: revocationEndpoints)
                        }
                    }
                    progress(.prepared(scenario: scenario.name))
                    return (scenario.name, await each(scenario, result))
                }
            }
            for _ in 0..<width { if let next = iterator.next() { launch(next) } }
            while let (name, result) = await group.next() {
                results[name] = result
                if let next = iterator.next() { launch(next) }
            }
            return results
        }
    }

    /// `scenarios` in the order `prepare` takes them on this store; ties keep their order.
    static func ordered(_ scenarios: [Scenario], store: CertificateStore, _ order: PreparationOrder) -> [Scenario] {
        // Costs are read once (each looks at the store).
        let costed = scenarios.enumerated().map {
            (offset: $0.offset, scenario: $0.element, cost: store.preparationCost($0.element))
        }
        return costed.sorted {
            $0.cost != $1.cost ? (order == .cheapestFirst) == ($0.cost < $1.cost) : $0.offset < $1.offset
        }.map(\.scenario)
    }
}
