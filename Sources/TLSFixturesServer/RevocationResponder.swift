import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSFixturesPKI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The OCSP responder and CRL endpoint a revocation fixture's leaf names, and the port that refuses for
/// `ocsp-unreachable`: one set per `serve` (on fixed ports), one per in-process fixture (on ports the system picks).
package final class RevocationServices: Sendable {
    package let registry: RevocationRegistry
    /// The URLs the leaves name.
    public let endpoints: RevocationEndpoints
    private let responder: RevocationResponder?
    private let refusing: RefusingPort?

    private init(registry: RevocationRegistry, endpoints: RevocationEndpoints, responder: RevocationResponder?, refusing: RefusingPort?) {
        self.registry = registry; self.endpoints = endpoints; self.responder = responder; self.refusing = refusing
    }

    /// Starts what is asked for on `bindAddresses` (default loopback): the responder on `responderPort`, a refusing
    /// port on `refusingPort` (0 picks free ones). A service not asked for is named with port 0, which nothing uses.
    public static func start(bindAddresses: [String]?, responderPort: Int, refusingPort: Int,
                             responder wantsResponder: Bool = true, refusing wantsRefusing: Bool = true) async throws -> RevocationServices {
        let registry = RevocationRegistry()
        var responder: RevocationResponder? = nil
        var refusing: RefusingPort? = nil
        do {
            if wantsResponder {
                responder = try await RevocationResponder.start(registry: registry, bindAddresses: bindAddresses, port: responderPort)
            }
            if wantsRefusing {
                refusing = try RefusingPort(addresses: bindAddresses, port: refusingPort)
            }
        } catch {
            await responder?.stop()
            throw error
        }
        let endpoints = RevocationEndpoints(host: FixtureServer.urlHost(listeningOn: bindAddresses),
                                            responderPort: responder?.port ?? 0, refusingPort: refusing?.port ?? 0)
        return RevocationServices(registry: registry, endpoints: endpoints, responder: responder, refusing: refusing)
    }

    package var responderPort: Int? { responder?.port }
    package var refusingPort: Int? { refusing?.port }
    /// Whether the responder still listens or the refusing port is still held (what a stopped fixture must not leave).
    package var isRunning: Bool { (responder?.isListening ?? false) || (refusing?.isHeld ?? false) }

    package func stop() async {
        await responder?.stop()
        refusing?.close()
    }
}

/// Plain HTTP: `POST /ocsp` (RFC 6960 §A.1, body `application/ocsp-request`), `GET /ocsp/BASE64` (the same request in
/// the URL, as Apple's trustd and browsers send small ones), `GET /crl/AUTHORITY.crl` (DER, `application/pkix-crl`).
final class RevocationResponder: Sendable {
    let port: Int
    private let channels: [Channel]
    private let connections: ConnectionTracker

    private init(port: Int, channels: [Channel], connections: ConnectionTracker) {
        self.port = port; self.channels = channels; self.connections = connections
    }

    static func start(registry: RevocationRegistry, bindAddresses: [String]?, port: Int) async throws -> RevocationResponder {
        let connections = ConnectionTracker()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(30)))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(RevocationHTTPHandler(registry: registry))
                }
            }
        var channels: [Channel] = []
        do {
            var boundPort = port
            for address in bindAddresses ?? ["127.0.0.1"] {
                let channel = try await FixtureServer.bind(bootstrap, address: address, port: boundPort)
                channels.append(channel)
                boundPort = channel.localAddress?.port ?? boundPort
            }
            if bindAddresses == nil, let v6 = try? await FixtureServer.bind(bootstrap, address: "::1", port: boundPort) {
                channels.append(v6)
            }
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        return RevocationResponder(port: channels.first?.localAddress?.port ?? port, channels: channels, connections: connections)
    }

    var isListening: Bool { channels.contains { $0.isActive } }

    func stop() async {
        for channel in channels { try? await channel.close() }
        await connections.closeAll(within: .seconds(1))
    }
}

