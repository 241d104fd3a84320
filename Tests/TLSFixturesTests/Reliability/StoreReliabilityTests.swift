import COpenSSL
import Foundation
import Testing
@testable import TLSFixtures

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process that runs while the test does other things (several `prepare`s at once, a `serve`).
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    private let termination = Termination()
    private let scratch: URL
    private let outURL: URL
    private let errURL: URL

    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("background-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        outURL = scratch.appendingPathComponent("out")
        errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = TestEnvironment.childEnvironment(environment ?? [:])
        let handles = [try FileHandle(forWritingTo: outURL), try FileHandle(forWritingTo: errURL)]
        defer { for handle in handles { try? handle.close() } }
        process.standardOutput = handles[0]
        process.standardError = handles[1]
        process.standardInput = FileHandle.nullDevice
        let termination = termination
        process.terminationHandler = { _ in termination.finish() }
        try process.run()
    }

    /// A child still running here gets SIGTERM, and SIGKILL if it has not exited `StoppableChild.stopBound` later.
    deinit {
        if !termination.isFinished {
            kill(process.processIdentifier, SIGTERM)
            if !termination.wait(until: Date().addingTimeInterval(StoppableChild.stopBound)) {
                kill(process.processIdentifier, SIGKILL)
            }
        }
        try? FileManager.default.removeItem(at: scratch)
    }

    var stdout: String { String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self) }
    var stderr: String { String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self) }
    var isRunning: Bool { !termination.isFinished }

    /// Awaits the exit; false when `timeout` passed first (the process is then stopped: `stop()`).
    @discardableResult
    func wait(timeout: TimeInterval, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        if await termination.finished(within: timeout) { return true }
        await stop(sourceLocation: sourceLocation)
        return false
    }

    /// SIGTERM, and the exit awaited; past `StoppableChild.stopBound`, SIGKILL and a failed test.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) async {
        guard isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if await termination.finished(within: StoppableChild.stopBound) { return }
        kill(process.processIdentifier, SIGKILL)
        let command = (process.arguments ?? []).prefix(2).joined(separator: " ")
        Issue.record("\(command) did not exit within \(Int(StoppableChild.stopBound)) s of SIGTERM: killed",
                     sourceLocation: sourceLocation)
        _ = await termination.finished(within: StoppableChild.stopBound)
    }

    /// Waits until standard output contains `text`; false on exit or timeout first.
    func waitForOutput(_ text: String, timeout: TimeInterval) async -> Bool {
        await wait(for: text, in: { $0.stdout }, timeout: timeout)
    }

    /// Until the child has written `text` to its standard error (or ended, or `timeout` passed).
    func waitForErrorOutput(_ text: String, timeout: TimeInterval) async -> Bool {
        await wait(for: text, in: { $0.stderr }, timeout: timeout)
    }

    /// Looks every 20 ms, sleeping in between (no thread held), and once more after `timeout` (`Poll`).
    private func wait(for text: String, in stream: (BackgroundProcess) -> String, timeout: TimeInterval) async -> Bool {
        await Poll.until(timeout: timeout) { stream(self).contains(text) || !isRunning }
        return stream(self).contains(text)
    }
}

/// Checks a store on disk with `openssl` as the independent judge.
enum StoreAudit {
    static func run(_ arguments: [String]) -> Subprocess.Result? { try? TestEnvironment.openssl(arguments) }

