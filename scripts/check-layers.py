#!/usr/bin/env python3
"""The library's layers are SwiftPM targets; this holds the rules the compiler cannot state on its own.

1. Every layer depends only on layers below it (the order is CONTRIBUTING.md's "Architecture"; Package.swift says the
   same).
2. Imports match declarations, in every Swift target (tests and executables too): a module a file imports from this
   package or a package dependency is a declared dependency of its target, and every declared dependency is imported
   somewhere in it. SwiftPM builds a transitive dependency before its importer, so an undeclared import compiles, by
   luck of the build order (TLSFixturesPKI imported Logging that way); and a dependency nothing imports overstates the
   graph. An executable a target depends on is built for it to run, never imported, so it is exempt.
3. Only the OpenSSL owners import COpenSSL (plus the bench and fuzz executables and the tests of the owners, which
   exercise OpenSSL directly on purpose).
4. The ATS and NSC models and the wire values are Foundation only: no NIO, no OpenSSL, anywhere in their graph or
   imports (FoundationXML, swift-corelibs-foundation's home of XMLParser on Linux, is Foundation).
5. The runner's fleet knows no HTTP: it does not depend on NIOHTTP1 (so, by rule 2, imports nothing of it); statuses
   are the front door's (TLSFixturesRunner).
6. CONTRIBUTING.md's "Architecture" table states each target's direct dependencies as Package.swift declares them (its
   last column: the package's targets by short name, then after a semicolon the dependencies' products).

Reads `swift package describe --type json` (run here, or from --describe FILE) and the targets' sources.
Exit 0 and one line when the layers hold; exit 1 and one line per problem otherwise.
"""
import re
import sys

import package_graph

# Bottom to top. A layer may depend on any layer before it, never on one after it.
ORDER = ["TLSFixturesWire", "TLSFixturesATS", "TLSFixturesNSC", "TLSFixturesOpenSSL", "TLSFixturesPKI",
         "TLSFixturesScenario", "TLSFixturesServer", "TLSFixturesProbe", "TLSFixturesFleet", "TLSFixturesRunner", "TLSFixtures"]
FOUNDATION_ONLY = ["TLSFixturesWire", "TLSFixturesATS", "TLSFixturesNSC"]
NO_HTTP = {"TLSFixturesFleet": "NIOHTTP1"}
COPENSSL_IMPORTERS = {"TLSFixturesOpenSSL", "tls-fixtures-bench", "TLSFixturesTests"}
# What the toolchain and the OS give every target without a declaration.
SYSTEM_MODULES = {"Foundation", "FoundationNetworking", "FoundationEssentials", "FoundationXML", "Dispatch", "Darwin",
                  "Glibc", "Musl", "CoreFoundation", "Security", "Network", "os", "XCTest", "Testing", "Synchronization", "_Concurrency",
                  "Swift"}
