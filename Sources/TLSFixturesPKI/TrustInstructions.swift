import TLSFixturesOpenSSL

/// How to make Apple platforms trust the built-in CA — one text for the CLI, the dashboard and the README.
package enum TrustInstructions {
    /// `dirArgument`: ` --dir PATH` when the store is not the default one, so the command printed exports this CA.
    package static func text(rootPEM path: String, dirArgument: String = "") -> String {
        """
        Trust it (once per simulator or device):
          iOS simulator:  xcrun simctl keychain booted add-root-cert '\(path)'
          iOS device:     send the .cer (`tls-fixtures ca export --format der --out ca.cer\(dirArgument)`) to the
                          device, install the profile in Settings, then enable it under General > About >
                          Certificate Trust Settings
          macOS:          security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db '\(path)'
        Remove it again: xcrun simctl keychain booted reset (simulator), Settings > General > VPN & Device Management
        (device), or Keychain Access (macOS).
        """
    }
}
