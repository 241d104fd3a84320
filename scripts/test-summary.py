#!/usr/bin/env python3
"""make test's own summary, from the logs of its `swift test` runs: how many tests ran, passed, failed and were
skipped (each skip with its reason), and which client stacks the live matrix ran.

    scripts/test-summary.py LOG...

Counts XCTest's `Test Case '…' passed|failed|skipped` lines and Swift Testing's `✔/✘/➜ Test "…" …` lines (a
parameterized test counts once). Lines the tests print themselves: `client matrix ran: STACK on N scenarios: VERSION`
(ClientMatrixTests) and `skipped part: TEST: REASON` (a check inside a test that this machine cannot make).

With TLS_FIXTURES_CI=1 (.ci/run) every skip is a failure: CONTRIBUTING.md says CI runs every test (everything a test
needs is installed there), so a test that skipped in CI is a check that silently stopped running. Exit 1 then, naming
each.
"""
import os
import re
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SWIFT_TESTING = re.compile(r'^\S+ Test (?P<name>".*?"|\S+)(?: with \d+ test cases?)? '
                           r'(?P<verb>passed|failed|skipped|was cancelled)'
                           r'(?: after [0-9.]+ seconds)?(?: with \d+ issues?)?(?:: (?P<reason>.*))?\.?$')
XCTEST = re.compile(r"^Test Case '(?P<name>[^']+)' (?P<verb>passed|failed|skipped)")


def summarize(paths):
    passed, failed, skipped, matrix, parts = [], [], [], [], []
    for path in paths:
        for raw in Path(path).read_text(errors="replace").splitlines():
            line = ANSI.sub("", raw).rstrip()
            if match := XCTEST.match(line):
                verdicts = {"passed": passed, "failed": failed, "skipped": skipped}
                verdicts[match["verb"]].append((match["name"], "XCTSkip"))
            elif (match := SWIFT_TESTING.match(line)) and not line.split(" ", 2)[1] == "Suite":
                name = match["name"].strip('"')
                reason = (match["reason"] or "").strip().strip('"')
                if match["verb"] == "passed":
                    passed.append((name, ""))
                elif match["verb"] == "failed":
                    failed.append((name, ""))
                else:
                    skipped.append((name, reason or match["verb"]))
            elif "client matrix ran: " in line:
                matrix.append(line.split("client matrix ran: ", 1)[1])
            elif "skipped part: " in line:
                parts.append(line.split("skipped part: ", 1)[1])
    return passed, failed, skipped, matrix, parts


def main():
    paths = [p for p in sys.argv[1:] if Path(p).exists()]
    passed, failed, skipped, matrix, parts = summarize(paths)
    strict = os.environ.get("TLS_FIXTURES_CI") == "1"
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
    if strict and (skipped or parts):
        count = len(skipped) + len(parts)
        print(f"TLS_FIXTURES_CI=1: CI runs every test (CONTRIBUTING.md, \"Building and testing\"), so {count} "
              f"skip{'s fail' if count > 1 else ' fails'} it: install what each names (scripts/ensure-deps.sh) "
              f"or fix the check",
              file=sys.stderr)
        return 1
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
