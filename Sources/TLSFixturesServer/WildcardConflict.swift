import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds the port conflict BSD hides. With SO_REUSEADDR (which fixtures set, so a stopped fixture's port is free again
/// at once), Darwin lets a socket bind 127.0.0.1:P while another program holds *:P: clients of 127.0.0.1 then reach
/// the fixture and clients of every other address the other server, and neither side hears of it. Linux refuses that
/// bind with EADDRINUSE. Before binding a specific address on a fixed port, a throwaway socket — with SO_REUSEADDR
/// too, so connections in TIME_WAIT and sockets on other specific addresses do not count — tries the wildcard address
/// of the same family; if that is taken, the port is reported in use, as Linux reports it.
package enum WildcardConflict {
    /// The wildcard address of `address`'s family (`0.0.0.0`, `::`); nil when `address` is itself a wildcard.
    package static func wildcard(covering address: String) -> String? {
        if ["0.0.0.0", "::", "*", ""].contains(address) { return nil }
        return address.contains(":") ? "::" : "0.0.0.0"
    }

    /// Whether another socket holds the wildcard address on `port`, given a way to try binding an address with
    /// SO_REUSEADDR that answers errno (0 when the bind succeeded). Port 0 never conflicts: the kernel picks a free one.
    package static func held(port: Int, covering address: String, tryBind: (String, Int) -> Int32 = probeBind) -> Bool {
        guard port != 0, let wildcard = wildcard(covering: address) else { return false }
        return tryBind(wildcard, port) == EADDRINUSE
    }

    /// Binds (never listens) a throwaway TCP socket with SO_REUSEADDR to `address`:`port` and closes it; errno or 0.
    /// IPv6 sockets are IPv6-only, so the check of `::` is not also one of 0.0.0.0.
    static func probeBind(_ address: String, _ port: Int) -> Int32 {
        // NIO spells the address (IPv4 or IPv6, by its text) as the sockaddr `bind` takes.
        guard let socketAddress = try? SocketAddress(ipAddress: address, port: port) else { return EINVAL }
        let v6 = socketAddress.protocol == .inet6
        let fd = closeOnExecStreamSocket(v6 ? AF_INET6 : AF_INET)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if v6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let result = socketAddress.withSockAddr { bind(fd, $0, socklen_t($1)) }
        return result == 0 ? 0 : errno
    }
}
