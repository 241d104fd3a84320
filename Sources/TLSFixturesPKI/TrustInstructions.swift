import TLSFixturesOpenSSL

/// How to make clients trust the built-in CA — one text for `ca init`, `ca show` and the README's "Trust the built-in
/// CA" (which quotes it).
package enum TrustInstructions {
    package static func text(rootPEM path: String) -> String {
        """
        Trust it (once per simulator or device):
          iOS simulator:  tls-fixtures simulator trust   (or: xcrun simctl keychain booted add-root-cert '\(path)')
          iOS device:     send the .cer (`tls-fixtures ca export --format der --out ca.cer`) to the device, install the
                          profile in Settings, then enable it under General > About > Certificate Trust Settings
          macOS:          tls-fixtures ca install --keychain
                          (or: security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db '\(path)')
        On Linux, and for command-line clients anywhere:
          one client:     curl --cacert '\(path)' …   openssl s_client -CAfile '\(path)' …
          one shell:      export SSL_CERT_FILE='\(path)' (openssl, Python: they then trust only it),
                          CURL_CA_BUNDLE='\(path)' (curl), NODE_EXTRA_CA_CERTS='\(path)' (Node)
          system store:   sudo tls-fixtures ca install --system --dir STORE   (the PEM goes to
                          /usr/local/share/ca-certificates/ and update-ca-certificates runs; Fedora: update-ca-trust)
                          OpenSSL, curl, Python, Node and Swift's FoundationNetworking (libcurl's bundle) read it
          Chromium, Firefox (NSS): tls-fixtures ca install --nss   (by hand: a fresh profile has no database, and certutil
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