    static func files(_ directory: URL, suffix: String) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(suffix) }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    /// `openssl pkey -pubout` of a key file, or nil when openssl cannot read it.
    static func publicKey(ofKey url: URL) -> String? {
        guard let result = run(["pkey", "-in", url.path, "-pubout"]), result.status == 0 else { return nil }
        return result.stdout
    }

    /// `openssl x509 -pubkey` of the first certificate of a file, or nil.
    static func publicKey(ofCertificate url: URL) -> String? {
        guard let result = run(["x509", "-in", url.path, "-noout", "-pubkey"]), result.status == 0 else { return nil }
        return result.stdout
    }

    /// How many certificates `openssl storeutl` finds in a file (0 when unreadable).
    static func certificateCount(_ url: URL) -> Int {
        guard let result = run(["storeutl", "-noout", "-certs", url.path]), result.status == 0 else { return 0 }
        return result.stdout.split(separator: "\n").filter { $0.hasPrefix("Total found:") }.first
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Every problem found: unreadable PEM, key not matching its certificate, a certificate not signed by the store's
    /// authority that its issuer names, a chain file whose intermediates differ from the store's, leftovers.
    static func problems(in store: URL) -> [String] {
        var problems: [String] = []
        let ca = store.appendingPathComponent("ca"), certs = store.appendingPathComponent("certs"), keys = store.appendingPathComponent("keys")
        var authorities: [String: Certificate] = [:]   // subject → certificate
        for pem in files(ca, suffix: ".pem") {
            guard certificateCount(pem) == 1, let certificate = try? Certificate(pem: Data(contentsOf: pem)) else {
                problems.append("\(pem.path): not one readable certificate"); continue
            }
            authorities[certificate.subject] = certificate
            let key = pem.deletingPathExtension().appendingPathExtension("key")
            guard let keyPublic = publicKey(ofKey: key) else { problems.append("\(key.path): openssl cannot read it"); continue }
            if keyPublic != publicKey(ofCertificate: pem) { problems.append("\(key.path) does not match \(pem.lastPathComponent)") }
        }
        for key in files(keys, suffix: ".key") where publicKey(ofKey: key) == nil {
            problems.append("\(key.path): openssl cannot read it")
        }
        for pem in files(certs, suffix: ".pem") {
            let count = certificateCount(pem)
            guard count >= 1, let chain = try? Certificate.all(pem: Data(contentsOf: pem)), chain.count == count else {
                problems.append("\(pem.path): unreadable"); continue
            }
            let recordURL = pem.deletingPathExtension().appendingPathExtension("json")
            guard let data = try? Data(contentsOf: recordURL),
                  let record = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let keyFile = record["keyFile"] as? String else {
                problems.append("\(recordURL.path): missing or unreadable record"); continue
            }
            let key = keys.appendingPathComponent(keyFile)
            if publicKey(ofKey: key) != publicKey(ofCertificate: pem) { problems.append("\(pem.lastPathComponent) does not match \(keyFile)") }
            // Signed by the authority it names, as stored now (so no other process's CA signed it).
            for (certificate, next) in zip(chain, chain.dropFirst().map(Optional.some) + [nil]) {
                guard !certificate.isSelfSigned else { continue }
                guard let issuer = next ?? authorities[certificate.issuer] else {
                    if certificate.issuer != certificate.subject { problems.append("\(pem.lastPathComponent): issuer \(certificate.issuer) is not in the store") }
                    continue
                }
                if X509_verify(certificate.pointer, X509_get0_pubkey(issuer.pointer)) != 1 {
                    problems.append("\(pem.lastPathComponent): \(certificate.subject) is not signed by the store's \(issuer.subject)")
                }
                OpenSSLError.clearQueue()
            }
            for extra in chain.dropFirst() where authorities[extra.subject].map({ $0 != extra }) ?? false {
                problems.append("\(pem.lastPathComponent) sends a \(extra.subject) that differs from the store's")
            }
        }
        for params in files(store.appendingPathComponent("params"), suffix: ".pem") {
            if run(["pkeyparam", "-in", params.path, "-noout"])?.status != 0 { problems.append("\(params.path): unreadable DH parameters") }
        }
        // Leftovers of an interrupted write, a second CA moved aside, or a file moved aside as damaged.
        let everything = FileManager.default.enumerator(atPath: store.path)?.allObjects as? [String] ?? []
        for path in everything where path.contains(".tmp-") || path.contains("replaced-") || path.contains(".damaged-") || path.contains(".orphaned-") {
            problems.append("leftover \(path)")
        }
        return problems
    }

    static func bytes(_ url: URL) -> Data? { try? Data(contentsOf: url) }
}