/// Reads: `HTTPServerRequestPart`. Writes: `HTTPServerResponsePart` — an OCSP response, a CRL, or 404/405/413.
/// Bodies over 64 KiB are refused: an OCSP request is a few hundred bytes.
final class RevocationHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maximumBody = 64 * 1024
    private let registry: RevocationRegistry
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(registry: RevocationRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
            body = []
            tooLarge = false
        case .body(var chunk):
            if body.count + chunk.readableBytes > Self.maximumBody { tooLarge = true; return }
            body += chunk.readBytes(length: chunk.readableBytes) ?? []
        case .end:
            guard let request = head else { return }
            head = nil
            let (status, type, payload) = answer(request)
            respond(context: context, request: request, status: status, contentType: type, body: payload)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }

    private func answer(_ request: HTTPRequestHead) -> (HTTPResponseStatus, String, Data) {
        let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "")
        let text = "text/plain; charset=utf-8"
        if tooLarge { return (.payloadTooLarge, text, Data("an OCSP request is at most \(Self.maximumBody) bytes\n".utf8)) }
        switch (request.method, path) {
        case (.POST, "/ocsp"), (.POST, "/ocsp/"):
            return (.ok, "application/ocsp-response", registry.ocspResponse(to: Data(body)))
        case (.GET, let path) where path.hasPrefix("/ocsp/"):
            // RFC 6960 §A.1: base64 of the DER request, then URL-encoded ('+', '/', '=' may arrive percent-encoded).
            let encoded = String(path.dropFirst("/ocsp/".count)).removingPercentEncoding ?? ""
            guard let der = Data(base64Encoded: encoded) else {
                return (.ok, "application/ocsp-response", registry.ocspResponse(to: Data()))
            }
            return (.ok, "application/ocsp-response", registry.ocspResponse(to: der))
        case (.GET, let path) where path.hasPrefix("/crl/") && path.hasSuffix(".crl"):
            let name = String(path.dropFirst("/crl/".count).dropLast(".crl".count))
            guard let authority = BuiltinAuthority(rawValue: name), let crl = try? registry.crl(of: authority) else {
                return (.notFound, text, Data("no CRL named \(name) here\n".utf8))
            }
            return (.ok, "application/pkix-crl", crl)
        case (.GET, _), (.HEAD, _):
            return (.notFound, text, Data("this is an OCSP responder (POST /ocsp) and CRL endpoint (GET /crl/NAME.crl)\n".utf8))
        default:
            return (.methodNotAllowed, text, Data("use POST /ocsp, GET /ocsp/REQUEST or GET /crl/NAME.crl\n".utf8))
        }
    }

    private func respond(context: ChannelHandlerContext, request: HTTPRequestHead, status: HTTPResponseStatus, contentType: String, body: Data) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        let keepAlive = request.isKeepAlive && !tooLarge
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
    }
}

/// A TCP port that refuses every connection: bound (so nothing else can take it) but never listening, so the kernel
/// answers each SYN with a reset and a client reports "connection refused". No SO_REUSEADDR by default, so no other
/// socket can share it while it is held.
package final class RefusingPort: Sendable {
    package let port: Int
    private let descriptors: NIOLockedValueBox<[Int32]>

    /// `addresses` nil: 127.0.0.1, and ::1 where there is IPv6. `reusingAddress`: with SO_REUSEADDR, for a port a
    /// fixture will listen on later (as fixtures set it), so its connections still in TIME_WAIT from a run a moment ago
    /// do not count as the port in use; a listening socket on it still does (and, on Darwin, one on its wildcard
    /// address: `WildcardConflict`).
    package init(addresses: [String]?, port requested: Int, reusingAddress: Bool = false) throws {
        var held: [Int32] = []
        var port = requested
        do {
            for address in addresses ?? ["127.0.0.1"] {
                let fd = try Self.bind(address: address, port: port, reusingAddress: reusingAddress)
                held.append(fd)
                port = Self.localPort(fd) ?? port
            }
            if addresses == nil, let v6 = try? Self.bind(address: "::1", port: port, reusingAddress: reusingAddress) {
                held.append(v6)
            }
        } catch {
            for fd in held { closeSocket(fd) }
            throw error
        }
        self.port = port
        self.descriptors = NIOLockedValueBox(held)
    }

    package var isHeld: Bool { !descriptors.withLockedValue { $0.isEmpty } }

    /// Frees the port; again is nothing (each descriptor is closed once).
    package func close() {
        let held = descriptors.withLockedValue { held -> [Int32] in defer { held = [] }; return held }
        for fd in held { closeSocket(fd) }
    }

    deinit { close() }

    private static func bind(address: String, port: Int, reusingAddress: Bool) throws -> Int32 {
        // NIO spells the address (IPv4 or IPv6, by its text, or a name it resolves) as the sockaddr `bind` takes.
        guard let socketAddress = (try? SocketAddress(ipAddress: address, port: port))
            ?? (try? SocketAddress.makeAddressResolvingHost(address, port: port)) else {
            throw FixtureError.cannotBind(address: address, port: port, reason: "not an IPv4 or IPv6 address")
        }
        if reusingAddress, WildcardConflict.held(port: port, covering: address) {
            throw FixtureError.portInUse(port: port, address: address)
        }
        let v6 = socketAddress.protocol == .inet6
        let fd = closeOnExecStreamSocket(v6 ? AF_INET6 : AF_INET)
        guard fd >= 0 else {
            let code = errno
            if code == EMFILE || code == ENFILE { throw FixtureError.tooManyOpenFiles(address: address, port: port) }
            throw FixtureError.cannotBind(address: address, port: port, reason: String(cString: strerror(code)))
        }
        var one: Int32 = 1
        if reusingAddress { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if v6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let rc = socketAddress.withSockAddr { Glibc_or_Darwin_bind(fd, $0, socklen_t($1)) }
        if rc != 0 {
            let code = errno
            closeSocket(fd)
            if code == EADDRINUSE { throw FixtureError.portInUse(port: port, address: address) }
            if code == EADDRNOTAVAIL { throw FixtureError.addressNotAvailable(address: address, port: port) }
            throw FixtureError.cannotBind(address: address, port: port, reason: String(cString: strerror(code)))
        }
        return fd
    }

    private static func localPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return nil }
        if storage.ss_family == sa_family_t(AF_INET6) {
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
    }
}

@inline(__always)
private func Glibc_or_Darwin_bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { bind(fd, address, length) }

@inline(__always)
private func closeSocket(_ fd: Int32) { _ = close(fd) }
