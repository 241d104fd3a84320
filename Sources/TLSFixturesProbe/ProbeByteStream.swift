/// A connection the probe's HTTP exchange talks over: the plain socket (`http://`) or the TLS session on it. Both wait
/// only until the probe's deadline.
protocol ProbeByteStream: AnyObject {
    /// Sends every byte.
    func write(_ bytes: [UInt8]) throws(ProbeStreamFailure)
    /// Some bytes (never empty), or nil when the server ended the stream (TCP close, or TLS close_notify).
    func read() throws(ProbeStreamFailure) -> [UInt8]?
}

/// Why a `ProbeByteStream` could not go on.
enum ProbeStreamFailure: Error, Equatable {
    /// The probe's deadline passed.
    case timedOut
    /// OpenSSL refused to go on: an alert from the server or a TLS protocol error, in OpenSSL's words.
    case tls([String])
    /// The socket failed (`Connection reset by peer`), in `strerror`'s words taken when it failed.
    case socket(String)
}