extension ReliabilitySuite {
    @Suite("Certificate store under concurrency and damage", .requires(Tools.openssl), .ownThreads)
    struct StoreUnderStress {
        static func expectOneLineError(_ result: Subprocess.Result, mentioning fragments: [String],
                                       sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(result.status != 0 && !result.timedOut, sourceLocation: sourceLocation)
            #expect(result.status < 128, "crashed: \(result.stderr)", sourceLocation: sourceLocation)
            #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump"), sourceLocation: sourceLocation)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "expected one line, got: \(result.stderr)", sourceLocation: sourceLocation)
            for fragment in fragments {
                #expect(result.stderr.contains(fragment), "missing \(fragment) in \(result.stderr)", sourceLocation: sourceLocation)
            }
        }

        /// Every scenario but `rsa8192`, whose single key takes 10–60 s to generate and adds nothing to a race that
        /// `rsa4096` does not already have (a long critical section under one item's lock).
        static var raceScenarios: [String] {
            ScenarioCatalog.builtIn.scenarios.map(\.name).filter { $0 != "rsa8192" }
        }

        @Test("8 processes preparing one empty store at once end with one CA and every file valid")
        func eightPrepares() async throws {
            let store = TestEnvironment.temporaryDirectory("race8").appendingPathComponent("store")
            let processes = try (0..<8).map { _ in
                try BackgroundProcess([TestEnvironment.cli, "prepare", "--json", "--dir", store.path] + Self.raceScenarios)
            }
            var keysGenerated = 0, certificatesIssued = 0
            for process in processes {
                // A hang detector: eight processes making every scenario's keys on two cores.
                try #require(await process.wait(timeout: 900), "prepare did not finish")
                #expect(process.process.terminationStatus == 0, "\(process.stderr)")
                #expect(!process.stderr.contains("warning"), "\(process.stderr)")
                let report = try JSONSerialization.jsonObject(with: Data(process.stdout.utf8)) as? [String: Any]
                keysGenerated += report?["keysGenerated"] as? Int ?? -1_000
                certificatesIssued += report?["certificatesIssued"] as? Int ?? -1_000
            }
            // One CA: a single root, its fingerprint the one every process signed with.
            let root = store.appendingPathComponent("ca/root.pem")
            let fingerprint = try #require(StoreAudit.run(["x509", "-in", root.path, "-noout", "-fingerprint", "-sha256"]))
            #expect(fingerprint.status == 0 && fingerprint.stdout.contains("Fingerprint="))
            let problems = StoreAudit.problems(in: store)
            #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.joined(separator: "\n"))")
            // Nothing was made twice: the keys and certificates the 8 processes report add up to what is on disk.
            let keyFiles = StoreAudit.files(store.appendingPathComponent("ca"), suffix: ".key").count
                + StoreAudit.files(store.appendingPathComponent("keys"), suffix: ".key").count
            let certificateFiles = StoreAudit.files(store.appendingPathComponent("ca"), suffix: ".pem").count
                + StoreAudit.files(store.appendingPathComponent("certs"), suffix: ".pem").count
            #expect(keysGenerated == keyFiles, "\(keysGenerated) keys generated for \(keyFiles) key files")
            #expect(certificatesIssued == certificateFiles, "\(certificatesIssued) certificates issued for \(certificateFiles) files")
        }

        /// One kind of damage per scenario, so each is found on its own (a new key re-issues its leaf anyway).
        static let damageScenarios = ["tls-v1-2", "ats-compliant", "pinned", "ecc256", "sha384"]

