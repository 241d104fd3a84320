#!/usr/bin/env python3
"""Writes the ATS plist fuzzer's seed corpus (Fuzz/Seeds/ats-plist): a few Info.plists and bare ATS dictionaries,
XML and binary, covering every key the parser knows plus the wrong types and key shapes it must warn about.
The files are committed; rerun this only to change them."""
import datetime, os, plistlib

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Seeds", "ats-plist")
pin = "r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E="

full_ats = {
    "NSAllowsArbitraryLoads": True,
    "NSAllowsArbitraryLoadsForMedia": False,
    "NSAllowsArbitraryLoadsInWebContent": True,
    "NSAllowsLocalNetworking": False,
    "NSExceptionDomains": {
        "legacy.example.com": {
            "NSIncludesSubdomains": True,
            "NSExceptionMinimumTLSVersion": "TLSv1.0",
            "NSExceptionRequiresForwardSecrecy": False,
            "NSExceptionAllowsInsecureHTTPLoads": True,
            "NSRequiresCertificateTransparency": True,
        },
        "10.0.0.0/8": {},
        "fd00::/8": {"NSExceptionAllowsInsecureHTTPLoads": True},
        "192.168.1.20": {"NSExceptionMinimumTLSVersion": "TLSv1.1"},
        "tls-v1-0.fixtures.test": {"NSThirdPartyExceptionMinimumTLSVersion": "TLSv1.0",
                                   "NSThirdPartyExceptionRequiresForwardSecrecy": False,
                                   "NSThirdPartyExceptionAllowsInsecureHTTPLoads": True},
    },
    "NSPinnedDomains": {
        "pinned.example.com": {
            "NSIncludesSubdomains": True,
            "NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": pin}],
            "NSPinnedCAIdentities": [{"SPKI-SHA256-BASE64": pin}, {"SPKI-SHA256-BASE64": "AAAA"}],
        },
    },
}

wrong_types = {
    "NSAllowsArbitraryLoads": "YES",
    "NSAllowsArbitraryLoadsInMedia": 1,
    "NSAllowsArbitraryLoadsForMedia": True,
    "nsallowslocalnetworking": True,
    "NSExceptionDomains": {
        "Example.COM": {"NSIncludesSubdomains": "true", "NSExceptionMinimumTLSVersion": "TLSv1.4"},
        "https://example.com": {"NSExceptionMinimumTLSVersion": 1.2},
        "example.com:8443": {"NSExceptionRequiresForwardSecrecy": datetime.datetime(2020, 1, 1)},
        "*.example.com": {"NSExceptionAllowsInsecureHTTPLoads": b"\x01"},
        "[::1]": [],
        "trailing.dot.": {"Unknown": {}},
        "": {},
        "10.0.0.0/33": {},
    },
    "NSPinnedDomains": {"Pinned.Example.com": {"NSPinnedLeafIdentities": []}, "x": "not a dict",
                        "y.test": {"NSPinnedCAIdentities": [{"SPKI-SHA256-BASE64": 3}, "string"]}},
}

def info(ats):
    return {"CFBundleIdentifier": "com.example.app", "CFBundleVersion": "1", "NSAppTransportSecurity": ats}

seeds = {
    "info-full.xml.plist": (info(full_ats), plistlib.FMT_XML),
    "info-full.binary.plist": (info(full_ats), plistlib.FMT_BINARY),
    "ats-bare.xml.plist": ({"NSAllowsArbitraryLoads": False, "NSExceptionDomains": {"localhost": {}}}, plistlib.FMT_XML),
    "info-wrong-types.xml.plist": (info(wrong_types), plistlib.FMT_XML),
    "info-wrong-types.binary.plist": (info(wrong_types), plistlib.FMT_BINARY),
    "info-ats-not-dict.binary.plist": (info(["NSAllowsArbitraryLoads"]), plistlib.FMT_BINARY),
}
os.makedirs(here, exist_ok=True)
for name, (value, fmt) in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        plistlib.dump(value, f, fmt=fmt, sort_keys=True)
with open(os.path.join(here, "ats-openstep.plist"), "w") as f:
    f.write('{ NSAllowsArbitraryLoads = YES; NSExceptionDomains = { "example.com" = { NSIncludesSubdomains = YES; }; }; }\n')
