#!/usr/bin/env python3
"""TLSFixturesClient must link into an iOS test target, which has no OpenSSL: its dependency graph holds Foundation
and our Foundation-only modules, nothing else (no COpenSSL, no TLSFixtures, no package such as swift-nio).

Reads `swift package describe --type json` (run here, or from --describe FILE) and follows every target dependency of
the client products; then reads the sources of those targets, so an `import NIOCore` is caught by name too.
Exit 0 and one line when the graph is clean; exit 1 and one line per problem otherwise.
"""
import re
import sys

import package_graph

PRODUCTS = ["TLSFixturesClient", "TLSFixturesClientXCTest"]
# What the OS gives an iOS or macOS test target (FoundationNetworking and Glibc on Linux), and XCTest for the glue.
SYSTEM_MODULES = {"Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Network", "Security",
                  "XCTest", "Testing", "Darwin", "Glibc", "Musl", "os", "CoreFoundation"}
IMPORT = re.compile(r"^\s*(?:@\S+\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                    re.MULTILINE)


def problems(describe, root):
    targets = {t["name"]: t for t in describe["targets"]}
    products = {p["name"]: p for p in describe["products"]}
    found = []
    for product in PRODUCTS:
        before = len(found)
        if product not in products:
            found.append(f"no product {product} in the package")
            continue
        seen, todo = set(), list(products[product]["targets"])
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            target = targets.get(name)
            if target is None:
                found.append(f"{product}: depends on {name}, which is not a target of this package")
                continue
            if target.get("module_type") != "SwiftTarget":
                found.append(f"{product}: depends on {name} ({target.get('module_type')}): a C or system library, e.g. OpenSSL")
            for dependency in target.get("product_dependencies", []):
                found.append(f"{product}: {name} depends on the package product {dependency}: the client is Foundation only")
            todo.extend(target.get("target_dependencies", []))
        if "TLSFixtures" in seen or "COpenSSL" in seen:
            found.append(f"{product}: reaches {'COpenSSL' if 'COpenSSL' in seen else 'TLSFixtures'}, which links OpenSSL and NIO")
        if len(found) > before:
            continue   # the graph is wrong already; its sources' imports would only repeat it
        for name in sorted(seen & targets.keys()):
            directory = root / targets[name]["path"]
            for source in sorted(directory.rglob("*.swift")):
                for module in IMPORT.findall(source.read_text(encoding="utf-8")):
                    if module not in SYSTEM_MODULES and module not in seen:
                        found.append(f"{product}: {source.relative_to(root)} imports {module}, outside Foundation and its own targets")
    return sorted(set(found))


def main():
    return package_graph.run("check-client-graph", __doc__.splitlines()[0], problems, f"{', '.join(PRODUCTS)} link Foundation only (no OpenSSL, no NIO)")


if __name__ == "__main__":
    sys.exit(main())
