import COpenSSL

/// The OpenSSL this process actually linked (not the headers it was compiled against).
package enum LinkedOpenSSL {
    package static var versionText: String { String(cString: OpenSSL_version(numericCast(OPENSSL_VERSION))) }
}
