import TLSFixturesWire

/// An error from the PKI layer: key specs, certificate profiles and requests, the certificate store and exports.
///
/// A ``CodedError``, like every public error of the library: a stable ``code``, a one-line ``reason`` and a ``fix`` in
/// the library's own terms; equality compares the code, so `#expect(throws: PKIError.noCA(path: ""))` or
/// `catch let error as PKIError where error.code == .noCA` test the kind of failure, not its wording. The file and line
/// that threw are kept for debugging (``debugDescription``), not shown to users.
public struct PKIError: CodedError, CustomDebugStringConvertible {
    /// Its kinds of failure, the static members of `ErrorCode<PKIError>`: new ones may be added, none changes meaning.
    public typealias Code = ErrorCode<PKIError>

    /// What kind of failure this is.
    public let code: Code
    /// What is wrong, one line.
    public let reason: String
    /// What to do about it, in the library's terms; nil when there is nothing to add to the reason.
    public let fix: String?
    /// The file, folder or value the error is about, when there is one.
    public let subject: String?
    /// The bare cause (`Permission denied`) for errors about a path, so a caller can word the error around its own
    /// option (`--out-dir`) rather than the store's.
    package var problem: String? = nil
    /// Where the error was thrown (`#fileID`), for debugging.
    public let file: String
    /// The line it was thrown from.
    public let line: UInt

    /// Memberwise: each argument sets the property of the same name, unchecked.
    public init(code: Code, subject: String? = nil, reason: String, fix: String? = nil, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.fix = fix
        self.subject = subject
        self.file = file
        self.line = line
    }

    public var debugDescription: String { "PKIError.\(code): \(description) (\(file):\(line))" }

    /// Whether this is a refusal of the store itself, which no fallback may get around.
    public var refusesTheStore: Bool { code == .untrustedStore || code == .untrustedStoreFile }
}

