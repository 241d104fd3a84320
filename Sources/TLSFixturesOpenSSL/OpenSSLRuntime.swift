import COpenSSL

/// OpenSSL's process-wide set-up. The `tls-fixtures` CLI does it first thing; the library does it on its first OpenSSL
/// call (`initializedWithoutExitCleanup`, reached through `OpenSSLError.clearQueue`, which the calls begin with), so a
/// test process that links the library and exits while a fixture's key is still being made does not crash at exit
/// either (a CI rehearsal's test process did: SIGSEGV in a freed OpenSSL lock on a thread-pool thread, after every test
/// had passed). When something else in the process initialised OpenSSL first (libcurl, under URLSession on Linux),
/// OpenSSL keeps its exit handler and this changes nothing.
package enum OpenSSLRuntime {
    /// `initializeWithoutExitCleanup()`, once per process, on first use.
    package static let initializedWithoutExitCleanup: Bool = initializeWithoutExitCleanup()

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
