import Foundation
import TLSFixturesWire
import TLSFixturesOpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything about a certificate except its keys: a value, so it can be stored, compared and hashed
/// (the store reuses a certificate exactly as long as its profile is unchanged).
public struct CertificateProfile: Hashable, Sendable, Codable {
    /// The subject name (CN, O, OU).
    public var subject: Subject
    /// `nil` means no subjectAltName extension at all (the `no-san` case), `[]` is not allowed by OpenSSL.
    public var subjectAltNames: [SubjectAltName]?
    /// notBefore and notAfter, relative to the moment of issue or absolute.
    public var validity: Validity
    /// The hash the issuer signs with (MD5 and SHA-1 allowed on purpose).
    public var digest: SignatureDigest
    /// `nil` leaves the extension out ("any purpose" to every verifier).
    public var extendedKeyUsage: [ExtendedKeyUsage]?
    /// `nil` derives the usual set from the role and key type.
    public var keyUsage: [KeyUsage]?
    /// `nil` leaves the extension out; leaves get `CA:FALSE` from the presets.
    public var basicConstraints: BasicConstraints?
    /// nil leaves the extension out; a CA's permitted and excluded subtrees otherwise.
    public var nameConstraints: NameConstraints?
    /// Where the certificate says its revocation status is published; `nil` names nothing (and leaves every existing
    /// profile's encoding, which the store fingerprints, unchanged).
    public var statusSources: CertificateStatusSources?
    /// The serial number as big-endian bytes (positive, at most 20 octets: RFC 5280 4.1.2.2); nil draws a random one.
    public var serial: [UInt8]?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(subject: Subject, subjectAltNames: [SubjectAltName]?, validity: Validity = .standardLeaf,
                digest: SignatureDigest = .sha256, extendedKeyUsage: [ExtendedKeyUsage]? = [.serverAuth],
                keyUsage: [KeyUsage]? = nil, basicConstraints: BasicConstraints? = .endEntity,
                nameConstraints: NameConstraints? = nil, statusSources: CertificateStatusSources? = nil,
                serial: [UInt8]? = nil) {
        self.subject = subject; self.subjectAltNames = subjectAltNames; self.validity = validity
        self.digest = digest; self.extendedKeyUsage = extendedKeyUsage; self.keyUsage = keyUsage
        self.basicConstraints = basicConstraints; self.nameConstraints = nameConstraints
        self.statusSources = statusSources; self.serial = serial
    }

    /// One limit for every certificate the kit makes, whatever the names come from (`cert issue --host`, a scenario's
    /// hosts, extraHosts and generatedHosts): 10,000 names make a certificate of about 250 KB, which OpenSSL-family
    /// clients still accept; 100,000 made one of 2.4 MB that no client accepts.
    public static let maximumSubjectAltNames = 10_000

    /// Throws `PKIError.tooManyNames` past `maximumSubjectAltNames`: called before any key is generated for them.
    public static func checkNameCount(_ count: Int) throws {
        if count > maximumSubjectAltNames { throw PKIError.tooManyNames(count) }
    }

    // MARK: Presets

    /// A TLS server certificate for `hosts` (DNS names or IP addresses), valid 397 days from one day ago —
    /// inside Apple's 398-day limit for publicly trusted certificates, so nothing but what a scenario changes is wrong.
    public static func server(hosts: [String], commonName: String? = nil) throws -> CertificateProfile {
        let names = try hosts.map(SubjectAltName.init(host:))
        let cn = commonName ?? names.first(where: { if case .dns = $0 { true } else { false } })?.value ?? hosts.first
        return CertificateProfile(subject: Subject(commonName: cn, organization: "swift-tls-fixtures"), subjectAltNames: names)
    }

    /// A TLS client certificate (EKU clientAuth, no SAN).
    public static func client(commonName: String) -> CertificateProfile {
        CertificateProfile(subject: Subject(commonName: commonName, organization: "swift-tls-fixtures"), subjectAltNames: nil,
                           extendedKeyUsage: [.clientAuth])
    }

    /// A certificate authority. Roots get no path length, intermediates `pathLength: 0`.
    public static func authority(commonName: String, organizationalUnit: String? = nil, pathLength: Int? = nil,
                                 digest: SignatureDigest = .sha256, days: Int = 3650,
                                 nameConstraints: NameConstraints? = nil) -> CertificateProfile {
        CertificateProfile(
            subject: Subject(commonName: commonName, organization: "swift-tls-fixtures", organizationalUnit: organizationalUnit),
            subjectAltNames: nil, validity: Validity(notBefore: .daysFromNow(-1), notAfter: .daysFromNow(days - 1)),
            digest: digest, extendedKeyUsage: nil, keyUsage: [.keyCertSign, .cRLSign, .digitalSignature],
            basicConstraints: BasicConstraints(isCA: true, pathLength: pathLength), nameConstraints: nameConstraints)
    }

    var isAuthority: Bool { basicConstraints?.isCA == true }

    // MARK: Issuing

    /// Signs a certificate for `subjectKey`; self-signed when `issuer` is nil.
    func sign(subjectKey: PrivateKey, issuer: (certificate: Certificate, key: PrivateKey)?, now: Date = Date()) throws -> Certificate {
        try sign(subject: .privateKey(subjectKey), issuer: issuer, now: now)
    }