        @Test("a truncated or garbage leaf file is reported with its path and regenerated; the CA is untouched")
        func damagedLeaves() throws {
            let store = TestEnvironment.temporaryDirectory("leafdamage").appendingPathComponent("store")
            #expect(try TestEnvironment.tlsFixtures(["prepare", "--dir", store.path] + Self.damageScenarios).status == 0)
            let caFiles = StoreAudit.files(store.appendingPathComponent("ca"), suffix: "")
            let caBefore = caFiles.map(StoreAudit.bytes)

            let truncatedLeaf = store.appendingPathComponent("certs/tls-v1-2.pem")
            let garbageLeaf = store.appendingPathComponent("certs/ats-compliant.pem")
            let garbageRecord = store.appendingPathComponent("certs/pinned.json")
            let garbageKey = try #require(StoreAudit.files(store.appendingPathComponent("keys"), suffix: ".key").first { $0.lastPathComponent.hasPrefix("ecc256.") })
            let truncatedKey = try #require(StoreAudit.files(store.appendingPathComponent("keys"), suffix: ".key").first { $0.lastPathComponent.hasPrefix("sha384.") })
            var generator = SeededBytes(seed: 7)
            try Data(try Data(contentsOf: truncatedLeaf).prefix(200)).write(to: truncatedLeaf)
            try Data(generator.bytes(700)).write(to: garbageLeaf)
            try Data("{ not json".utf8).write(to: garbageRecord)
            try Data(generator.bytes(300)).write(to: garbageKey)
            try Data(try Data(contentsOf: truncatedKey).prefix(64)).write(to: truncatedKey)

            let result = try TestEnvironment.tlsFixtures(["prepare", "--dir", store.path] + Self.damageScenarios)
            #expect(result.status == 0, "\(result.combined)")
            for damaged in [truncatedLeaf, garbageLeaf, garbageRecord, garbageKey, truncatedKey] {
                let line = result.stderr.split(separator: "\n").first { $0.contains(damaged.path) }
                #expect(line?.hasPrefix("warning:") == true, "\(damaged.lastPathComponent) was not reported with its path: \(result.stderr)")
            }
            // Regenerated and valid again, by openssl's judgement; the damaged keys were moved aside, not deleted.
            let problems = StoreAudit.problems(in: store).filter { !$0.contains(".damaged-") }
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
            for leaf in [truncatedLeaf, garbageLeaf] {
                let verify = try TestEnvironment.openssl(["verify", "-CAfile", store.appendingPathComponent("ca/root.pem").path, leaf.path])
                #expect(verify.status == 0, "\(verify.combined)")
            }
            let asideKeys = StoreAudit.files(store.appendingPathComponent("keys"), suffix: "").filter { $0.lastPathComponent.contains(".damaged-") }
            #expect(asideKeys.count == 2, "\(asideKeys.map(\.lastPathComponent))")
            #expect(StoreAudit.files(store.appendingPathComponent("ca"), suffix: "").map(StoreAudit.bytes) == caBefore, "the CA changed")
        }

        @Test("garbage in the CA's files is reported with its path and the CA is never regenerated", arguments: [
            ("root.pem", "garbage"), ("root.pem", "empty"), ("root.key", "truncated"), ("root.key", "garbage"),
        ])
        func damagedCA(file: String, damage: String) throws {
            let store = TestEnvironment.temporaryDirectory("cadamage").appendingPathComponent("store")
            #expect(try TestEnvironment.tlsFixtures(["prepare", "--dir", store.path, "tls-v1-2"]).status == 0)
            let target = store.appendingPathComponent("ca/\(file)")
            switch damage {
            case "garbage": var generator = SeededBytes(seed: 11); try Data(generator.bytes(400)).write(to: target)
            case "empty": try Data().write(to: target)
            default: try Data(try Data(contentsOf: target).prefix(40)).write(to: target)
            }
            let caDirectory = store.appendingPathComponent("ca")
            let listing = try FileManager.default.contentsOfDirectory(atPath: caDirectory.path).sorted()
            let contents = listing.map { StoreAudit.bytes(caDirectory.appendingPathComponent($0)) }

            for command in [["prepare", "tls-v1-2"], ["ca", "show"], ["ca", "init", "--if-missing"], ["cert", "issue", "--name", "x", "--host", "localhost"]] {
                let result = try TestEnvironment.tlsFixtures(command + ["--dir", store.path])
                Self.expectOneLineError(result, mentioning: [target.path, "damaged"])
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: caDirectory.path).sorted() == listing, "files appeared or vanished in ca/")
            #expect(listing.map { StoreAudit.bytes(caDirectory.appendingPathComponent($0)) } == contents, "a CA file changed")
        }

