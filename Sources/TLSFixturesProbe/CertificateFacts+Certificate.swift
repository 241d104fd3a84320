import TLSFixturesATS
import TLSFixturesOpenSSL

// The facts the ATS model judges are its own values; reading them out of an OpenSSL certificate is the probe's job,
// so the OpenSSL owner does not know the ATS model exists.
extension Certificate {
    /// What a client learns about this certificate.
    public var facts: CertificateFacts {
        let key = publicKey
        return CertificateFacts(
            subject: subject, issuer: issuer, commonName: commonName, dnsNames: dnsNames, ipAddresses: ipAddresses,
            keyType: key.type, keyBits: key.bits, curve: key.curve,
            signatureAlgorithm: signatureAlgorithm, signatureDigest: signatureDigest,
            notBefore: notBefore, notAfter: notAfter, isCA: isCA, isSelfIssued: isSelfIssued,
            extendedKeyUsage: extendedKeyUsage, spkiSHA256: spkiSHA256,
            sha256Fingerprint: sha256Fingerprint.hexString, der: der, hasEmbeddedSCTs: hasEmbeddedSCTs,
            ocspURLs: ocspURLs, crlURLs: crlURLs, mustStaple: mustStaple)
    }
}