    /// Signs a certificate for a public key only (a CSR's): someone else holds its private key, so it is never self-signed.
    package func sign(subjectPublicKey: PublicKey, issuer: (certificate: Certificate, key: PrivateKey), now: Date = Date()) throws -> Certificate {
        try sign(subject: .publicKey(subjectPublicKey), issuer: issuer, now: now)
    }

    private func sign(subject subjectKey: CertificateBuilder.SubjectKey, issuer: (certificate: Certificate, key: PrivateKey)?,
                      now: Date) throws -> Certificate {
        try Self.checkNameCount(subjectAltNames?.count ?? 0)
        guard let signer = issuer?.key ?? subjectKey.privateKey else {
            throw PKIError(code: .notAnAuthority, reason: "a certificate for a public key alone needs an issuer", fix: "sign it with a CA")
        }
        let signerKind = SigningKeyKind(signer)
        try checkSignable(by: signerKind)
        // EdDSA hashes internally; OpenSSL requires a NULL digest.
        let digestName: String? = signerKind == .eddsa ? nil : digest.openSSLName
        if let sans = subjectAltNames, sans.isEmpty {
            throw PKIError(code: .emptySubjectAltNames, reason: "a subjectAltName extension needs at least one name",
                           fix: "set subjectAltNames to nil to leave the extension out")
        }
        try validity.check()
        let (notBefore, notAfter) = validity.resolve(now: now)
        guard notBefore <= notAfter else {
            throw PKIError(code: .invalidValidity, reason: "notBefore (\(notBefore)) is after notAfter (\(notAfter))", fix: "end the validity after it starts")
        }
        if let serial { try Self.checkSerial(serial) }
        var builder = CertificateBuilder(notBefore: notBefore, notAfter: notAfter, serial: serial.map { Data($0) })
        builder.subject = self.subject.entries
        builder.extensions = try extensionLines(subjectKeyType: subjectKey.description.type)
        return try builder.sign(subjectKey: subjectKey, issuer: issuer, digest: digestName)
    }

    /// RFC 5280 4.1.2.2: a positive integer of at most 20 octets (DER, so 20 bytes with the top bit clear or 19 after it).
    package static func checkSerial(_ bytes: [UInt8]) throws {
        let significant = Array(bytes.drop { $0 == 0 })
        guard !significant.isEmpty else {
            throw PKIError(code: .invalidSerial, subject: "serial", reason: "a serial number must be positive, not 0",
                           fix: "give a number from 1 up, in decimal or 0x-prefixed hex")
        }
        let encodedLength = significant.count + (significant[0] & 0x80 != 0 ? 1 : 0)
        guard encodedLength <= 20 else {
            throw PKIError(code: .invalidSerial, subject: "serial",
                           reason: "a serial number is at most 20 octets (RFC 5280 4.1.2.2); this one needs \(encodedLength)",
                           fix: "give at most 159 bits (40 hex digits starting 0-7)")
        }
    }

    /// Parses `1234` (decimal) or `0x4d2` / `04:d2` (hex) into big-endian bytes.
    package static func parseSerial(_ text: String) throws -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var hex: String
        if trimmed.lowercased().hasPrefix("0x") {
            hex = String(trimmed.dropFirst(2))
        } else if trimmed.contains(":") {
            hex = trimmed.replacingOccurrences(of: ":", with: "")
        } else if !trimmed.isEmpty, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // Decimal of any length: multiply the bytes so far by ten and add each digit.
            var bytes: [UInt8] = [0]
            for digit in trimmed.compactMap(\.wholeNumberValue) {
                var carry = digit
                for index in bytes.indices.reversed() {
                    let value = Int(bytes[index]) * 10 + carry
                    bytes[index] = UInt8(value & 0xff)
                    carry = value >> 8
                }
                if carry > 0 { bytes.insert(UInt8(carry), at: 0) }
                if bytes.count > 21 { break }   // too long already: checkSerial says so
            }
            try checkSerial(bytes)
            return Array(bytes.drop { $0 == 0 })
        } else {
            throw PKIError(code: .invalidSerial, subject: text, reason: "\"\(text)\" is not a serial number",
                           fix: "give decimal digits (1234) or hex (0x04d2, or 04:d2 as openssl prints it)")
        }
        if hex.count % 2 == 1 { hex = "0" + hex }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else {
                throw PKIError(code: .invalidSerial, subject: text, reason: "\"\(text)\" is not a serial number",
                               fix: "give decimal digits (1234) or hex (0x04d2, or 04:d2 as openssl prints it)")
            }
            bytes.append(byte)
            index = next
        }
        try checkSerial(bytes)
        return bytes
    }

    /// The extensions in x509v3_config(5) syntax, in the order `openssl req -x509` would add them.
    func extensionLines(subjectKeyType: KeyAlgorithm) throws -> [(kind: X509ExtensionKind, value: String)] {
        var lines: [(X509ExtensionKind, String)] = []
        if let bc = basicConstraints {
            var value = bc.critical ? "critical," : ""
            value += bc.isCA ? "CA:TRUE" : "CA:FALSE"
            if bc.isCA, let length = bc.pathLength { value += ",pathlen:\(length)" }
            lines.append((.basicConstraints, value))
        }
        let usages = keyUsage ?? KeyUsage.defaults(isAuthority: isAuthority, keyType: subjectKeyType)
        if !usages.isEmpty {
            lines.append((.keyUsage, "critical," + usages.map(\.rawValue).joined(separator: ",")))
        }
        if let eku = extendedKeyUsage, !eku.isEmpty {
            lines.append((.extendedKeyUsage, eku.map(\.rawValue).joined(separator: ",")))
        }
        lines.append((.subjectKeyIdentifier, "hash"))
        lines.append((.authorityKeyIdentifier, "keyid:always"))
        if let sans = subjectAltNames {
            // RFC 5280 4.2.1.6: with an empty subject the SAN extension must be critical.
            let critical = subject.entries.isEmpty ? "critical," : ""
            lines.append((.subjectAltName, critical + sans.map(\.configText).joined(separator: ",")))
        }
        if let nc = nameConstraints, !nc.isEmpty {
            lines.append((.nameConstraints, try nc.configText()))
        }
        if let sources = statusSources { lines += try sources.extensionLines() }
        return lines
    }
}

