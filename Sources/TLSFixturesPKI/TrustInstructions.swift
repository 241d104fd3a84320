import Foundation
import TLSFixturesOpenSSL

/// How to make clients trust the built-in CA — one text for `ca init`, `ca show` and docs/cli.md's "The built-in
/// CA" (which quotes it).
package enum TrustInstructions {
    /// `dirArgument`: ` --dir PATH` when the store is not the default one, so the command printed exports this CA.
    /// The system-store line always names the store: under sudo the default store would be root's, another CA.
    package static func text(rootPEM path: String, dirArgument: String = "") -> String {
        let store = URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent().path
        return """
        Trust it (once per simulator or device):
          iOS simulator:  tls-fixtures simulator trust\(dirArgument)   (or: xcrun simctl keychain booted add-root-cert '\(path)')
          iOS device:     send the .cer (`tls-fixtures ca export --format der --out ca.cer\(dirArgument)`) to the device, install
                          the profile in Settings, then enable it under General > About > Certificate Trust Settings
          macOS:          tls-fixtures ca install --keychain\(dirArgument)
                          (or: security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db '\(path)')
        On Linux, and for command-line clients anywhere:
          one client:     curl --cacert '\(path)' …   openssl s_client -CAfile '\(path)' …
          one shell:      export SSL_CERT_FILE='\(path)' (openssl, Python: they then trust only it),
                          CURL_CA_BUNDLE='\(path)' (curl), NODE_EXTRA_CA_CERTS='\(path)' (Node)
          system store:   sudo tls-fixtures ca install --system --dir '\(store)'   (the PEM goes to
                          /usr/local/share/ca-certificates/ and update-ca-certificates runs; Fedora: update-ca-trust)
                          OpenSSL, curl, Python, Node and Swift's FoundationNetworking (libcurl's bundle) read it
          Chromium, Firefox (NSS): tls-fixtures ca install --nss\(dirArgument)   (by hand: a fresh profile has no database, and certutil
                          says SEC_ERROR_BAD_DATABASE: mkdir -p ~/.pki/nssdb && certutil -d sql:$HOME/.pki/nssdb -N --empty-password,
                          then certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n swift-tls-fixtures -i '\(path)')
          Java:           keytool -importcert -noprompt -cacerts -storepass changeit -alias swift-tls-fixtures -file '\(path)'
                          (Debian's update-ca-certificates hook also updates Java's cacerts)
        Remove it again: xcrun simctl keychain booted reset (simulator), Settings > General > VPN & Device Management
        (device), tls-fixtures ca uninstall --keychain|--system|--nss (this machine),
        keytool -delete -cacerts -storepass changeit -alias swift-tls-fixtures (Java).
        """
    }
}