IMPORT = re.compile(r"^\s*(?:@\S+\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                    re.MULTILINE)
# Swift's multi-line string literals (raw or not): the tests keep Python scripts in them, whose `import socket` lines
# are not Swift imports.
MULTILINE_STRING = re.compile(r'#*"""[\s\S]*?"""#*')


def imports(path):
    """The modules a Swift file imports (outside its multi-line strings)."""
    return IMPORT.findall(MULTILINE_STRING.sub('""', path.read_text(encoding="utf-8")))


def declaration_problems(describe, root):
    targets = {t["name"]: t for t in describe["targets"]}
    found = []
    for target in describe["targets"]:
        if target.get("module_type", "SwiftTarget") != "SwiftTarget":
            continue
        name = target["name"]
        declared_targets = set(target.get("target_dependencies") or [])
        # Every product this package uses is named after its one module.
        declared = declared_targets | set(target.get("product_dependencies") or [])
        used = {}
        for source in sorted((root / target["path"]).rglob("*.swift")):
            for module in imports(source):
                used.setdefault(module, source.relative_to(root))
        for module, source in sorted(used.items()):
            if module in SYSTEM_MODULES or module == name or module in declared:
                continue
            what = "a target of this package" if module in targets else "a module of a package dependency"
            found.append(f"{name}: {source} imports {module} ({what}), which {name} does not declare; "
                         f"add it to {name}'s dependencies in Package.swift")
        for dependency in sorted(declared - used.keys()):
            if targets.get(dependency, {}).get("type") == "executable":
                continue   # built for this target to run, never imported
            found.append(f"{name}: declares {dependency} but no file of it imports it; drop it from Package.swift")
    return found


def architecture_problems(describe, root):
    """The Architecture table's "Depends on" column against the declared graph (skipped where there is no
    CONTRIBUTING.md, as in the tests' small packages; a CONTRIBUTING.md without the table is a finding)."""
    guide = root / "CONTRIBUTING.md"
    if not guide.exists():
        return []
    text = guide.read_text(encoding="utf-8")
    if "\n## Architecture\n" not in text:
        return ["CONTRIBUTING.md has no \"## Architecture\" section: the layer table moved; point check-layers.py at "
                "it"]
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    targets = {t["name"]: t for t in describe["targets"]}
    short = {name.removeprefix("TLSFixtures") or name: name for name in targets}
    found, rows = [], 0
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[1].startswith("`") or cells[1].strip("`") not in targets:
            continue
        rows += 1
        name, column = cells[1].strip("`"), cells[4]
        if column.startswith(("every layer", "system ")):
            continue
        own, _, products = column.partition(";")
        words = [word.strip() for word in own.split(",") if word.strip() not in ("", "Foundation")]
        stated = {short.get(word, word) for word in words} | {word.strip() for word in products.split(",") if word.strip()}
        target = targets[name]
        declared = set(target.get("target_dependencies") or []) | set(target.get("product_dependencies") or [])
        if stated != declared:
            missing, extra = sorted(declared - stated), sorted(stated - declared)
            found.append(f"CONTRIBUTING.md, Architecture: {name}'s dependencies are "
                         f"{', '.join(sorted(declared)) or 'none'}"
                         + (f" (the table lacks {', '.join(missing)})" if missing else "")
                         + (f" (the table adds {', '.join(extra)})" if extra else ""))
    if rows == 0:
        found.append("CONTRIBUTING.md, Architecture: the table names no target of the package")
    return found


def problems(describe, root):
    targets = {t["name"]: t for t in describe["targets"]}
    found = []
    for name in ORDER:
        if name not in targets:
            found.append(f"no target {name} in the package")
    if found:
        return found
    rank = {name: i for i, name in enumerate(ORDER)}
    for name in ORDER:
        for dependency in targets[name].get("target_dependencies") or []:
            if dependency in rank and rank[dependency] >= rank[name]:
                found.append(f"{name} depends on {dependency}, which is not below it")
    found += declaration_problems(describe, root)
    found += architecture_problems(describe, root)
    for name, module in NO_HTTP.items():
        target = targets[name]
        if module in (target.get("product_dependencies") or []) + (target.get("target_dependencies") or []):
            found.append(f"{name} depends on {module}: the fleet knows no HTTP; statuses belong to the front door "
                         "(TLSFixturesRunner)")
    for name in FOUNDATION_ONLY:
        seen, todo = set(), [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            target = targets.get(current, {})
            if target.get("module_type", "SwiftTarget") != "SwiftTarget":
                found.append(f"{name}: reaches {current}, a C or system library (OpenSSL)")
            for product in target.get("product_dependencies") or []:
                found.append(f"{name}: {current} depends on the package product {product}; it must be Foundation only")
            todo.extend(target.get("target_dependencies") or [])
        for source in sorted((root / targets[name]["path"]).rglob("*.swift")):
            for module in imports(source):
                if module not in SYSTEM_MODULES and module not in seen:
                    found.append(f"{name}: {source.relative_to(root)} imports {module}; it must be Foundation only")
    for target in describe["targets"]:
        if target["name"] in COPENSSL_IMPORTERS or target.get("module_type") != "SwiftTarget":
            continue
        for source in sorted((root / target["path"]).rglob("*.swift")):
            if "COpenSSL" in imports(source):
                found.append(f"{source.relative_to(root)} imports COpenSSL: only TLSFixturesOpenSSL may; "
                             "give the OpenSSL owner a method instead")
    return sorted(set(found))


def main():
    return package_graph.run("check-layers", __doc__.splitlines()[0], problems,
                             "every layer depends only on layers below it; every target imports exactly what it "
                             "declares; only TLSFixturesOpenSSL imports COpenSSL; the ATS and NSC models and the wire "
                             "values are Foundation only; the fleet knows no HTTP; CONTRIBUTING.md's Architecture "
                             "states the graph")


if __name__ == "__main__":
    sys.exit(main())