/// The revocation pointers of a certificate: an OCSP responder (authorityInfoAccess, RFC 5280 §4.2.2.1), a CRL
/// distribution point (§4.2.1.13), and the TLS Feature extension asking for a stapled response ("must-staple", RFC 7633).
public struct CertificateStatusSources: Hashable, Sendable, Codable {
    /// The OCSP responder URL (authorityInfoAccess); nil names none.
    public var ocspURL: String?
    /// The CRL distribution point URL; nil names none.
    public var crlURL: String?
    /// true adds the TLS Feature extension with status_request (RFC 7633).
    public var mustStaple: Bool
    /// Where the issuer's certificate can be fetched (authorityInfoAccess caIssuers, RFC 5280 §4.2.2.1); nil names none.
    public var caIssuersURL: String?

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(ocspURL: String? = nil, crlURL: String? = nil, mustStaple: Bool = false, caIssuersURL: String? = nil) {
        self.ocspURL = ocspURL; self.crlURL = crlURL; self.mustStaple = mustStaple; self.caIssuersURL = caIssuersURL
    }

    func extensionLines() throws -> [(kind: X509ExtensionKind, value: String)] {
        var lines: [(X509ExtensionKind, String)] = []
        var accessItems: [String] = []
        if let url = ocspURL { accessItems.append("OCSP;URI:" + (try Self.checked(url))) }
        if let url = caIssuersURL { accessItems.append("caIssuers;URI:" + (try Self.checked(url))) }
        if !accessItems.isEmpty { lines.append((.authorityInfoAccess, accessItems.joined(separator: ","))) }
        if let url = crlURL { lines.append((.crlDistributionPoints, "URI:" + (try Self.checked(url)))) }
        // Non-critical, as RFC 7633 §4.2 asks: a client that does not know the extension still connects.
        if mustStaple { lines.append((.tlsFeature, "status_request")) }
        return lines
    }

    /// An http(s) URL that cannot break out of the extension's configuration text (no commas, spaces or controls).
    static func checked(_ url: String) throws -> String {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"),
              url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && $0 != "," }) else {
            throw PKIError(code: .invalidRevocationURL, subject: url, reason: "\"\(url)\" is not a usable revocation URL",
                           fix: "give an http:// URL without commas or spaces")
        }
        return url
    }
}

/// The subject distinguished name. `commonName == nil` leaves CN out; `""` writes an empty CN on purpose.
/// Written in the conventional order C, ST, L, O, OU, CN, then any other attributes as given.
public struct Subject: Hashable, Sendable, Codable {
    /// The CN; nil leaves it out, `""` writes an empty one.
    public var commonName: String?
    /// The O attribute; nil leaves it out.
    public var organization: String?
    /// The OU attribute; nil leaves it out.
    public var organizationalUnit: String?
    /// The C attribute: a two-letter ISO 3166 country code; nil leaves it out.
    public var country: String?
    /// The ST attribute (state or province); nil leaves it out.
    public var state: String?
    /// The L attribute (locality, a city); nil leaves it out.
    public var locality: String?
    /// Any other attributes, by OpenSSL short name (`serialNumber`, `DC`, `emailAddress`), in order; nil for none.
    public var otherAttributes: [Attribute]?

    /// One attribute of a name that has no property of its own.
    public struct Attribute: Hashable, Sendable, Codable {
        /// OpenSSL's short name for the attribute type (`DC`, `serialNumber`, `emailAddress`).
        public var field: String
        /// Its value (UTF-8).
        public var value: String
        /// Memberwise: each argument sets the property of the same name, unchecked.
        public init(field: String, value: String) { self.field = field; self.value = value }
    }

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(commonName: String?, organization: String? = nil, organizationalUnit: String? = nil, country: String? = nil,
                state: String? = nil, locality: String? = nil, otherAttributes: [Attribute]? = nil) {
        self.commonName = commonName; self.organization = organization; self.organizationalUnit = organizationalUnit
        self.country = country; self.state = state; self.locality = locality; self.otherAttributes = otherAttributes
    }

    var entries: [(field: String, value: String)] {
        var result: [(String, String)] = []
        if let country { result.append(("C", country)) }
        if let state { result.append(("ST", state)) }
        if let locality { result.append(("L", locality)) }
        if let organization { result.append(("O", organization)) }
        if let organizationalUnit { result.append(("OU", organizationalUnit)) }
        if let commonName { result.append(("CN", commonName)) }
        for attribute in otherAttributes ?? [] { result.append((attribute.field, attribute.value)) }
        return result
    }

