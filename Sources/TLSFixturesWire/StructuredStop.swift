/// Runs `body` with a started `resource`, then awaits `stop` on it whether the body returned or threw.
///
/// The one implementation of the structured stop that `withFixture` (a fixture in this process) and `withRemoteFixture`
/// (a fixture in the runner, for iOS) both promise: the listener is gone before the call returns. A `defer` that starts
/// an unstructured `Task` to stop it gives no such promise: the test, and the process, can end before that task runs.
package func runThenStop<Resource: Sendable, T: Sendable>(_ resource: Resource, _ body: (Resource) async throws -> T,
                                                         stop: (Resource) async -> Void) async throws -> T {
    do {
        let value = try await body(resource)
        await stop(resource)
        return value
    } catch {
        await stop(resource)
        throw error
    }
}
