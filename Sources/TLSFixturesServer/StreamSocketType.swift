#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `SOCK_STREAM` is an enum on Glibc and a plain `Int32` on Darwin.
package let streamSocketType: Int32 = {
    #if canImport(Glibc)
    return Int32(SOCK_STREAM.rawValue)
    #else
    return SOCK_STREAM
    #endif
}()

/// A new TCP socket of `domain` (`AF_INET`, `AF_INET6`) that a child process does not inherit; -1 (with errno set)
/// when the system refuses one.
///
/// Why close-on-exec: a program started with posix_spawn or fork and exec inherits every descriptor not so marked (NIO
/// marks its own; Foundation's `Process` closes the rest, but an app's or test's own spawning may not). An inherited
/// refusing port would stay bound after its owner closed it, until the child exited; an inherited probe connection
/// would stay open after the probe ended.
package func closeOnExecStreamSocket(_ domain: Int32, protocol: Int32 = 0) -> Int32 {
    #if canImport(Glibc)
    return socket(domain, streamSocketType | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
    #else
    let fd = socket(domain, streamSocketType, `protocol`)
    if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return fd
    #endif
}