    /// A subject read from short-name entries (a CSR's): the attributes with properties go to them, the rest in order.
    package init(entries: [(field: String, value: String)]) {
        self.init(commonName: nil)
        var others: [Attribute] = []
        for (field, value) in entries {
            switch field {
            case "CN" where commonName == nil: commonName = value
            case "O" where organization == nil: organization = value
            case "OU" where organizationalUnit == nil: organizationalUnit = value
            case "C" where country == nil: country = value
            case "ST" where state == nil: state = value
            case "L" where locality == nil: locality = value
            default: others.append(Attribute(field: field, value: value))
            }
        }
        otherAttributes = others.isEmpty ? nil : others
    }

    /// Refuses what no certificate should carry: a country that is not two letters (X.520 PrintableString SIZE(2)),
    /// and attributes longer than RFC 5280's upper bounds (A.1: 64 characters for CN, O and OU, 128 for L and ST),
    /// which OpenSSL refuses only as it signs ("string too long"), after a key was made for them.
    package func check() throws {
        let bounds: [(String, String?, Int)] = [("common name", commonName, 64), ("organization", organization, 64),
                                                ("organizational unit", organizationalUnit, 64),
                                                ("state", state, 128), ("locality", locality, 128)]
        for case let (field, value?, bound) in bounds where value.unicodeScalars.count > bound {
            throw PKIError(code: .invalidName, subject: String(value.prefix(40)),
                           reason: "the \(field) is \(value.unicodeScalars.count) characters long, and a certificate "
                              + "carries at most \(bound) (RFC 5280 A.1)",
                           fix: "shorten it to \(bound) characters or fewer")
        }
        if let country, !(country.count == 2 && country.allSatisfy({ $0.isASCII && $0.isLetter && $0.isUppercase })) {
            throw PKIError(code: .invalidName, subject: country, reason: "invalid country \"\(country)\"",
                           fix: "use a two-letter ISO 3166 code in capitals, such as US, DE or JP")
        }
    }
}

/// A subjectAltName entry.
public enum SubjectAltName: Hashable, Sendable, Codable, CustomStringConvertible {
    case dns(String)
    case ip(String)
    /// An rfc822Name: an email address (S/MIME, client certificates).
    case email(String)
    /// A uniformResourceIdentifier (SPIFFE IDs, `https://` URLs).
    case uri(String)

    /// Classifies `host` as an IP address or a DNS name and validates it. A name in Unicode (`bücher.test`) is written
    /// as IDNA A-labels (`xn--bcher-kva.test`), the only form a certificate's dNSName may carry (RFC 5280 7.2).
    public init(host: String) throws {
        let trimmed = host.trimmingCharacters(in: CharacterSet(charactersIn: "[] "))
        if IPAddress.parse(trimmed) != nil {
            self = .ip(trimmed)
            return
        }
        let ascii = try IDNA.toASCII(trimmed, given: host)
        try SubjectAltName.validateDNS(ascii)
        self = .dns(ascii.lowercased())
    }