        /// Every retired CA, as (certificate, key) pairs that openssl reads and that match each other.
        static func retiredCAs(in store: URL) -> [(certificate: String, key: String)] {
            let ca = store.appendingPathComponent("ca")
            let folders = ((try? FileManager.default.contentsOfDirectory(atPath: ca.path)) ?? []).filter { $0.hasPrefix("replaced-") }
            return folders.compactMap { folder in
                let pem = ca.appendingPathComponent("\(folder)/root.pem"), key = ca.appendingPathComponent("\(folder)/root.key")
                // openssl only where there is a certificate (the folders a test took hold none).
                guard FileManager.default.fileExists(atPath: pem.path),
                      let certificatePublic = StoreAudit.publicKey(ofCertificate: pem), StoreAudit.publicKey(ofKey: key) == certificatePublic,
                      let keyBytes = StoreAudit.bytes(key) else { return nil }
                return (certificatePublic, String(decoding: keyBytes, as: UTF8.self))
            }
        }

        /// Takes every name a CA retired in the next ten minutes could get first (`ca/replaced-DATE`, one a second, the store's
        /// own spelling), each a folder holding a file of its own: every retirement then meets a name in use, as two in
        /// the same second do, whatever the machine's speed. Returns the folders, to check they were left alone.
        static func takeRetirementNames(in store: URL) throws -> [URL] {
            let ca = store.appendingPathComponent("ca")
            let formatter = ISO8601DateFormatter()
            let now = Date()
            return try (-5..<600).map { offset in
                let stamp = formatter.string(from: now.addingTimeInterval(TimeInterval(offset)))
                    .replacingOccurrences(of: ":", with: "")
                let folder = ca.appendingPathComponent("replaced-\(stamp)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                try Data("taken by the test\n".utf8).write(to: folder.appendingPathComponent("taken"))
                return folder
            }
        }

        /// Whether each of `folders` still holds its one file and nothing else, and every CA retired in `store` went
        /// to a folder named for a second already taken (`replaced-DATE-N`): the collision really happened.
        static func untouched(_ folders: [URL], store: URL) -> Bool {
            let ca = store.appendingPathComponent("ca")
            let retired = ((try? FileManager.default.contentsOfDirectory(atPath: ca.path)) ?? [])
                .filter { FileManager.default.fileExists(atPath: ca.appendingPathComponent("\($0)/root.pem").path) }
            return folders.allSatisfy { (try? FileManager.default.contentsOfDirectory(atPath: $0.path)) == ["taken"] }
                && retired.allSatisfy { $0.range(of: #"-[0-9]+$"#, options: .regularExpression) != nil }
        }

        /// Retired CAs went to `ca/replaced-<seconds>`: a second `--force` in the same second renamed its CA onto the
        /// first one's files, and five CAs made left two keys. Devices may trust any of them, so none may be lost. The
        /// collision is made, not hoped for: every name a retirement could take first is taken already.
        @Test("five `ca init --force` whose retirement folder names are all taken leave five retired CAs, five keys")
        func fiveForcedInitsInOneSecond() async throws {
            let directory = TestEnvironment.temporaryDirectory("force5").appendingPathComponent("store")
            let store = CertificateStore(directory: directory)
            var made = [try store.initializeCA().ca.certificate.spkiSHA256]
            let taken = try Self.takeRetirementNames(in: directory)
            for _ in 0..<5 { made.append(try store.initializeCA(ifExists: .replace).ca.certificate.spkiSHA256) }
            let retired = Self.retiredCAs(in: directory)
            #expect(retired.count == 5, "\(retired.count) of 5 retired CAs are whole in \(directory.path)/ca")
            #expect(Set(retired.map(\.key)).count == 5, "a retired key was overwritten")
            #expect(Set(made).count == 6)
            #expect(Self.untouched(taken, store: directory), "a retirement wrote into a folder that was not its own")

            // The CLI, five processes at once on another store: they queue on the store's lock.
            let cliStore = TestEnvironment.temporaryDirectory("force5cli").appendingPathComponent("store")
            #expect(try await TestEnvironment.tlsFixturesAwaiting(["ca", "init", "--dir", cliStore.path]).status == 0)
            let cliTaken = try Self.takeRetirementNames(in: cliStore)
            let runs = try (0..<5).map { _ in
                try Subprocess.launch([TestEnvironment.cli, "ca", "init", "--force", "--dir", cliStore.path])
            }
            for run in runs {
                let result = await run.finished(timeout: 120)
                #expect(result.status == 0, "\(result.combined)")
            }
            let cliRetired = Self.retiredCAs(in: cliStore)
            #expect(cliRetired.count == 5 && Set(cliRetired.map(\.key)).count == 5,
                    "\(cliRetired.count) retired CAs left by five forced inits")
            #expect(Self.untouched(cliTaken, store: cliStore), "a retirement wrote into a folder that was not its own")
        }

        /// Root ignores permission bits, so a read-only store is made immutable (`chattr +i`) when the file system
        /// allows it, else the CLI runs as `nobody` on a store it cannot write.
        @Test("a read-only store gives a clear one-line error", .enabled(if: Platform.isLinux, "chattr / setpriv"), .requires(asRoot: Tools.setpriv))
        func readOnlyStore() throws {
            let parent = TestEnvironment.temporaryDirectory("readonly")
            let prepared = parent.appendingPathComponent("prepared"), empty = parent.appendingPathComponent("empty")
            #expect(try TestEnvironment.tlsFixtures(["prepare", "--dir", prepared.path, "tls-v1-2"]).status == 0)
            try FileManager.default.removeItem(at: prepared.appendingPathComponent("certs/tls-v1-2.pem"))   // must be written again
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)

            var asNobody = false
            var immutable = false
            if TestEnvironment.isRoot {
                immutable = (try? Subprocess.run(["chattr", "-R", "+i", prepared.path, empty.path]))?.status == 0
                if !immutable {
                    _ = try? Subprocess.run(["chattr", "-R", "-i", prepared.path, empty.path])
                    asNobody = true
                    chmod(parent.path, 0o755); chmod(empty.path, 0o755)
                }
            } else {
                _ = try Subprocess.run(["chmod", "-R", "a-w", prepared.path, empty.path])
            }
            defer {
                if immutable { _ = try? Subprocess.run(["chattr", "-R", "-i", prepared.path, empty.path]) }
                _ = try? Subprocess.run(["chmod", "-R", "u+w", prepared.path, empty.path])
            }
            for store in [prepared, empty, empty.appendingPathComponent("sub")] {
                let result = try TestEnvironment.tlsFixtures(asNobody: asNobody, ["prepare", "--dir", store.path, "tls-v1-2"])
                Self.expectOneLineError(result, mentioning: [store.path, "--dir"])
                #expect(["Operation not permitted", "Permission denied", "Read-only file system"].contains { result.stderr.contains($0) },
                        "the reason is missing: \(result.stderr)")
            }
        }
    }
}
