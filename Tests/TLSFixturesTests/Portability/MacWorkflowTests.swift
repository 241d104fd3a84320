import Foundation
import Testing

/// .github/workflows/macos.yml runs nowhere before GitHub runs it, so what can be checked here is: that actionlint (in
/// `make lint`) accepts it and catches a broken copy, that a failing command piped into `tee` fails its step, that
/// docs/ios.md's Actions recipe and Xcode pre-action are what it runs, and that the steps issue 39 asked for are there.
@Suite("macOS: the GitHub Actions workflow", .ownThreads)
struct MacWorkflowTests {
    static let root = TestEnvironment.packageRoot
    static let workflowURL = root.appendingPathComponent(".github/workflows/macos.yml")

    /// The workflow's steps, by name: the lines of each `run:` block, unindented.
    static func runBlocks(_ yaml: String, indent: Int) -> [String: [String]] {
        var blocks: [String: [String]] = [:]
        var name: String?
        var collecting = false
        for line in yaml.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("- name: ") {
                name = String(trimmed.dropFirst("- name: ".count))
                collecting = false
            } else if trimmed == "run: |" {
                collecting = true
            } else if collecting, let name {
                let depth = line.prefix { $0 == " " }.count
                if trimmed.isEmpty || depth < indent { collecting = false; continue }
                blocks[name, default: []].append(trimmed)
            }
        }
        return blocks
    }

    @Test("docs/ios.md's GitHub Actions recipe is what the workflow runs, step for step")
    func documentedRecipe() throws {
        let section = try #require(try Documentation.section("## 6. On GitHub Actions", in: "docs/ios.md"))
        let fenced = section.components(separatedBy: "```yaml\n").dropFirst().first
        let yaml = try #require(fenced?.components(separatedBy: "```").first)
        let recipe = Self.runBlocks(yaml, indent: 4)
        let workflow = Self.runBlocks(try String(contentsOf: Self.workflowURL, encoding: .utf8), indent: 10)
        #expect(recipe.count == 3, "the recipe's shell steps: \(recipe.keys.sorted())")
        // The install step differs on purpose: the recipe clones the repository, the workflow installs its checkout.
        #expect(workflow["Install tls-fixtures"]?.contains { $0.hasPrefix("make install PREFIX=") } == true)
        for (name, lines) in recipe where name != "Install tls-fixtures" {
            #expect(workflow[name] == lines,
                    "\(name): docs/ios.md says \(lines), the workflow runs \(workflow[name] ?? [])")
        }
        // Both create the simulator they use: no device name that an image may not carry.
        #expect(recipe.values.joined().contains { $0.contains("xcrun simctl create") })
        #expect(section.contains("runs-on: macos-26"))
    }

    /// The pre-action as Xcode runs it: the workflow writes docs/ios.md's block to a file, word for word.
    @Test("docs/ios.md's Xcode pre-action is what the workflow runs with launchd's PATH, word for word")
    func preAction() throws {
        let page = try Documentation.page("docs/ios.md")
        let documented = try #require(Documentation.codeBlocks(in: page, page: "docs/ios.md")
            .first { $0.body.hasPrefix("# Xcode scheme ▸ Test ▸ Pre-actions") }).body
        let step = try #require(Self.runBlocks(try String(contentsOf: Self.workflowURL, encoding: .utf8),
                                               indent: 10)["The Xcode pre-action"])
        let start = try #require(step.firstIndex(of: "cat > pre-action.sh <<'PRE_ACTION'"))
        let end = try #require(step.firstIndex(of: "PRE_ACTION"))
        let trimmed = documented.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(Array(step[(start + 1)..<end]) == trimmed, "the workflow's pre-action differs from docs/ios.md's")
        let launchd = "env -i HOME=\"$HOME\" PATH=/usr/bin:/bin:/usr/sbin:/sbin /bin/sh pre-action.sh"
        #expect(step.contains { $0.hasPrefix(launchd) }, "the pre-action does not run with launchd's PATH")
    }

    /// Issue 39's proofs: the floor's Xcode builds it, ld's warnings are read, an iOS client builds without OpenSSL,
    /// Xcode runs with the Dock's PATH, and make test installs its own actionlint (none is brew-installed).
    @Test("the workflow builds with Xcode 26.0 too, gates ld's warnings, and builds the client without OpenSSL")
    func issue39Steps() throws {
        let yaml = try String(contentsOf: Self.workflowURL, encoding: .utf8)
        #expect(yaml.contains("\n  floor:\n")
                    && yaml.contains("DEVELOPER_DIR: /Applications/Xcode_26.0.app/Contents/Developer"))
        let gate = "python3 scripts/check-build-log.py --expect-openssl-link-warning build.log"
        #expect(yaml.components(separatedBy: gate).count - 1 == 2, "both builds (default Xcode and 26.0) read their log")
        #expect(yaml.contains("\n  ios-client-without-openssl:\n"))
        #expect(yaml.contains("- name: Xcode with the Dock's PATH"))
        let brew = try #require(yaml.components(separatedBy: "\n")
            .first { $0.contains("brew install openssl@3 pkg-config curl") })
        #expect(!brew.contains("actionlint"), "make test must install its own actionlint, as on a user's Mac: \(brew)")
    }

    @Test("every step runs under bash -eo pipefail, the runner has Xcode 26's Swift, and make test's gnutls is installed")
    func failFastAndDependencies() throws {
        let yaml = try String(contentsOf: Self.workflowURL, encoding: .utf8)
        // An explicit `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`; the unspecified default lacks pipefail.
        #expect(yaml.contains("defaults:\n  run:\n    shell: bash\n"), "no workflow-wide `shell: bash`")
        #expect(!yaml.contains("shell: sh"))
        #expect(yaml.contains("runs-on: macos-26\n"))
        let brew = try #require(yaml.components(separatedBy: "\n").first { $0.contains("brew install openssl@3") })
        for package in ["pkg-config", "curl", "python3", "gnutls"] {
            #expect(brew.split(separator: " ").contains(Substring(package)), "\(package) missing from: \(brew)")
        }
    }

    static let actionlint: String? = {
        let venv = root.appendingPathComponent(".build-lint/venv/bin/actionlint").path
        if FileManager.default.isExecutableFile(atPath: venv) { return venv }
        let found = try? Subprocess.run(["sh", "-c", "command -v actionlint"])
        return found?.status == 0 ? found?.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }()

    @Test("actionlint accepts the workflow and refuses a broken copy of it, naming the line",
          .enabled(if: actionlint != nil, "actionlint is not installed: `make lint` installs it into .build-lint/venv"))
    func actionlintJudges() throws {
        let script = Self.root.appendingPathComponent("scripts/actionlint.sh").path
        let clean = try Subprocess.run([script])
        #expect(clean.status == 0, "\(clean.combined)")
        let yaml = try String(contentsOf: Self.workflowURL, encoding: .utf8)
        let broken = TestEnvironment.temporaryDirectory("workflow").appendingPathComponent("macos.yml")
        try yaml.replacingOccurrences(of: "id=$SIMULATOR", with: "id=${{ env.SIMULATOR }")
            .write(to: broken, atomically: true, encoding: .utf8)
        let refused = try Subprocess.run([script, broken.path])
        #expect(refused.status != 0 && refused.stdout.contains("macos.yml:"), "\(refused.combined)")
    }
}