    /// An email address for an rfc822Name: `local@domain`, the domain as a host is (IDNA for Unicode).
    public init(email: String) throws {
        guard let at = email.lastIndex(of: "@"), at != email.startIndex else {
            throw PKIError.invalidHost(email, "an email address is local@domain, as in alice@example.test")
        }
        let local = email[..<at]
        let domain = String(email[email.index(after: at)...])
        // The extension is written as comma-separated text: anything that could end the entry is refused.
        guard local.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && !",@\\\"".unicodeScalars.contains($0) }) else {
            throw PKIError.invalidHost(email, "the part before @ takes ASCII letters, digits and .!#$%&'*+/=?^_`{|}~- only")
        }
        let ascii = try IDNA.toASCII(domain, given: email)
        if let problem = SubjectAltName.dnsNameProblem(ascii) ?? (ascii.contains("*") ? "no wildcard in an email address" : nil) {
            throw PKIError.invalidHost(email, problem)
        }
        self = .email("\(local)@\(ascii.lowercased())")
    }

    /// A URI for a uniformResourceIdentifier: an absolute URI (`scheme:…`, RFC 3986), ASCII without spaces or commas.
    public init(uri: String) throws {
        let scalars = uri.unicodeScalars
        guard let colon = uri.firstIndex(of: ":"), colon != uri.startIndex,
              uri[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
              uri.first?.isLetter == true, uri.index(after: colon) < uri.endIndex else {
            throw PKIError.invalidHost(uri, "a URI is absolute, scheme first: spiffe://example.test/service or https://a.test/")
        }
        guard scalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && $0 != "," }) else {
            throw PKIError.invalidHost(uri, "percent-encode spaces, commas and non-ASCII characters (RFC 3986)")
        }
        self = .uri(uri)
    }

    package static func validateDNS(_ name: String) throws {
        if let problem = dnsNameProblem(name) { throw PKIError.invalidHost(name, problem) }
    }

    /// Why `name` is not a DNS name a certificate can carry, nil when it is one. Shared by hosts, name constraints and
    /// fixture domains (the runner), each of which words its own error around it.
    package static func dnsNameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.count <= 253 else { return "a DNS name is 1–253 characters" }
        // Letters, digits, '-', '.', '_' and a leftmost '*': anything else (',' ':' spaces) would corrupt the
        // extension text or be a mistake.
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._*")
        guard name.unicodeScalars.allSatisfy(allowed.contains) else {
            return "use letters, digits, '-', '.', or a leading '*.'"
        }
        if name.contains("*") && !(name.hasPrefix("*.") && name.dropFirst(2).allSatisfy({ $0 != "*" })) {
            return "a wildcard must be the whole leftmost label, as in *.example.test"
        }
        // A certificate names hosts without the root's trailing dot (RFC 5280 4.2.1.6 refers to RFC 1034's preferred
        // name syntax); verifiers compare the name as written, so a.test. never matches a.test.
        if name.hasSuffix(".") && name != "." { return "leave out the trailing dot (write \(name.dropLast()))" }
        // RFC 1035 §2.3.4: labels of 1–63 octets.
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if let bad = labels.first(where: { $0.isEmpty || $0.count > 63 }) {
            return bad.isEmpty ? "a DNS name has no empty labels (no \"..\", no leading dot)"
                               : "a DNS label is 1–63 characters; \"\(bad.prefix(20))…\" has \(bad.count)"
        }
        // RFC 952 / RFC 1123 §2.1: a label neither starts nor ends with a hyphen.
        if let bad = labels.first(where: { $0.hasPrefix("-") || $0.hasSuffix("-") }) {
            return "a DNS label neither starts nor ends with '-' (\"\(bad.prefix(20))\")"
        }
        // RFC 3696 §2: a top-level domain is not all digits, so 999.1.1.1 is a mistyped address, not a name.
        if let last = labels.last, last.allSatisfy(\.isNumber) {
            return labels.allSatisfy({ $0.allSatisfy(\.isNumber) })
                ? "not an IP address (each part of an IPv4 address is 0–255) and not a DNS name (its last label is all digits)"
                : "a DNS name's last label is not all digits (RFC 3696 §2)"
        }
        return nil
    }

    /// The name or address as text, without its kind.
    public var value: String {
        switch self { case .dns(let v), .ip(let v), .email(let v), .uri(let v): return v }
    }

    public var description: String {
        switch self {
        case .dns(let name): return "DNS:\(name)"
        case .ip(let address): return "IP:\(address)"
        case .email(let address): return "email:\(address)"
        case .uri(let uri): return "URI:\(uri)"
        }
    }

    var configText: String { description }

    /// A host as itself; an email address or URI with its kind first (`email:…`, `URI:…`), so each reads back as it was.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            if text.hasPrefix("email:") { try self.init(email: String(text.dropFirst(6))) }
            else if text.hasPrefix("URI:") { try self.init(uri: String(text.dropFirst(4))) }
            else { try self.init(host: text) }
        } catch let error as PKIError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .dns, .ip: try container.encode(value)
        case .email, .uri: try container.encode(description)
        }
    }
}

/// The kind of key that signs, as far as the digests it can sign with go.
package enum SigningKeyKind: Sendable, Equatable {
    case rsa, ec, eddsa

    package init(_ key: PrivateKey) {
        let type = key.description.type
        self = type.isEdDSA ? .eddsa : type == .ec ? .ec : .rsa
    }

    package init(_ spec: KeySpec) {
        switch spec {
        case .rsa: self = .rsa
        case .ec: self = .ec
        case .ed25519: self = .eddsa
        }
    }
}

extension CertificateProfile {
    /// Throws `digestNotSignable` when a signer of `kind` cannot sign with `digest`: EdDSA has no digest choice (and
    /// no "Ed25519 with SHA-1"), and there is no ECDSA-with-MD5. Checked before a key is made for the certificate.
    package func checkSignable(by kind: SigningKeyKind) throws {
        switch kind {
        case .eddsa:
            guard digest == .sha256 || digest == .sha512 else {
                throw PKIError(code: .digestNotSignable, subject: digest.rawValue,
                               reason: "an Ed25519 issuer cannot sign with \(digest.rawValue): EdDSA has no digest choice",
                               fix: "sign with an RSA or EC issuer, or use sha256")
            }
        case .ec:
            if digest == .md5 {
                throw PKIError(code: .digestNotSignable, subject: digest.rawValue,
                               reason: "an EC issuer cannot sign with md5: there is no ECDSA-with-MD5 algorithm",
                               fix: "sign with an RSA issuer (for example BuiltinAuthority.rsaIntermediate)")
            }
        case .rsa:
            break
        }
    }
}

/// When a certificate is valid. Days are counted from the moment of issue, so `expired` is expired the moment
/// it is made and stays so.
public struct Validity: Hashable, Sendable, Codable {
    /// Start of validity.
    public var notBefore: Moment
    /// End of validity.
    public var notAfter: Moment

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(notBefore: Moment, notAfter: Moment) { self.notBefore = notBefore; self.notAfter = notAfter }

    /// 397 days starting one day ago (the catalog's baseline).
    public static let standardLeaf = Validity(notBefore: .daysFromNow(-1), notAfter: .daysFromNow(396))

    /// `standardLeaf`'s length (397 days) from `notBefore`: what a start given alone means (`--not-before 2050-01-01`
    /// is a certificate not valid yet, not one that ends before it starts).
    public static func standardLeaf(startingAt notBefore: Moment) -> Validity {
        switch notBefore {
        case .daysFromNow(let days): return Validity(notBefore: notBefore, notAfter: .daysFromNow(days &+ 397))
        case .date(let date):
            return Validity(notBefore: notBefore, notAfter: .date(date.addingTimeInterval(397 * 86_400)))
        }
    }

