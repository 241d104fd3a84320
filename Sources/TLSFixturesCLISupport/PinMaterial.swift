import Foundation
import TLSFixturesATS
import TLSFixturesNSC
import TLSFixturesPKI
import TLSFixturesFleet
import TLSFixturesScenario
import TLSFixturesOpenSSL

/// The pins and certificate files an app under test needs, for the catalog or for one scenario.
package struct PinMaterial: Codable, Sendable, Equatable {
    package var domain: String
    /// This server's leaf SPKI (the published `pinned` key when no scenario is named).
    public var leaf: String
    package var ca: String
    package var backup: String
    /// DER files written into the store's `exports/`, for AFNetworking/Alamofire bundles.
    public var caCertificateFile: String
    package var leafCertificateFile: String
    /// For a revocation scenario: what the leaf names, what OCSP, the CRL and a staple say, and what Apple does.
    public var revocation: RevocationExpectation?
    package var revocationSources: RevocationSources?
    /// For a scenario that demands a client certificate (`client-cert-required`): the identity to present.
    public var clientIdentity: ClientIdentityFiles?

    package var pinSet: PinSet { PinSet(domain: domain, leafPins: [leaf], caPins: [ca], backupPin: backup) }

    /// The same keys for Android: the leaf and the backup pinned, the CA's offered as a commented alternative (an
    /// Android pin-set or CertificatePinner passes on any one pin of the chain; see `NSCPinFormats`).
    package var androidPins: NSCPinFormats.Pins { NSCPinFormats.Pins(host: domain, leaf: leaf, backup: backup, ca: ca) }
}

/// `pins --android --json`: the same keys as the iOS output, in Android's two formats.
package struct AndroidPinReport: Codable, Sendable, Equatable {
    package var domain: String
    package var leaf: String
    package var backup: String
    package var ca: String
    /// The pin-set's `expiration` (yyyy-MM-dd).
    package var expiration: String
    /// The `<domain-config>` with the `<pin-set>`, for res/xml/network_security_config.xml.
    package var networkSecurityConfig: String
    /// OkHttp's `CertificatePinner`, in Kotlin.
    package var okHttpCertificatePinner: String
    /// The kit's CA as DER, to copy to res/raw for a `<certificates src="@raw/…"/>` trust anchor.
    package var caCertificateFile: String

    package init(_ material: PinMaterial, expiration: NSCDay) {
        let pins = material.androidPins
        domain = material.domain
        leaf = material.leaf
        backup = material.backup
        ca = material.ca
        self.expiration = expiration.description
        networkSecurityConfig = NSCPinFormats.pinSetXML(pins, expiration: expiration,
                                                        trustAnchor: "@raw/tls_fixtures_ca")
        okHttpCertificatePinner = NSCPinFormats.okHttpCertificatePinner(pins)
        caCertificateFile = material.caCertificateFile
    }
}

/// Where a client identity lives: the certificate chain and its key (both PEM, in the store) and a `.p12` of both
/// (written into the store's `exports/`, password `PKCS12Export.defaultPassword`).
package struct ClientIdentityFiles: Codable, Sendable, Equatable {
    package var certificateFile: String
    /// The private key (PEM, PKCS#8, mode 0600).
    public var keyFile: String
    package var pkcs12File: String
    package var pkcs12Password: String
}

extension CertificateStore {
    var exportsDirectory: URL { directory.appendingPathComponent("exports") }

    /// Pins for `prepared` (or, with nil, for the published `pinned` scenario) and the `.cer` files written for them.
    package func pinMaterial(for prepared: PreparedScenario) throws -> PinMaterial {
        try FileSystem.ensureStoreRoot(directory, mode: 0o700)
        try FileSystem.ensureStoreSubdirectory(exportsDirectory, mode: 0o700)
        let caFile = exportsDirectory.appendingPathComponent("ca.cer")
        try FileSystem.writeAtomically(prepared.caCertificate.der, to: caFile, mode: 0o644)
        let leafFile = exportsDirectory.appendingPathComponent("\(prepared.scenario.name).cer")
        guard let leaf = prepared.credential?.certificate else {
            throw PKIError(code: .nothingToPin, subject: prepared.scenario.name, reason: "scenario \(prepared.scenario.name) has no certificate to pin (plain HTTP)",
                           fix: "pin a scenario served over TLS")
        }
        try FileSystem.writeAtomically(leaf.der, to: leafFile, mode: 0o644)
        var clientIdentity: ClientIdentityFiles? = nil
        if let client = prepared.clientCredential {
            let p12 = exportsDirectory.appendingPathComponent("client.p12")
            try FileSystem.writeAtomically(try client.pkcs12(), to: p12, mode: 0o600)
            clientIdentity = ClientIdentityFiles(certificateFile: clientCredentialFiles.certificate.path,
                                                 keyFile: clientCredentialFiles.key.path, pkcs12File: p12.path,
                                                 pkcs12Password: PKCS12Export.defaultPassword)
        }
        return PinMaterial(domain: prepared.scenario.qualifiedHost, leaf: leaf.spkiSHA256, ca: prepared.pins.ca,
                           backup: prepared.pins.backup, caCertificateFile: caFile.path, leafCertificateFile: leafFile.path,
                           revocation: prepared.scenario.expect.revocation, revocationSources: RevocationSources(leaf: leaf),
                           clientIdentity: clientIdentity)
    }
}
