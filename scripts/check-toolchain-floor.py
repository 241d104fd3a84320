#!/usr/bin/env python3
"""Holds the package to the toolchain floor the README states: no resolved dependency may need a newer Swift.

SwiftPM refuses a dependency whose manifest's `// swift-tools-version:` is newer than the toolchain, before a line
compiles ("package 'swift-log' is using Swift tools version 6.2.0 but the installed version is 6.1.0"). A `from:`
requirement lets a later release of a dependency raise that line at any time, and nothing here builds with the oldest
Swift we promise, so this check reads the lines instead:

  - the README's "The toolchain floor is **Swift X.Y**" (exactly one such statement: the one source of truth);
  - this package's own manifests (Package.swift, Matrix/, Fuzz/) must declare exactly X.Y, so SwiftPM itself prints
    the floor to anyone below it, naming this package rather than a dependency;
  - every resolved dependency (from `swift package show-dependencies --format json`, which resolves when needed) must
    have a manifest no newer than X.Y, choosing the manifest as SwiftPM X.Y would: `Package@swift-X.Y.0.swift`,
    `Package@swift-X.Y.swift`, `Package@swift-X.swift` first; else the newest version-specific manifest not above
    X.Y when its tools version is newer than Package.swift's, or when Package.swift's is above X.Y; else Package.swift
    (SwiftPM's ManifestLoader.findManifest in Sources/PackageLoading/ToolsVersionParser.swift, and its docs'
    "Version-specific Manifest Selection").

Usage: scripts/check-toolchain-floor.py [--readme FILE] [--manifest FILE]... [--dependencies-json FILE]...
  With no options: the repository's README.md, its three manifests, and the dependencies SwiftPM resolves for the
  package and for Matrix/ (into .build-matrix, where `make test` builds it).
Exit status: 0 within the floor, 1 findings (one line each, naming the dependency and the fix), 2 usage errors.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOR_STATEMENT = re.compile(r"toolchain floor is \*\*Swift (\d+)\.(\d+)\*\*")
# SwiftPM's grammar: `//`, optional spacing, the label (any case), optional spacing, the version up to `;` or spacing.
TOOLS_VERSION = re.compile(r"^\s*//\s*swift-tools-version:\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?(?=[;\s]|$)", re.I)
VERSION_SPECIFIC = re.compile(r"^Package@swift-(\d+)(?:\.(\d+))?(?:\.(\d+))?\.swift$")


class Finding(Exception):
    pass


def shown(version):
    major, minor, patch = version
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def floor_from_readme(path):
    with open(path, encoding="utf-8") as handle:
        found = {(int(a), int(b), 0) for a, b in FLOOR_STATEMENT.findall(handle.read())}
    if len(found) != 1:
        states = ", ".join(sorted(shown(v) for v in found)) or "none"
        raise Finding(f"{os.path.relpath(path, ROOT)}: states the toolchain floor {len(found)} ways ({states}); "
                      "say it once: \"The toolchain floor is **Swift X.Y**\"")
    return found.pop()


def tools_version(path):
    """The manifest's tools version as SwiftPM reads it: the first line that is one (6.0 reads later lines too)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = TOOLS_VERSION.match(line)
            if match:
                return tuple(int(part or 0) for part in match.groups())
    # No specification at all: SwiftPM assumes 3.1, which no current toolchain loads.
    return (3, 1, 0)


def chosen_manifest(package_dir, floor):
    """The manifest SwiftPM `floor` loads in package_dir."""
    names = os.listdir(package_dir)
    major, minor, patch = floor
    for key in (f"{major}.{minor}.{patch}", f"{major}.{minor}", f"{major}"):
        if f"Package@swift-{key}.swift" in names:
            return os.path.join(package_dir, f"Package@swift-{key}.swift")
    regular = os.path.join(package_dir, "Package.swift")
    specific = {}
    for name in names:
        match = VERSION_SPECIFIC.match(name)
        if match:
            specific[tuple(int(part or 0) for part in match.groups())] = name
    candidates = sorted((v for v in specific if v <= floor), reverse=True)
    if not candidates or not os.path.exists(regular):
        return os.path.join(package_dir, specific[candidates[0]]) if candidates else regular
    closest = os.path.join(package_dir, specific[candidates[0]])
    # The closest version-specific manifest wins when its tools version is newer than Package.swift's, or when
    # Package.swift's is too new for this toolchain.
    if tools_version(closest) > tools_version(regular) or tools_version(regular) > floor:
        return closest
    return regular


