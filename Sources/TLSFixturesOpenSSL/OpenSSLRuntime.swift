import COpenSSL

/// OpenSSL's process-wide set-up, for a program that owns its process (the `tls-fixtures` CLI).
package enum OpenSSLRuntime {
    /// Initialises OpenSSL without the clean-up it otherwise registers with `atexit`.
    ///
    /// Why: `serve` abandons keys still being generated in the background when it stops (an RSA-8192 key can take a
    /// minute). When the process then exits, OpenSSL's exit handler frees its locks while that thread is still drawing
    /// random numbers, and the thread crashes on a freed lock (ThreadSanitizer caught it: a SEGV in
    /// `RAND_get_rand_method` after SIGTERM). The operating system reclaims everything at exit anyway.
    ///
    /// It must run before any other OpenSSL call: OpenSSL's first initialisation decides whether the handler is
    /// registered. Returns whether OpenSSL accepted the call.
    @discardableResult
    package static func initializeWithoutExitCleanup() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