    /// `days` long, starting one day ago so a slightly slow device clock still accepts it. (`&-`: `Int.min` days must
    /// reach `check()`, which refuses it, rather than trap here.)
    public static func days(_ days: Int) -> Validity { Validity(notBefore: .daysFromNow(-1), notAfter: .daysFromNow(days &- 1)) }

    /// Both moments as dates, relative ones counted from `now`: (notBefore, notAfter).
    public func resolve(now: Date) -> (Date, Date) { (notBefore.resolve(now: now), notAfter.resolve(now: now)) }

    /// Both moments within what a certificate can carry (`Moment.check`), and the end not before the start (as they
    /// resolve now).
    public func check() throws {
        try notBefore.check("notBefore")
        try notAfter.check("notAfter")
        let (start, end) = resolve(now: Date())
        guard start <= end else {
            let format = ISO8601DateFormatter()
            throw PKIError(code: .invalidValidity, subject: "notAfter",
                           reason: "notAfter (\(format.string(from: end))) is before notBefore "
                              + "(\(format.string(from: start))): no moment is inside this validity",
                           fix: "end the validity after it starts (a notBefore alone in the future needs a notAfter "
                              + "after it)")
        }
    }

    /// Whether a certificate made from this profile is meant to be expired, not yet valid, or valid right now.
    func intendedState(now: Date) -> ValidityState {
        let (start, end) = resolve(now: now)
        return ValidityState(notBefore: start, notAfter: end, now: now)
    }
}

enum ValidityState: Equatable {
    case notYetValid, valid, expired
    init(notBefore: Date, notAfter: Date, now: Date) {
        if now < notBefore { self = .notYetValid } else if now > notAfter { self = .expired } else { self = .valid }
    }
}

/// A point in time: days relative to the moment of issue, or an absolute date.
public enum Moment: Hashable, Sendable, Codable, CustomStringConvertible {
    case daysFromNow(Int)
    case date(Date)

    func resolve(now: Date) -> Date {
        switch self {
        case .daysFromNow(let days): return now.addingTimeInterval(TimeInterval(days) * 86_400)
        case .date(let date): return date
        }
    }

    /// The furthest a number of days may reach either way: 100 years, far more than any fixture needs. Without a
    /// limit, `--days 9223372036854775807` trapped converting the date to `time_t`, and a million years was signed.
    public static let maximumDays = 36_525
    /// The dates a certificate's validity can carry: UTCTime starts at 1950 (RFC 5280 4.1.2.5), GeneralizedTime ends
    /// at 9999-12-31T23:59:59Z.
    public static let earliestDate = Date(timeIntervalSince1970: -631_152_000)      // 1950-01-01T00:00:00Z
    /// The latest date GeneralizedTime can carry.
    public static let latestDate = Date(timeIntervalSince1970: 253_402_300_799)     // 9999-12-31T23:59:59Z

    /// Refuses a moment no certificate can carry, naming `field` (notBefore, notAfter).
    public func check(_ field: String) throws {
        switch self {
        case .daysFromNow(let days):
            guard days.magnitude <= Moment.maximumDays.magnitude else {
                throw PKIError(code: .invalidValidity, subject: field,
                               reason: "\(field) of \(days) days from now is more than 100 years away (at most \(Moment.maximumDays) days either way)")
            }
        case .date(let date):
            guard (Moment.earliestDate...Moment.latestDate).contains(date) else {
                throw PKIError(code: .invalidValidity, subject: field,
                               reason: "\(field) \(description) is outside the dates a certificate can carry (1950-01-01 to 9999-12-31)")
            }
        }
    }

    /// Accepts an integer number of days (`-1`, `396`) or an ISO 8601 date (`2030-01-01` or `2030-01-01T00:00:00Z`).
    public init(parsing text: String) throws {
        if let days = Int(text.trimmingCharacters(in: .whitespaces)) { self = .daysFromNow(days); return }
        if let date = Moment.parseDate(text) { self = .date(date); return }
        throw PKIError(code: .invalidValidity, subject: text,
                       reason: "\"\(text)\" is neither a number of days nor a real ISO 8601 date (2030-01-01 or 2030-01-01T00:00:00Z)")
    }

