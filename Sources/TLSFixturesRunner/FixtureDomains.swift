import Foundation
import TLSFixturesOpenSSL
import TLSFixturesPKI
import TLSFixturesScenario

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

package enum FixtureDomainError: Error, CustomStringConvertible, Sendable, Equatable {
    case invalid(String, String)
    case notPermitted(String, permitted: [String])

    public var description: String {
        switch self {
        case .invalid(let domain, let why):
            return "invalid fixture domain \"\(domain.escapingControlCharacters)\": \(why)"
        case .notPermitted(let domain, let permitted):
            return "the built-in CA does not permit \(domain) (its name constraints allow only \(permitted.joined(separator: ", "))), "
                + "so every client that checks them would refuse NAME.\(domain); make a CA that permits it: "
                + "initializeCA(CAOptions(permittedDomains: [\"\(domain)\"]), ifExists: .replace) (the old CA is moved aside, not "
                + "deleted; trust the new one where the old one was trusted)"
        }
    }
}