/// The codes of `PKIError`.
extension ErrorCode where Owner == PKIError {
    /// A key spec that is not `rsa:BITS`, `ec:CURVE` or `ed25519`.
    public static var invalidKeySpec: Self { Self("invalidKeySpec") }
    /// A signature digest name that is not one of `SignatureDigest`'s.
    public static var invalidDigest: Self { Self("invalidDigest") }
    /// A host (subjectAltName) that is neither a DNS name nor an IP address.
    public static var invalidHost: Self { Self("invalidHost") }
    /// A name for a certificate in the store that is not a safe file name.
    public static var invalidName: Self { Self("invalidName") }
    /// A permitted or excluded name constraint that is neither a DNS name nor a CIDR block.
    public static var invalidNameConstraint: Self { Self("invalidNameConstraint") }
    /// An extended key usage or key usage name that does not exist.
    public static var invalidUsage: Self { Self("invalidUsage") }
    /// An issuer that is neither `self` nor a `BuiltinAuthority`.
    public static var invalidIssuer: Self { Self("invalidIssuer") }
    /// A validity a certificate cannot carry: unparsable, out of range, or ending before it starts.
    public static var invalidValidity: Self { Self("invalidValidity") }
    /// An OCSP or CRL URL that cannot go into the extension.
    public static var invalidRevocationURL: Self { Self("invalidRevocationURL") }
    /// A digest the issuer's key cannot sign with (EdDSA takes none, ECDSA has no MD5).
    public static var digestNotSignable: Self { Self("digestNotSignable") }
    /// A subjectAltName extension with no name in it.
    public static var emptySubjectAltNames: Self { Self("emptySubjectAltNames") }
    /// A server certificate request without a host.
    public static var missingHost: Self { Self("missingHost") }
    /// Name constraints or a path length on a certificate that is not a CA.
    public static var requiresCA: Self { Self("requiresCA") }
    /// More subject alternative names than `CertificateProfile.maximumSubjectAltNames`.
    public static var tooManyNames: Self { Self("tooManyNames") }
    /// An export would replace a different existing file.
    public static var fileExists: Self { Self("fileExists") }
    /// A scenario without a certificate (plain HTTP) asked for pins.
    public static var nothingToPin: Self { Self("nothingToPin") }
    /// A file in the store that cannot be read as what it should be.
    public static var damaged: Self { Self("damaged") }
    /// A file of the built-in root CA that cannot be read: the CA must be restored or replaced.
    public static var damagedCA: Self { Self("damagedCA") }
    /// `initializeCA` with `.refuse` found a CA.
    public static var caExists: Self { Self("caExists") }
    /// The store has no CA and the caller asked not to make one.
    public static var noCA: Self { Self("noCA") }
    /// The store had a CA and has lost it (its certificate is gone; its key, a key set aside or a retired CA remain):
    /// a new one is made only when asked for, never on first use.
    public static var caMissing: Self { Self("caMissing") }
    /// The built-in CA was replaced (by another process) while a certificate it was to sign was being made: nothing
    /// was written.
    public static var caReplaced: Self { Self("caReplaced") }
    /// Another process changed a stored certificate while this one was making it: nothing was written.
    public static var concurrentChange: Self { Self("concurrentChange") }
    /// A built-in authority the store has not made yet (or must re-make), asked for by something that only reads.
    public static var authorityNotMade: Self { Self("authorityNotMade") }
    /// A name the store answers to itself (`CertificateStore.reservedNames`).
    public static var reservedName: Self { Self("reservedName") }
    /// A key of the store's own authorities offered for another certificate.
    public static var authorityKey: Self { Self("authorityKey") }
    /// A key asked for by name (`keyName`, `--reuse-key-of`) that the store does not have.
    public static var noSuchKey: Self { Self("noSuchKey") }
    /// The store (or a file in it) cannot be created, read, written or locked.
    public static var storeUnavailable: Self { Self("storeUnavailable") }
    /// A file in the store that this user may not read (its key or certificate for one scenario): that scenario fails,
    /// the store's others serve.
    public static var storeFileUnreadable: Self { Self("storeFileUnreadable") }
    /// A stored key that is not the private key of its certificate.
    public static var keyMismatch: Self { Self("keyMismatch") }
    /// An export or output path inside the store (`CertificateStore.requireOutside`).
    public static var insideStore: Self { Self("insideStore") }
    /// The store's folder is not one this user can trust (its owner, its mode, a folder above it): refused, never
    /// repaired. Fix it, or use another store.
    public static var untrustedStore: Self { Self("untrustedStore") }
    /// Something inside the store is not what the store made (a symbolic link, not a regular file, a key others can
    /// read that cannot be made private): refused, never repaired or followed.
    public static var untrustedStoreFile: Self { Self("untrustedStoreFile") }
    /// An output path outside the store (an export, `cert issue --out-dir`) that cannot be created or written.
    public static var outputUnavailable: Self { Self("outputUnavailable") }
    /// A certificate signing request (CSR) or key file that cannot be read, or whose signature does not verify.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// An issuer that is not a CA certificate with its key (a user's own CA given to sign with).
    public static var notAnAuthority: Self { Self("notAnAuthority") }
    /// A trust store of this machine (`TrustStores`) that cannot be changed: no permission, or its program is missing
    /// or failed.
    public static var trustStoreUnavailable: Self { Self("trustStoreUnavailable") }
    /// A serial number that is not a positive integer of at most 20 octets.
    public static var invalidSerial: Self { Self("invalidSerial") }
    /// A CA that would be, or is, expired: everything it signs fails with "certificate has expired".
    public static var expiredCA: Self { Self("expiredCA") }
    /// A CA key default clients refuse (RSA below 2048 bits): everything it signs fails with "CA certificate key too weak".
    public static var weakCAKey: Self { Self("weakCAKey") }
}