    /// What a command line's `--not-before`/`--not-after` take: what `init(parsing:)` takes, and a duration from
    /// `now` as step writes it (`2h`, `30m`, `-1h30m`, `90s`, `7d`). Whole days stay relative (`daysFromNow`: an
    /// unchanged re-run reuses the certificate); hours, minutes and seconds become the date they reach from `now`.
    public init(parsingWithDurations text: String, now: Date = Date()) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let duration = Moment.parseDuration(trimmed) else {
            try self.init(parsing: trimmed)
            return
        }
        if duration % 86_400 == 0 {
            self = .daysFromNow(Int(duration / 86_400))
        } else {
            self = .date(now.addingTimeInterval(TimeInterval(duration)))
        }
    }

    /// `[+-](NUMBER UNIT)+` with units d, h, m, s, as seconds; nil when `text` is not one. Bounded so it cannot
    /// overflow (past 100 years `check` refuses it anyway).
    static func parseDuration(_ text: String) -> Int64? {
        var rest = Substring(text)
        var sign: Int64 = 1
        if let first = rest.first, first == "-" || first == "+" {
            sign = first == "-" ? -1 : 1
            rest = rest.dropFirst()
        }
        var total: Int64 = 0
        var parts = 0
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 12, let value = Int64(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first else { return nil }
            let scale: Int64
            switch unit {
            case "d": scale = 86_400
            case "h": scale = 3_600
            case "m": scale = 60
            case "s": scale = 1
            default: return nil
            }
            rest = rest.dropFirst()
            total += value * scale
            parts += 1
            guard total <= Int64(Moment.maximumDays + 1) * 86_400 * 2 else { return nil }
        }
        return parts == 0 ? nil : sign * total
    }

    /// An ISO 8601 date that exists: Foundation's parser rolls 2021-02-30 over to 2021-03-02, so the calendar date
    /// (and the time, when given) is checked against the Gregorian calendar first.
    static func parseDate(_ text: String) -> Date? {
        guard isRealDate(text) else { return nil }
        let full = ISO8601DateFormatter()
        if let date = full.date(from: text) { return date }
        let dayOnly = ISO8601DateFormatter()
        dayOnly.formatOptions = [.withFullDate]
        return dayOnly.date(from: text)
    }

    /// `YYYY-MM-DD` with a month of 1–12 and a day that month has, then nothing or `T` with hours 0–23, minutes and
    /// seconds 0–59.
    private static func isRealDate(_ text: String) -> Bool {
        let parts = text.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 4, date[1].count == 2, date[2].count == 2,
              let year = Int(date[0]), let month = Int(date[1]), let day = Int(date[2]) else { return false }
        var components = DateComponents(year: year, month: month, day: day)
        if parts.count == 2 {
            let time = parts[1].prefix { $0.isNumber || $0 == ":" }.split(separator: ":")
            guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]),
                  (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else { return false }
            components.hour = hour
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        components.calendar = calendar
        return (1...12).contains(month) && components.isValidDate(in: calendar)
    }

    public var description: String {
        switch self {
        case .daysFromNow(let days): return "\(days)"
        case .date(let date): return ISO8601DateFormatter().string(from: date)
        }
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let days = try? container.decode(Int.self) { self = .daysFromNow(days); return }
        do { try self.init(parsing: try container.decode(String.self)) } catch let error as PKIError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .daysFromNow(let days): try container.encode(days)
        case .date: try container.encode(description)
        }
    }
}

/// The extendedKeyUsage purposes (RFC 5280 4.2.1.12) a certificate can name; servers need `serverAuth`.
public enum ExtendedKeyUsage: String, CaseIterable, Hashable, Sendable, Codable {
    case serverAuth, clientAuth, codeSigning, emailProtection, timeStamping, OCSPSigning
}

/// The keyUsage bits (RFC 5280 4.2.1.3), named as RFC 5280 names them.
public enum KeyUsage: String, CaseIterable, Hashable, Sendable, Codable {
    case digitalSignature, nonRepudiation, keyEncipherment, dataEncipherment, keyAgreement, keyCertSign, cRLSign

    /// What a well-formed certificate of this role carries. RSA leaves need keyEncipherment for RSA key exchange
    /// (the `static-rsa` scenario); EC leaves must not claim it.
    static func defaults(isAuthority: Bool, keyType: KeyAlgorithm) -> [KeyUsage] {
        if isAuthority { return [.digitalSignature, .keyCertSign, .cRLSign] }
        return keyType == .rsa ? [.digitalSignature, .keyEncipherment] : [.digitalSignature]
    }
}

/// The basicConstraints extension (RFC 5280 4.2.1.9): CA or end entity, and how deep a chain below may go.
public struct BasicConstraints: Hashable, Sendable, Codable {
    /// CA:TRUE: the certificate may sign others.
    public var isCA: Bool
    /// How many intermediate CAs may follow below it; nil means no limit (CAs only).
    public var pathLength: Int?
    /// Whether the extension is marked critical (RFC 5280 requires it for CAs).
    public var critical: Bool

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(isCA: Bool, pathLength: Int? = nil, critical: Bool = true) {
        self.isCA = isCA; self.pathLength = pathLength; self.critical = critical
    }

    /// CA:FALSE, critical: what every leaf carries.
    public static let endEntity = BasicConstraints(isCA: false)
}

/// RFC 5280 name constraints. Entries are DNS names (`localhost`, `test`) or CIDR blocks (`127.0.0.0/8`, `::1/128`).
///
/// A DNS entry is a bare name: RFC 5280 4.2.1.10 says a DNS constraint covers the name itself and every name made by
/// adding labels on its left, so `test` permits `test` and `a.b.test`. The leading-dot form (`.test`) is defined only
/// for URI constraints; OpenSSL and BoringSSL accept it for DNS as a legacy extension, but strict verifiers
/// (pyca/cryptography, sslyze) refuse the whole CA, so it is rejected here.
public struct NameConstraints: Hashable, Sendable, Codable {
    /// Subtrees a certificate below may name; empty permits everything not excluded.
    public var permitted: [String]
    /// Subtrees a certificate below must not name.
    public var excluded: [String]

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(permitted: [String], excluded: [String] = []) { self.permitted = permitted; self.excluded = excluded }

    /// The reserved names the built-in CA may sign for: `localhost` (RFC 6761) and the test TLDs of RFC 2606.
    public static let reservedDNSSubtrees = ["localhost", "test", "example", "invalid"]

