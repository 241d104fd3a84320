import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What keeps one client on one listener from stopping the others: a cap on the connections each listener holds, and
/// a pause in accepting when the process has no descriptor left.
package enum ListenerLimits {
    /// The share of this process's descriptors one listener may hold: a quarter, so a client that opens connections
    /// to one fixture until it is refused leaves three quarters to every other fixture, the dashboard, the store and
    /// the event loops. (With the usual limit of 65,536 that is 16,384 connections; at 256, 64.)
    package static func automaticConnectionCap() -> Int {
        // What raiseOnce left in force (the limit it raised to, or the one it could not raise); 0 when unreadable.
        let current = FileDescriptorLimit.raiseOnce().current
        guard current > 0 else { return 16_384 }
        // RLIM_INFINITY is the largest value the type holds, so the clamp covers "no limit" too.
        return max(16, Int(min(current, 1 << 30)) / 4)
    }

    /// The dashboard serves a browser or two: a few hundred connections are plenty, whatever the descriptor limit.
    package static let dashboardConnectionCap = 256
}

extension ListenerLimits {
    /// A listener with the limits every port of the kit has (fixtures, dashboard, proxy): a pause in accepting when
    /// descriptors run out, connections admitted by `connections` (its cap), no Nagle delay, and the write-buffer marks
    /// back-pressure relies on. `configure` builds each admitted connection's pipeline.
    package static func bootstrap(label: String, logger: Logger, backlog: Int32, connections: ConnectionTracker,
                          configure: @escaping @Sendable (Channel) throws -> Void) -> ServerBootstrap {
        ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(label: label, logger: logger))
                }
            }
            .serverChannelOption(.backlog, value: backlog)
            // A stopped listener's port can be bound again at once.
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            // What a client that stops reading can make a connection queue: HTTPBackPressureHandler stops answering
            // (and reading) above the high mark. NIO's defaults, stated because the bound depends on them.
            .childChannelOption(.writeBufferWaterMark, value: FixtureServer.writeBufferWaterMark)
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture { try configure(channel) }
            }
    }
}

/// Pauses a listener for a second when `accept` fails for want of descriptors (EMFILE, ENFILE) or kernel memory
/// (ENOBUFS, ENOMEM), instead of retrying at once. The listening socket stays readable while connections wait in its
/// backlog, so an immediate retry is a busy loop: an event loop at 100% of a core, starving every connection it
/// serves, and nothing freed. The pause turns the channel's `autoRead` off and back on a second later.
///
/// Why not NIO's `AcceptBackoffHandler` (which the futures-based `ServerBootstrap` does not add anyway): it delays the
/// `read()` calls that pass through the pipeline, but in NIO 2.101 an accept that fails first in a readable event
/// leaves the channel's read pending and its socket registered for reading, so no `read()` comes to delay and the loop
/// spins on (the server channel only clears its pending read on a successful accept). `autoRead` off unregisters the
/// socket whatever the pending state; on again, NIO registers it and accepting resumes.
///
/// Reads: the accepted child `Channel`s, passed on. Handles: errors from `accept` (others passed on). Logs one line
/// per pause, naming the listener and the fix.
final class AcceptPauseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Channel
    typealias InboundOut = Channel

    static let pause = TimeAmount.seconds(1)
    private let label: String
    private let logger: Logger
    private var resume: Scheduled<Void>?

    init(label: String, logger: Logger) {
        self.label = label
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        guard resume == nil, let options = context.channel.syncOptions else { return }
        logger.warning("\(label): cannot accept connections (\(String(cString: strerror(error.errnoCode)))); trying again in 1 s. Close connections or raise the limit (ulimit -n)")
        try? options.setOption(.autoRead, value: false)
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
            resume = nil
            try? context.channel.syncOptions?.setOption(.autoRead, value: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
    }
}

/// Remembers live connections so `stop()` can close them, refuses new ones once stopping, and refuses (accepts and
/// closes at once, so the client learns at once) any beyond `limit`.
package final class ConnectionTracker: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: Channel] = [:]
        var closed = false
        /// True from the first refusal at the cap until a connection is admitted again, so it is logged once.
        var atCap = false
    }
    private let state = NIOLockedValueBox(State())
    let limit: Int
    private let label: String
    private let logger: Logger?

    package init(limit: Int = .max, label: String = "", logger: Logger? = nil) {
        self.limit = limit
        self.label = label
        self.logger = logger
    }

    func admit(_ channel: Channel) -> Bool {
        enum Decision { case admitted, stopping, full(firstRefusal: Bool) }
        let decision = state.withLockedValue { state -> Decision in
            if state.closed { return .stopping }
            if state.channels.count >= limit {
                defer { state.atCap = true }
                return .full(firstRefusal: !state.atCap)
            }
            state.atCap = false
            state.channels[ObjectIdentifier(channel)] = channel
            return .admitted
        }
        switch decision {
        case .admitted:
            channel.closeFuture.whenComplete { [weak self] _ in
                _ = self?.state.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
            }
            return true
        case .stopping:
            return false
        case .full(let firstRefusal):
            if firstRefusal {
                logger?.warning("\(label): \(limit) connections open, the most one listener may hold; refusing new ones until some close")
            }
            return false
        }
    }

    package var count: Int { state.withLockedValue { $0.channels.count } }

    package func closeAll(within limit: TimeAmount) async {
        let channels = state.withLockedValue { state -> [Channel] in
            state.closed = true
            return Array(state.channels.values)
        }
        guard !channels.isEmpty else { return }
        for channel in channels { channel.close(promise: nil) }
        let deadline = NIODeadline.now() + limit
        for channel in channels {
            let remaining = deadline - .now()
            guard remaining > .zero else { break }
            _ = try? await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await channel.closeFuture.get() }
                group.addTask { try await Task.sleep(nanoseconds: UInt64(max(remaining.nanoseconds, 0))) }
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }
}
