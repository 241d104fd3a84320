#!/usr/bin/env python3
"""Reads the log of a `swift build` on a Mac (the macOS workflow's) and fails on what must not pass unseen:

- a compiler warning in this package's own code (a file under Sources/ or Tests/, not under .build/): the house
  builds without warnings, and SwiftPM builds the dependencies with theirs suppressed;
- an `ld` warning, but one: linking for the package's deployment target (macOS 14) against Homebrew's libssl or
  libcrypto, which Homebrew builds for the macOS the bottle is made for (docs/macos.md, "The deployment target, and
  ld's warning"). Any other, such as a system library or another dylib built for a newer macOS, fails;
- with --expect-openssl-link-warning, the absence of that one: docs/macos.md says every such link prints it.

Usage: scripts/check-build-log.py [--expect-openssl-link-warning] LOG
Exit 0 and a summary line; 1 and the lines that failed it; 2 for a usage error.
"""
import re
import sys

OWN_WARNING = re.compile(r"^/.*/(Sources|Tests)/.*: warning:")
LINKER_WARNING = re.compile(r"^ld: warning:")
# ld-prime (Xcode 15 and later) and ld64 wordings of the same warning, for Homebrew's OpenSSL (any prefix, its opt
# link or its Cellar).
OPENSSL_DYLIB = r"'?[^' ]*/(?:opt/openssl@3|Cellar/openssl@3/[^/' ]+)/lib/lib(?:ssl|crypto)\.3\.dylib'?"
OPENSSL_NEWER = re.compile(
    r"^ld: warning: building for macOS-[\d.]+, but linking with dylib " + OPENSSL_DYLIB
    + r" which was built for newer version [\d.]+$"
    r"|^ld: warning: dylib \(" + OPENSSL_DYLIB + r"\) was built for newer macOS version \([\d.]+\) than being linked"
    r" \([\d.]+\)$")


def check(lines, expect_openssl):
    """The problems in the log's lines, and how many of the expected warning it has."""
    problems, expected = [], 0
    for line in lines:
        line = line.rstrip("\n")
        if OWN_WARNING.match(line) and "/.build/" not in line:
            problems.append(f"a warning in our code: {line}")
        elif LINKER_WARNING.match(line):
            if OPENSSL_NEWER.match(line):
                expected += 1
            else:
                problems.append(f"a linker warning docs/macos.md does not expect: {line}")
    if expect_openssl and expected == 0:
        problems.append("no `ld: warning` about Homebrew's OpenSSL being built for a newer macOS: docs/macos.md says "
                        "every link for macOS 14 prints one; if that changed, update it (and this check)")
    return problems, expected


def main(arguments):
    expect = "--expect-openssl-link-warning" in arguments
    paths = [a for a in arguments if a != "--expect-openssl-link-warning"]
    if len(paths) != 1 or paths[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(paths[0], encoding="utf-8", errors="replace") as log:
        problems, expected = check(log, expect)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-build-log: {len(problems)} problem(s) in {paths[0]}", file=sys.stderr)
        return 1
    print(f"check-build-log: no warning in our code; {expected} expected ld warning(s) about Homebrew's OpenSSL "
          "(docs/macos.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
