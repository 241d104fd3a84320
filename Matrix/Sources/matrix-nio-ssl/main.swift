import Foundation
import MatrixTargets
import NIOCore
import NIOPosix
import NIOSSL

// BoringSSL as swift-nio-ssl ships it: `TLSConfiguration.makeClientConfiguration()` with the built-in CA as the only
// trust root, and nothing else changed. Connects to 127.0.0.1, sends SNI and checks the name `host` (the address
// itself when `host` is an IP literal), then asks for `/` and accepts only an HTTP 200.

// MATRIX_PIN_CERTIFICATE=FILE makes it a pinning client instead, as an app's is: a custom verification callback accepts
// the server only when its leaf carries the public key of the PEM certificate in FILE. swift-nio-ssl's callback replaces
// BoringSSL's own checks, so in this mode the pin is the only check. The kit's own tests use it (a pinning client's
// refusal, as the fixture records it); `make matrix` does not.

let (caFile, target) = MatrixCommandLine.parse()
let pinnedKey: [UInt8]? = ProcessInfo.processInfo.environment["MATRIX_PIN_CERTIFICATE"].map { path in
    do {
        guard let certificate = try NIOSSLCertificate.fromPEMFile(path).first else { MatrixCommandLine.fail("no certificate in \(path)") }
        return try certificate.extractPublicKey().toSPKIBytes()
    } catch {
        MatrixCommandLine.fail("cannot read the pinned certificate \(path): \(error)")
    }
}
let context: NIOSSLContext
do {
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.trustRoots = .file(caFile)
    context = try NIOSSLContext(configuration: configuration)
} catch {
    MatrixCommandLine.fail("cannot load \(caFile): \(error)")
}

struct Timeout: Error, CustomStringConvertible {
    var description: String { "no answer within 15 s" }
}

func fetch(_ target: MatrixTarget) async throws -> String {
    let address = target.hostIsIPAddress ? target.host : "127.0.0.1"
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connectTimeout(.seconds(10))
        .connect(host: address, port: target.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let serverHostname = target.hostIsIPAddress ? nil : target.host
                let handler = try pinnedKey.map { pinned in
                    try NIOSSLClientHandler(context: context, serverHostname: serverHostname) { certificates, promise in
                        let leafKey = try? certificates.first?.extractPublicKey().toSPKIBytes()
                        promise.succeed(leafKey == pinned ? .certificateVerified : .failed)
                    }
                } ?? NIOSSLClientHandler(context: context, serverHostname: serverHostname)
                try channel.pipeline.syncOperations.addHandler(handler)
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
    return try await channel.executeThenClose { inbound, outbound in
        try await outbound.write(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: \(target.host)\r\nConnection: close\r\n\r\n"))
        var response = ""
        do {
            for try await chunk in inbound { response += String(buffer: chunk) }
        } catch NIOSSLError.uncleanShutdown where response.contains("\r\n\r\n") {
            // The whole answer arrived; a missing close_notify after it changes nothing.
        }
        return response
    }
}

do {
    let response = try await withThrowingTaskGroup(of: String.self) { group in
        group.addTask { try await fetch(target) }
        group.addTask { try await Task.sleep(for: .seconds(15)); throw Timeout() }
        defer { group.cancelAll() }
        return try await group.next()!
    }
    let status = response.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
    MatrixCommandLine.finish(accepted: status.hasPrefix("HTTP/1.1 200"),
                             detail: status.isEmpty ? "no HTTP answer" : status)
} catch {
    MatrixCommandLine.finish(accepted: false, detail: String(describing: error))
}
