import Foundation
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario
import TLSFixturesWire

/// Domains of the user's own under which the runner also names its fixtures (`serve --domain fixtures.example.com`:
/// every baseline leaf also names `NAME.fixtures.example.com`, and the proxy resolves those names). A name on the
/// public suffix list is what TrustKit needs — it refuses `.test` — and no DNS record is involved: the proxy resolves.
public enum FixtureDomains {
    /// `domains` lower-cased and without duplicates, each checked: a DNS name of at least two labels, no wildcard, no
    /// IP address, not `fixtures.test` (always served).
    public static func normalize(_ domains: [String]) throws -> [String] {
        var result: [String] = []
        for raw in domains {
            let domain = raw.lowercased()
            if domain.hasSuffix(".") || domain.hasPrefix(".") {
                throw FixtureDomainError.invalid(raw, "write it without a leading or trailing dot, as in fixtures.example.com")
            }
            if domain.contains("*") { throw FixtureDomainError.invalid(raw, "a domain is a plain name, no wildcard: every NAME.DOMAIN is served") }
            if IPAddress.parse(domain) != nil { throw FixtureDomainError.invalid(raw, "an IP address is not a domain") }
            if let problem = SubjectAltName.dnsNameProblem(domain) { throw FixtureDomainError.invalid(raw, problem) }
            if !domain.contains(".") {
                throw FixtureDomainError.invalid(raw, "use a name of at least two labels (fixtures.example.com): fixtures are named NAME.DOMAIN")
            }
            if domain == Scenario.fixturesDomain { continue }
            if !result.contains(domain) { result.append(domain) }
        }
        return result
    }

    /// Throws `FixtureDomainError.notPermitted` unless `ca`'s name constraints permit every name under each domain.
    /// A CA without name constraints permits every name.
    public static func requirePermitted(_ domains: [String], by ca: Certificate) throws {
        guard let constraints = ca.nameConstraintEntries else { return }
        let dns = { (entries: [String]) in entries.filter { !$0.contains("/") && !$0.hasPrefix("type ") } }
        let permitted = dns(constraints.permitted)
        let excluded = dns(constraints.excluded)
        for domain in domains {
            let allowed = permitted.isEmpty || permitted.contains { covers($0, domain) }
            if !allowed || excluded.contains(where: { covers($0, domain) || covers(domain, $0) }) {
                throw FixtureDomainError.notPermitted(domain, permitted: permitted)
            }
        }
    }

    /// RFC 5280 4.2.1.10: a DNS constraint covers the name itself and every name with labels added on its left (a
    /// leading dot, as older CAs wrote it, covers the names below only, as OpenSSL reads it).
    static func covers(_ constraint: String, _ name: String) -> Bool {
        let constraint = constraint.lowercased()
        if constraint.hasPrefix(".") { return name.hasSuffix(constraint) }
        return name == constraint || name.hasSuffix("." + constraint)
    }
}

/// A `serve --domain` the runner cannot use.
package struct FixtureDomainError: CodedError {
    package typealias Code = ErrorCode<FixtureDomainError>

    package let code: Code
    package let reason: String
    package let fix: String?
    /// The domain as given.
    package let domain: String
    /// For `notPermitted`: the DNS names the CA's name constraints permit.
    package let permitted: [String]

    private init(_ code: Code, domain: String, reason: String, fix: String?, permitted: [String] = []) {
        self.code = code; self.domain = domain; self.reason = reason; self.fix = fix; self.permitted = permitted
    }

    package static func invalid(_ domain: String, _ why: String) -> FixtureDomainError {
        FixtureDomainError(.invalid, domain: domain, reason: "invalid fixture domain \"\(domain.escapingControlCharacters)\"", fix: why)
    }

    package static func notPermitted(_ domain: String, permitted: [String]) -> FixtureDomainError {
        FixtureDomainError(.notPermitted, domain: domain,
                           reason: "the built-in CA does not permit \(domain) (its name constraints allow only "
                            + "\(permitted.joined(separator: ", "))), so every client that checks them would refuse NAME.\(domain)",
                           fix: "make a CA that permits it: initializeCA(CAOptions(permittedDomains: [\"\(domain)\"]), ifExists: "
                            + ".replace) (the old CA is moved aside, not deleted; trust the new one where the old one was trusted)",
                           permitted: permitted)
    }
}

extension ErrorCode where Owner == FixtureDomainError {
    /// Not a DNS name of two labels or more (a wildcard, an IP address, a leading dot).
    package static var invalid: Self { Self("invalid") }
    /// The CA's name constraints exclude it.
    package static var notPermitted: Self { Self("notPermitted") }
}
