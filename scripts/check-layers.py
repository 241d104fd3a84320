#!/usr/bin/env python3
"""The library's layers are SwiftPM targets; this holds the rules the compiler cannot state on its own.

1. Every layer depends only on layers below it (the order is README's "Architecture"; Package.swift says the same).
2. Only the OpenSSL owners import COpenSSL (plus the bench and fuzz executables and the tests of the owners, which
   exercise OpenSSL directly on purpose).
3. The ATS model and the wire values are Foundation only: no NIO, no OpenSSL, anywhere in their graph or imports.

Reads `swift package describe --type json` (run here, or from --describe FILE) and the targets' sources.
Exit 0 and one line when the layers hold; exit 1 and one line per problem otherwise.
"""
import re
import sys

import package_graph

# Bottom to top. A layer may depend on any layer before it, never on one after it.
ORDER = ["TLSFixturesWire", "TLSFixturesATS", "TLSFixturesOpenSSL", "TLSFixturesPKI", "TLSFixturesScenario",
         "TLSFixturesServer", "TLSFixturesProbe", "TLSFixturesRunner", "TLSFixtures"]
FOUNDATION_ONLY = ["TLSFixturesWire", "TLSFixturesATS"]
COPENSSL_IMPORTERS = {"TLSFixturesOpenSSL", "tls-fixtures-bench", "TLSFixturesTests"}
SYSTEM_MODULES = {"Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Darwin", "Glibc", "Musl",
                  "CoreFoundation", "Security"}
IMPORT = re.compile(r"^\s*(?:@\S+\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                    re.MULTILINE)


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
        for dependency in targets[name].get("target_dependencies", []):
            if dependency in rank and rank[dependency] >= rank[name]:
                found.append(f"{name} depends on {dependency}, which is not below it")
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
            for product in target.get("product_dependencies", []):
                found.append(f"{name}: {current} depends on the package product {product}; it must be Foundation only")
            todo.extend(target.get("target_dependencies", []))
        for source in sorted((root / targets[name]["path"]).rglob("*.swift")):
            for module in IMPORT.findall(source.read_text(encoding="utf-8")):
                if module not in SYSTEM_MODULES and module not in seen:
                    found.append(f"{name}: {source.relative_to(root)} imports {module}; it must be Foundation only")
    for target in describe["targets"]:
        if target["name"] in COPENSSL_IMPORTERS or target.get("module_type") != "SwiftTarget":
            continue
        for source in sorted((root / target["path"]).rglob("*.swift")):
            if "COpenSSL" in IMPORT.findall(source.read_text(encoding="utf-8")):
                found.append(f"{source.relative_to(root)} imports COpenSSL: only TLSFixturesOpenSSL may; "
                             "give the OpenSSL owner a method instead")
    return sorted(set(found))


def main():
    return package_graph.run("check-layers", __doc__.splitlines()[0], problems, "every layer depends only on layers below it; only TLSFixturesOpenSSL imports COpenSSL; the ATS model and the wire values are Foundation only")


if __name__ == "__main__":
    sys.exit(main())