    /// Loopback. Leaves do not name these addresses by default (see `localDevelopment`), but the CA keeps the
    /// constraint so that, whatever it signs, no client that checks iPAddress constraints trusts it for a real address.
    public static let loopbackAddressSubtrees = ["127.0.0.0/8", "::1/128"]

    /// What the built-in CA may sign by default: the reserved test names and loopback, so a developer who trusts it
    /// on a device cannot be impersonated for any real site or address.
    ///
    /// BoringSSL (swift-nio-ssl, AsyncHTTPClient, Chrome's TLS) cannot evaluate iPAddress constraints: it fails any
    /// chain whose leaf carries an IP subjectAltName under a CA that has them ("unsupported name constraint type"). A
    /// name that is not an IP address never meets those constraints, which is why leaves name DNS names only unless a
    /// scenario is about IP addresses (`ip-san`).
    public static let localDevelopment = localDevelopment()

    /// `localDevelopment` plus more permitted DNS subtrees (a team's own test domain, say), each a bare DNS name.
    public static func localDevelopment(addingDNSSubtrees extra: [String] = []) -> NameConstraints {
        var dns = reservedDNSSubtrees
        for name in extra.map({ $0.lowercased() }) where !dns.contains(name) { dns.append(name) }
        return NameConstraints(permitted: dns + loopbackAddressSubtrees)
    }

    var isEmpty: Bool { permitted.isEmpty && excluded.isEmpty }

    /// Whether a certificate naming `name` satisfies these constraints (RFC 5280 4.2.1.10): not inside any excluded
    /// subtree, and inside a permitted one whenever any subtree of its type (DNS or IP) is permitted. A DNS subtree
    /// covers the name itself and every name under it (the leading-dot form of older CAs covers only names under it).
    public func permits(_ name: SubjectAltName) -> Bool {
        func covers(_ entry: String) -> Bool? {   // nil: the entry is of the other type
            switch name {
            case .dns(let host):
                guard !entry.contains("/"), !entry.hasPrefix("type ") else { return nil }
                let host = host.lowercased(), base = entry.lowercased()
                if base.hasPrefix(".") { return host.hasSuffix(base) }
                return host == base || host.hasSuffix("." + base)
            case .ip(let address):
                guard let slash = entry.firstIndex(of: "/"), let bytes = IPAddress.parse(address),
                      let network = IPAddress.parse(String(entry[..<slash])), let prefix = Int(entry[entry.index(after: slash)...]) else { return nil }
                guard bytes.count == network.count else { return false }
                for bit in 0..<min(prefix, bytes.count * 8) where (bytes[bit / 8] ^ network[bit / 8]) & UInt8(0x80 >> (bit % 8)) != 0 {
                    return false
                }
                return true
            case .email, .uri:
                return nil   // Only DNS and IP constraints are written here; other kinds are not constrained by them.
            }
        }
        if excluded.contains(where: { covers($0) == true }) { return false }
        let sameType = permitted.filter { covers($0) != nil }
        return sameType.isEmpty || sameType.contains { covers($0) == true }
    }

    /// DNS entries in the leading-dot form (`.test`): what CAs made before bare names were used carry, and what
    /// strict RFC 5280 verifiers refuse.
    public var leadingDotDNSEntries: [String] {
        (permitted + excluded).filter { $0.hasPrefix(".") && !$0.contains("/") }
    }

    package func configText() throws -> String {
        let items = try permitted.map { "permitted;" + (try NameConstraints.generalName($0)) }
            + excluded.map { "excluded;" + (try NameConstraints.generalName($0)) }
        return "critical," + items.joined(separator: ",")
    }

    /// `test` → `DNS:test`; `127.0.0.0/8` → `IP:127.0.0.0/255.0.0.0` (OpenSSL wants an address mask, not a prefix).
    static func generalName(_ entry: String) throws -> String {
        if let slash = entry.firstIndex(of: "/") {
            let address = String(entry[..<slash])
            guard let prefix = Int(entry[entry.index(after: slash)...]), let bytes = IPAddress.parse(address),
                  prefix >= 0, prefix <= bytes.count * 8 else {
                throw PKIError.invalidNameConstraint(entry, "a CIDR block is ADDRESS/PREFIX, as in 127.0.0.0/8 or ::1/128")
            }
            var mask = [UInt8](repeating: 0, count: bytes.count)
            for bit in 0..<prefix { mask[bit / 8] |= UInt8(0x80 >> (bit % 8)) }
            return "IP:\(address)/\(Certificate.ipText(mask))"
        }
        if entry.hasPrefix(".") {
            throw PKIError.invalidNameConstraint(entry, "a DNS constraint has no leading dot (RFC 5280 4.2.1.10): \"\(entry.dropFirst())\" already permits every name under it")
        }
        if entry.contains("*") {
            throw PKIError.invalidNameConstraint(entry, "a DNS constraint is a plain name, no wildcard: \"example.test\" permits every name under it")
        }
        if let problem = SubjectAltName.dnsNameProblem(entry) { throw PKIError.invalidNameConstraint(entry, problem) }
        return "DNS:\(entry.lowercased())"
    }
}

/// IPv4/IPv6 literal parsing (inet_pton), used to tell hosts from DNS names.
package enum IPAddress {
    package static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
