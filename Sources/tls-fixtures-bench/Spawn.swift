import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// posix_spawn with stdin from /dev/null and stdout/stderr to `log` (or /dev/null): the cheapest way to start a peer,
/// so the measured start latency is the peer's own.
func spawnProcess(_ argv: [String], log: String = "/dev/null") throws -> pid_t {
    // An opaque pointer on Darwin (so `T()` does not compile there), a struct in Glibc.
    #if canImport(Darwin)
    var actions: posix_spawn_file_actions_t? = nil
    #else
    var actions = posix_spawn_file_actions_t()
    #endif
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { for arg in cArgs { free(arg) } }
    // The spawning thread may be a libdispatch worker, which blocks every signal: without resetting the mask the
    // peer would inherit it and ignore our SIGTERM.
    #if canImport(Darwin)
    var attributes: posix_spawnattr_t? = nil
    #else
    var attributes = posix_spawnattr_t()
    #endif
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, argv[0], &actions, &attributes, &cArgs, environ)
    guard rc == 0 else { throw BenchError("cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
    return pid
}

/// SIGTERM, then wait (SIGKILL after 5 s).
func terminate(_ pid: pid_t) {
    kill(pid, SIGTERM)
    var status: Int32 = 0
    for _ in 0..<500 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(10_000)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}
