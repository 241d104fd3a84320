import COpenSSL

/// An OpenSSL library context with the default and the legacy provider loaded, for the few server contexts that need
/// an algorithm OpenSSL 3 moved to the legacy provider (RC4). Per context, never the process-wide default: every other
/// context keeps exactly the providers the system configured. nil when the legacy provider cannot be loaded.
///
/// On Debian's and Homebrew's OpenSSL the provider loads but the RC4 suites are compiled out (no
/// enable-weak-ssl-ciphers), so `rc4` stays unsupported there; `make legacy-openssl` builds one where it is not.
enum LegacyProviders {
    nonisolated(unsafe) static let libraryContext: OpaquePointer? = {
        guard let library = OSSL_LIB_CTX_new() else { return nil }
        guard OSSL_PROVIDER_load(library, "default") != nil, OSSL_PROVIDER_load(library, "legacy") != nil else {
            OSSL_LIB_CTX_free(library)
            OpenSSLError.clearQueue()
            return nil
        }
        return library
    }()
}
