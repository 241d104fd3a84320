import Foundation

/// The pins and certificate files an app under test needs, for the catalog or for one scenario.
public struct PinMaterial: Codable, Sendable, Equatable {
    public var domain: String
    /// This server's leaf SPKI (the published `pinned` key when no scenario is named).
    public var leaf: String
    public var ca: String
    public var backup: String
    /// DER files written into the store's `exports/`, for AFNetworking/Alamofire bundles.
    public var caCertificateFile: String
    public var leafCertificateFile: String

    public var pinSet: PinSet { PinSet(domain: domain, leafPins: [leaf], caPins: [ca], backupPin: backup) }
}

extension CertificateStore {
    var exportsDirectory: URL { directory.appendingPathComponent("exports") }

    /// Pins for `prepared` (or, with nil, for the published `pinned` scenario) and the `.cer` files written for them.
    public func pinMaterial(for prepared: PreparedScenario) throws -> PinMaterial {
        try FileSystem.ensureStoreRoot(directory, mode: 0o700)
        try FileSystem.ensureStoreSubdirectory(exportsDirectory, mode: 0o700)
        let caFile = exportsDirectory.appendingPathComponent("ca.cer")
        try FileSystem.writeAtomically(prepared.caCertificate.der, to: caFile, mode: 0o644)
        let leafFile = exportsDirectory.appendingPathComponent("\(prepared.scenario.name).cer")
        guard let leaf = prepared.credential?.certificate else {
            throw PKIError.unsupportedCombination("scenario \(prepared.scenario.name) has no certificate to pin (plain HTTP)")
        }
        try FileSystem.writeAtomically(leaf.der, to: leafFile, mode: 0o644)
        return PinMaterial(domain: prepared.scenario.qualifiedHost, leaf: leaf.spkiSHA256, ca: prepared.pins.ca,
                           backup: prepared.pins.backup, caCertificateFile: caFile.path, leafCertificateFile: leafFile.path)
    }
}
