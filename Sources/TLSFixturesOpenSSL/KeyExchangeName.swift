import COpenSSL

/// How a connection's key exchange is named for people, by client and server alike: as `openssl s_client` names the
/// peer's temporary key (`X25519`, `ECDH prime256v1`, `DH 1024`); for a group that leaves no temporary key — OpenSSL
/// 3.5's default hybrid `X25519MLKEM768`, a pure ML-KEM group — by the group's own name.
package enum KeyExchangeName {
    /// A temporary key as `s_client` names it: `X25519`, `ECDH prime256v1`, `DH 1024`.
    package static func describe(_ key: OpaquePointer) -> String {
        let description = KeyDescription(pkey: key)
        switch description.type {
        case .ec: return "ECDH \(description.curve ?? "?")"
        case .dh: return "DH \(description.bits)"
        default: return description.type.rawValue
        }
    }

    /// The negotiated group as OpenSSL's group lists spell it (`x25519`, `secp256r1`, `ffdhe2048`, `X25519MLKEM768`),
    /// nil when there is none (static RSA, DHE with explicit parameters). `SSL_get0_group_name` where the linked
    /// OpenSSL has it (3.2+, chosen at compile time in the shim), else `SSL_group_to_name` of the negotiated group id.
    package static func negotiatedGroup(_ ssl: OpaquePointer) -> String? {
        if let name = shim_SSL_get0_group_name(ssl) { return String(cString: name) }
        let id = shim_SSL_get_negotiated_group(ssl)
        guard id > 0, let name = SSL_group_to_name(ssl, id) else { return nil }
        return String(cString: name)
    }

    /// The name to report: the temporary key when there is one, else the group in the same wording where it has one.
    package static func summary(temporaryKey: String?, group: String?) -> String? {
        temporaryKey ?? group.map(display(group:))
    }

    /// A group name in the temporary-key wording where one exists (`x25519` → `X25519`, `secp256r1` →
    /// `ECDH prime256v1`, `ffdhe2048` → `DH 2048`); any other group (hybrids, ML-KEM, brainpool) as OpenSSL names it.
    package static func display(group: String) -> String {
        switch group {
        case "x25519", "X25519": return "X25519"
        case "x448", "X448": return "X448"
        // s_client names a NIST curve by OpenSSL's short name for it.
        case "secp256r1", "P-256", "prime256v1": return "ECDH prime256v1"
        case "secp384r1", "P-384": return "ECDH secp384r1"
        case "secp521r1", "P-521": return "ECDH secp521r1"
        default:
            if group.hasPrefix("ffdhe"), let bits = Int(group.dropFirst(5)) { return "DH \(bits)" }
            return group
        }
    }
}