// One factory a code (a few share one), named as the cases of the enum this replaced so call sites read the same.
extension PKIError {
    package static func invalidKeySpec(_ spec: String, _ hint: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .invalidKeySpec, subject: spec, reason: "unknown key spec \"\(echoed(spec))\"", fix: hint, file: file, line: line)
    }

    package static func invalidDigest(_ digest: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .invalidDigest, subject: digest, reason: "unknown digest \"\(echoed(digest))\"",
                 fix: "use one of \(SignatureDigest.allCases.map(\.rawValue).joined(separator: ", "))", file: file, line: line)
    }

    package static func invalidHost(_ host: String, _ why: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .invalidHost, subject: host, reason: "invalid host \"\(echoed(host))\"", fix: why, file: file, line: line)
    }

    package static func invalidName(_ name: String, _ why: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .invalidName, subject: name, reason: "invalid name \"\(echoed(name))\"", fix: why, file: file, line: line)
    }

    package static func invalidNameConstraint(_ entry: String, _ why: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .invalidNameConstraint, subject: entry, reason: "invalid name constraint \"\(entry)\"", fix: why, file: file, line: line)
    }

    package static func damaged(path: String, problem: String, fix: String, code: Code = .damaged,
                               file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: code, subject: path, reason: "\(path) is damaged (\(problem))", fix: fix, file: file, line: line)
    }

    package static func caExists(path: String, fingerprint: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .caExists, subject: path,
                 reason: "a CA already exists in \(path) (SHA-256 \(fingerprint.prefix(23))…); apps and devices may trust or pin it, so it is kept",
                 fix: "to replace it, call initializeCA(ifExists: .replace) (the old one is moved aside, not deleted), or .keep to use it",
                 file: file, line: line)
    }

    package static func noCA(path: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .noCA, subject: path, reason: "no CA in \(path)",
                 fix: "make one with CertificateStore.initializeCA(), or open a store that has one (CertificateStore(directory:), TLS_FIXTURES_CERTS)",
                 file: file, line: line)
    }

    /// The authority `name` (its certificate at `path`) is not in the store as it would be used.
    package static func authorityNotMade(_ name: String, path: String, file: String = #fileID,
                                         line: UInt = #line) -> PKIError {
        PKIError(code: .authorityNotMade, subject: path,
                 reason: "the \(name) authority is not made yet, or is out of date (\(path)); showing it makes nothing",
                 fix: "it is made on first use by what it signs for (a scenario, an export: `tls-fixtures ca export "
                    + "--authority \(name)`)", file: file, line: line)
    }

    /// The store's CA changed after this process loaded it and before a certificate it signs was written.
    package static func caReplaced(store: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .caReplaced, subject: store,
                 reason: "the built-in CA in \(store) was replaced while this certificate was being made (ca init "
                    + "--force in another process?); nothing was written",
                 fix: "make it again: it is then signed by the new CA", file: file, line: line)
    }

    /// Another writer stored a different certificate at `path` while this one was being made.
    package static func concurrentChange(path: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .concurrentChange, subject: path,
                 reason: "\(path) was changed by another process while this one was making it; nothing was written, "
                    + "and the other's certificate is kept",
                 fix: "look at what is there now, and make it again if you still want yours", file: file, line: line)
    }

    /// The root whose certificate `path` is missing, with what is left of it (`traces`).
    package static func caMissing(path: String, traces: [String], file: String = #fileID,
                                  line: UInt = #line) -> PKIError {
        PKIError(code: .caMissing, subject: path,
                 reason: "\(path) is missing, but this store had a CA (left of it: "
                    + "\(traces.joined(separator: ", "))); a new one is made only when you ask, because devices trust "
                    + "the old one and apps pin it",
                 fix: "restore the CA's files from a backup (a retired one is in replaced-…/), or make a new CA with "
                    + "initializeCA(ifExists: .replace) (the files left are moved aside, not deleted)",
                 file: file, line: line)
    }

    /// A file of the store `path` this user may not read (`problem`: the system's words).
    package static func storeFileUnreadable(path: String, problem: String, file: String = #fileID, line: UInt = #line)
        -> PKIError
    {
        var error = PKIError(code: .storeFileUnreadable, subject: path, reason: "cannot read \(path): \(problem)",
                             fix: "let this user read it (`ls -l` shows its owner and mode: `chmod u+r` it, or run "
                                + "as its owner)",
                             file: file, line: line)
        error.problem = problem
        return error
    }

    package static func storeUnavailable(path: String, problem: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        var error = PKIError(code: .storeUnavailable, subject: path, reason: "cannot use the certificate store \(path): \(problem)",
                             fix: "use another directory (CertificateStore(directory:), or TLS_FIXTURES_CERTS)", file: file, line: line)
        error.problem = problem
        return error
    }

    /// An output outside the store (`path`) that cannot be made or written, for `problem`.
    package static func outputUnavailable(path: String, problem: String, fix: String = "choose a folder you can write to",
                                          file: String = #fileID, line: UInt = #line) -> PKIError {
        var error = PKIError(code: .outputUnavailable, subject: path, reason: "cannot write to \(path): \(problem)",
                             fix: fix, file: file, line: line)
        error.problem = problem
        return error
    }

    package static func keyMismatch(path: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .keyMismatch, subject: path, reason: "\(path) does not hold the private key of its certificate",
                 fix: "restore the pair or re-create it", file: file, line: line)
    }

    package static func tooManyNames(_ count: Int, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .tooManyNames, subject: "\(count)",
                 reason: "\(count) subject alternative names, but at most \(CertificateProfile.maximumSubjectAltNames) go in one certificate: "
                    + "far more make it megabytes long, and clients refuse it",
                 file: file, line: line)
    }

    package static func insideStore(path: String, store: String, file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .insideStore, subject: path,
                 reason: "\(path) is inside the certificate store \(store), whose files are the kit's own (writing there could replace the CA's key)",
                 fix: "write it elsewhere", file: file, line: line)
    }

    package static func untrustedStore(path: String, problem: String, fix: String, code: Code = .untrustedStore,
                                      file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: code, subject: path, reason: "refusing \(path): \(problem)", fix: fix, file: file, line: line)
    }

    /// An export would replace `path`, which holds something else.
    static func fileExists(_ path: String, _ what: String = "exists and differs", file: String = #fileID, line: UInt = #line) -> PKIError {
        PKIError(code: .fileExists, subject: path, reason: "\(path) \(what)", fix: "pass force: true to replace it, or write elsewhere",
                 file: file, line: line)
    }
}