def resolved_dependencies(package_path, scratch_path):
    """(name, version, checkout) for every package SwiftPM resolves for package_path, depth first, each once."""
    command = ["swift", "package", "--package-path", package_path, "--scratch-path", scratch_path,
               "show-dependencies", "--format", "json"]
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise Finding("swift is not on PATH: the check asks SwiftPM which dependencies it resolves")
    if result.returncode != 0:
        raise Finding(f"`{' '.join(command)}` failed: {result.stderr.strip().splitlines()[-1:] or result.returncode}")
    return walk(json.loads(result.stdout[result.stdout.find("{"):]))


def walk(graph):
    seen, out = set(), []

    def visit(node):
        for child in node.get("dependencies", []):
            key = child.get("identity") or child.get("name")
            if key in seen:
                continue
            seen.add(key)
            out.append((child.get("name") or key, child.get("version", "?"), child.get("path", "")))
            visit(child)
    visit(graph)
    return out


def check_dependencies(dependencies, floor, origin):
    findings = []
    for name, version, checkout in dependencies:
        if not os.path.isdir(checkout):
            findings.append(f"{origin}: {name} {version}: no checkout at {checkout}; run `swift package resolve`")
            continue
        manifest = chosen_manifest(checkout, floor)
        needed = tools_version(manifest)
        if needed > floor:
            findings.append(
                f"{origin}: {name} {version} needs Swift {shown(needed)} ({os.path.basename(manifest)}: "
                f"swift-tools-version:{shown(needed)}), above the README's floor, Swift {shown(floor)}: pin {name} to "
                f"a release whose manifest Swift {shown(floor)} reads, or raise the floor in the README and in "
                "every manifest's first line")
    return findings


def main(arguments):
    if any(argument in ("-h", "--help") for argument in arguments):
        print(__doc__)
        return 0
    readme, manifests, graphs = os.path.join(ROOT, "README.md"), [], []
    it = iter(arguments)
    for argument in it:
        value = next(it, None)
        if value is None or argument not in ("--readme", "--manifest", "--dependencies-json"):
            print(f"check-toolchain-floor: unknown or incomplete option {argument} (see --help)", file=sys.stderr)
            return 2
        if argument == "--readme":
            readme = value
        elif argument == "--manifest":
            manifests.append(value)
        else:
            graphs.append(value)
    explicit = bool(manifests or graphs)
    if not explicit:
        manifests = [os.path.join(ROOT, p) for p in ("Package.swift", "Matrix/Package.swift", "Fuzz/Package.swift")]

    try:
        floor = floor_from_readme(readme)
        findings, checked = [], 0
        for manifest in manifests:
            declared = tools_version(manifest)
            if declared != floor:
                findings.append(f"{os.path.relpath(manifest, ROOT)}: swift-tools-version:{shown(declared)}, but the "
                                f"README's floor is Swift {shown(floor)}: make its first line "
                                f"`// swift-tools-version:{shown(floor)}` so SwiftPM states the floor itself")
        if explicit:
            resolved = []
            for graph in graphs:
                with open(graph, encoding="utf-8") as handle:
                    resolved.append((os.path.basename(graph), walk(json.load(handle))))
        else:
            resolved = [("Package.swift", resolved_dependencies(ROOT, os.path.join(ROOT, ".build"))),
                        ("Matrix/Package.swift", resolved_dependencies(os.path.join(ROOT, "Matrix"),
                                                                       os.path.join(ROOT, ".build-matrix")))]
        for origin, dependencies in resolved:
            checked += len(dependencies)
            findings += check_dependencies(dependencies, floor, origin)
    except Finding as finding:
        print(f"check-toolchain-floor: {finding}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"check-toolchain-floor: {error}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding)
    if findings:
        print(f"check-toolchain-floor: {len(findings)} finding(s): the README promises Swift {shown(floor)}",
              file=sys.stderr)
        return 1
    print(f"check-toolchain-floor: Swift {shown(floor)}: {len(manifests)} manifest(s) and {checked} resolved "
          "dependencies within it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
