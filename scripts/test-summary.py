#!/usr/bin/env python3
"""make test's own summary, from the logs of its `swift test` runs: how many tests ran, passed, failed and were
skipped (each skip with its reason), and which client stacks the live matrix ran.

    scripts/test-summary.py LOG...

Counts XCTest's `Test Case '…' passed|failed|skipped` lines and Swift Testing's `✔/✘/➜ Test "…" …` lines (a
parameterized test counts once; one that passed with known issues, `withKnownIssue`, is a pass). Lines the tests
print themselves: `client matrix ran: STACK on N scenarios: VERSION` (ClientMatrixTests) and `skipped part: TEST:
REASON` (a check inside a test that this machine cannot make).

It cannot pass on nothing: each LOG is one group of tests (one `swift test` run), and it fails (exit 1, a line on
standard error each) when a group's log is missing, when a group's run did not finish (no `Test run with N tests`
line: it crashed or was killed), when a line reports a test's result in a form it cannot read (the test would go
uncounted), when a group ran no test at all (its --filter matched nothing), when a parameterized test ran none of its
cases (its arguments came out empty), and, with TLS_FIXTURES_MATRIX_REQUIRED=1 (make test), when the client matrix
did not run.

With TLS_FIXTURES_CI=1 (.ci/run) every skip is a failure: CONTRIBUTING.md says CI runs every test (everything a test
needs is installed there), so a test that skipped in CI is a check that silently stopped running. Exit 1 then, naming
each.
"""
import os
import re
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SWIFT_TESTING = re.compile(r'^\S+ Test (?P<name>".*?"|\S+)(?: with (?P<cases>\d+) test cases?)? '
                           r'(?P<verb>passed|failed|skipped|was cancelled)'
                           r'(?: after [0-9.]+ seconds)?'
                           r'(?: with \d+ (?:known )?issues?(?: \(including \d+ known issues?\))?)?'
                           r'(?:: (?P<reason>.*))?\.?$')
# Any other line that reports a test's result: a format this script does not know would leave the test uncounted.
RESULT_LIKE = re.compile(r'^\S+ Test (?!run with )(?:".*?"|[^"\s]\S*)(?: with \d+ test cases?)? '
                         r'(?:passed|failed|skipped|was cancelled)\b')
XCTEST = re.compile(r"^Test Case '(?P<name>[^']+)' (?P<verb>passed|failed|skipped)")
# Swift Testing's last line, printed even when nothing ran ("✔ Test run with 0 tests in 0 suites passed after …").
RUN_END = re.compile(r"^\S+ Test run with (?P<count>\d+) tests?\b")


def summarize(paths):
    """What the logs say, and what is wrong with them: (passed, failed, skipped, matrix, parts, problems)."""
    passed, failed, skipped, matrix, parts, problems = [], [], [], [], [], []
    for path in paths:
        if not Path(path).is_file():
            problems.append(f"{path}: no such log: its group of tests did not run")
            continue
        ran, finished = 0, False
        for raw in Path(path).read_text(errors="replace").splitlines():
            line = ANSI.sub("", raw).rstrip()
            if match := XCTEST.match(line):
                verdicts = {"passed": passed, "failed": failed, "skipped": skipped}
                verdicts[match["verb"]].append((match["name"], "XCTSkip"))
                ran += 1
            elif match := RUN_END.match(line):
                finished = True
            elif (match := SWIFT_TESTING.match(line)) and not line.split(" ", 2)[1] == "Suite":
                name = match["name"].strip('"')
                reason = (match["reason"] or "").strip().strip('"')
                ran += 1
                if match["cases"] == "0":
                    problems.append(f"{path}: {name} ran none of its test cases (its arguments came out empty)")
                if match["verb"] == "passed":
                    passed.append((name, ""))
                elif match["verb"] == "failed":
                    failed.append((name, ""))
                else:
                    skipped.append((name, reason or match["verb"]))
            elif RESULT_LIKE.match(line):
                problems.append(f"{path}: a test's result this summary cannot read, so it is not counted: {line}")
            elif "client matrix ran: " in line:
                matrix.append(line.split("client matrix ran: ", 1)[1])
            elif "skipped part: " in line:
                parts.append(line.split("skipped part: ", 1)[1])
        if not finished:
            problems.append(f"{path}: the run did not finish (no `Test run with N tests` line): it crashed, or was "
                            "killed")
        elif ran == 0:
            problems.append(f"{path}: no test ran: the group's filter matched nothing")
    return passed, failed, skipped, matrix, parts, problems


def main():
    paths = sys.argv[1:]
    if not paths:
        print("usage: scripts/test-summary.py LOG...", file=sys.stderr)
        return 2
    passed, failed, skipped, matrix, parts, problems = summarize(paths)
    strict = os.environ.get("TLS_FIXTURES_CI") == "1"
    if os.environ.get("TLS_FIXTURES_MATRIX_REQUIRED") == "1" and not matrix:
        problems.append("TLS_FIXTURES_MATRIX_REQUIRED=1, but the client matrix did not run (no `client matrix ran:` "
                        "line in any log)")
    print(f"tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for name, _ in failed:
        print(f"  failed: {name}")
    for name, reason in skipped:
        print(f"  skipped: {name}: {reason}")
    for part in parts:
        print(f"  skipped part: {part}")
    if matrix:
        # "STACK on N scenarios: VERSION": the counts on one line, then each version (cut to a line's width).
        stacks = [line.split(": ", 1) for line in matrix]
        print(f"  client matrix ran {len(stacks)} stacks: " + ", ".join(s[0].replace(" scenarios", "") for s in stacks))
        for stack in stacks:
            print(f"    {stack[0].split(' on ')[0]}: {stack[1][:100] if len(stack) > 1 else '?'}")
    else:
        print("  client matrix: did not run")
    for problem in problems:
        print(f"test-summary: {problem}", file=sys.stderr)
    if strict and (skipped or parts):
        count = len(skipped) + len(parts)
        print(f"TLS_FIXTURES_CI=1: CI runs every test (CONTRIBUTING.md, \"Building and testing\"), so {count} "
              f"skip{'s fail' if count > 1 else ' fails'} it: install what each names (scripts/ensure-deps.sh) "
              f"or fix the check",
              file=sys.stderr)
        return 1
    return 1 if failed or problems or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
