import Foundation
import TLSFixturesScenario

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `serve` does differently when this package's own tests start it, read from environment variables the tests
/// set for their children (TestEnvironment.childEnvironment), and only in debug builds (the tests'): test-only, never
/// part of what a user runs, and compiled out of release builds.
package enum TestHooks {
    /// The process id of the test process that started `serve`: `serve` stops when that parent exits (a test process
    /// that crashes leaves no `serve` behind). Only a direct child watches; a `serve` started through a shell does not.
    package static let parentVariable = "TLS_FIXTURES_TEST_PARENT"
    /// A folder: before a catalog scenario NAME is prepared, `serve` waits for as long as the file NAME exists in it.
    /// A test holds a scenario `preparing` that way, for as long as it needs, without racing key generation.
    package static let preparationGateVariable = "TLS_FIXTURES_TEST_PREPARATION_GATE"

    /// Starts watching the parent `parentVariable` names, when it is set and is this process's parent.
    ///
    /// Polled (getppid, five times a second, on a thread of its own) rather than Linux's PR_SET_PDEATHSIG: that
    /// signal comes when the *thread* that started the child exits (prctl(2)), and the tests start children from
    /// pool and Dispatch threads, which come and go while the test process lives. On the parent's exit the child is
    /// given to another process, so getppid changes. Then SIGTERM, as a user's Ctrl-C (the ports closed in order), and
    /// if that has not ended the process ten seconds later, `_exit`.
    package static func watchParent(environment: [String: String] = ProcessInfo.processInfo.environment) {
        #if DEBUG
        guard let named = environment[parentVariable], let parent = pid_t(named), parent > 1,
              getppid() == parent else { return }
        let thread = Thread {
            while getppid() == parent { usleep(200_000) }
            let line = "tls-fixtures: the test process that started this one (\(parent)) is gone: stopping\n"
            FileHandle.standardError.write(Data(line.utf8))
            kill(getpid(), SIGTERM)
            sleep(10)
            _exit(70)
        }
        thread.name = "tls-fixtures parent watch"
        thread.start()
        #endif
    }

    /// The fleet's preparation gate that `preparationGateVariable` asks for; nil when it is not set (or in a release
    /// build). It looks for the scenario's file every 50 ms, sleeping in between (no thread is held).
    package static func preparationGate(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (@Sendable (Scenario) async -> Void)? {
        #if DEBUG
        guard let folder = environment[preparationGateVariable], !folder.isEmpty else { return nil }
        return { scenario in
            let held = URL(fileURLWithPath: folder).appendingPathComponent(scenario.name).path
            while FileManager.default.fileExists(atPath: held) {
                // Cancelled (the fleet stopping): nothing is left to hold for.
                guard (try? await Task.sleep(nanoseconds: 50_000_000)) != nil else { return }
            }
        }
        #else
        return nil
        #endif
    }
}
