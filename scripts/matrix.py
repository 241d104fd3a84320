#!/usr/bin/env python3
"""The client matrix: every served scenario x every TLS client stack, with the built-in CA trusted.

`make matrix` runs it in full and writes docs/CLIENTS.md and docs/clients.json; `make test` runs every stack through
Tests/TLSFixturesTests/Matrix/ClientMatrixTests.swift with a --plan (each stack on the controls, the refusals and the
scenarios where it differs from OpenSSL), which holds the scenario files' `expect.clients` to what the clients really
do.

How it works: a fresh store and CA (`tls-fixtures ca init`), then `tls-fixtures serve --json` with the built-in
catalog plus Matrix/Scenarios (the `impersonation` leaf for www.apple.com). Each client is started once with the
whole target list (one ID<TAB>HOST<TAB>PORT line per target) and prints one JSON line per target: accepted (the
handshake, certificate verification for HOST, and an HTTP 200) or its own error text. Small C tools (openssl, curl,
gnutls-cli, tstclnt, chromium) are run once per target instead, a few at a time. Every DNS name is connected at
127.0.0.1 through each client's own override (curl --resolve, Go's dialer, Node's lookup, ...) or, for URLSession,
which has none, a private mount namespace whose /etc/hosts and CA bundle are the matrix's (see run_urlsession).

Beside each verdict, what the server saw: each client runs against a `serve` of its own (the same store and CA, its
own block of ports, --port-base once per client running at once) and meets each fixture once per round, so the records
a fixture kept since the round began (GET /api/scenarios/NAME/connections) are that client's for that row; a refusal
the fixture never saw is flagged (see What the server saw).

A client that is not installed is reported missing with the reason, never counted as a pass or a failure.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import queue
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "Matrix"
# Not run: plain HTTP has no TLS to judge, and client-cert-required judges the client's certificate, not the server's.
OUT_OF_SCOPE = {
    "http": "plain HTTP: no TLS to judge",
    "client-cert-required": "judges the client's certificate, which the matrix clients do not present",
}


def primary_host(entry):
    """The host a scenario's own row connects as (its `expect.clients` describe that row): localhost, but for the two
    scenarios whose point is a name — `impersonation`'s www.apple.com, and `long-subdomain`'s 63-character label, the
    first of its file's extraHosts."""
    if entry["name"] == "impersonation":
        return "www.apple.com"
    if entry["name"] == "long-subdomain":
        return entry["certificate"]["extraHosts"][0]
    return "localhost"

# More rows where the name matters: the qualified name under the CA's bare `test` constraint, and the address rows of
# the only scenario whose leaf names addresses.
EXTRA_ROWS = [("ats-compliant", "ats-compliant.fixtures.test"), ("ip-san", "127.0.0.1"), ("ip-san", "::1")]
REQUEST = "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
TIMEOUT = 20


def is_address(host):
    return ":" in host or re.fullmatch(r"[0-9.]+", host) is not None


def run(arguments, **kwargs):
    kwargs.setdefault("timeout", TIMEOUT)
    try:
        return subprocess.run(arguments, capture_output=True, text=True, errors="replace", **kwargs)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(arguments, 124, expired.stdout or "", (expired.stderr or "") + "\ntimed out")


def one_line(text):
    return " ".join(str(text).split())


# --- Clients --------------------------------------------------------------------------------------------------------
# Each: available(ctx) -> (version or None, reason when missing); run(ctx, targets) -> {id: (accepted, detail)};
# short(detail) -> the few words a table cell shows.


class Context:
    def __init__(self, work, ca_file, swift_products, python, cli=None, pinned=None):
        self.work = work
        self.ca_file = ca_file
        self.swift_products = swift_products
        self.python = python
        self.request_file = work / "request.txt"
        self.cli = cli
        # Scenario name -> (pins, extra trusted roots) for the clients that pin (OkHttp's CertificatePinner).
        self.pinned = pinned or {}


def targets_file(ctx, name, targets):
    path = ctx.work / f"targets-{name}.txt"
    path.write_text("".join(f"{t['id']}\t{t['host']}\t{t['port']}\n" for t in targets))
    return path


def batch_results(completed, targets):
    """One JSON line per target; a target the client never answered is a harness failure, not a verdict."""
    results = {}
    for line in completed.stdout.splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        accepted = answer["accepted"]
        results[answer["id"]] = (None if accepted is None else bool(accepted), one_line(answer["detail"]))
    for target in targets:
        if target["id"] not in results:
            results[target["id"]] = (None, one_line(f"no answer (exit {completed.returncode}): {completed.stderr[-300:]}"))
    return results


def per_target(function, targets, workers=4):
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip([t["id"] for t in targets], pool.map(function, targets)))


def first_match(patterns, text, default=None):
    for pattern in patterns:
        match = re.search(pattern, text, re.M)
        if match:
            return match.group(1).strip()
    return default


# OpenSSL: s_client as a strict client (verify errors end the handshake), with the system's default security level.
def openssl_version(ctx):
    completed = run(["openssl", "version"])
    return (completed.stdout.strip(), None) if completed.returncode == 0 else (None, "openssl not installed")


def openssl_one(ctx, target):
    host = target["host"]
    arguments = ["openssl", "s_client", "-connect", f"[{host}]:{target['port']}" if ":" in host else
                 f"{host if is_address(host) else '127.0.0.1'}:{target['port']}",
                 "-CAfile", ctx.ca_file, "-verify_return_error", "-ign_eof"]
    arguments += ["-verify_ip", host] if is_address(host) else ["-servername", host, "-verify_hostname", host]
    with open(ctx.request_file) as stdin:
        completed = run(arguments, stdin=stdin)
    output = completed.stdout + completed.stderr
    if completed.returncode == 0 and re.search(r"^HTTP/1\.1 200", output, re.M):
        return True, "HTTP 200, " + (first_match([r"Protocol\s*:\s*(\S+)", r"New, (TLSv1\.3)"], output, "?"))
    return False, one_line(first_match([r"^verify error:num=\d+:(.*)$", r"^(\S*error:[0-9A-F]{8}:.*)$"], output, output[-300:]))


def openssl_short(detail):
    return first_match([r"error:[0-9A-F]+:SSL routines:[^:]*:([^:]+)"], detail, detail)


# curl: --cacert replaces the system bundle; --resolve sends the name to 127.0.0.1.
def curl_version(ctx):
    completed = run(["curl", "--version"])
    return (completed.stdout.splitlines()[0], None) if completed.returncode == 0 else (None, "curl not installed")


def curl_one(ctx, target):
    host, port = target["host"], target["port"]
    url_host = f"[{host}]" if ":" in host else host
    arguments = ["curl", "-sS", "--max-time", "15", "--cacert", ctx.ca_file, "-o", "/dev/null", "-w", "%{http_code}"]
    if not is_address(host):
        arguments += ["--resolve", f"{host}:{port}:127.0.0.1"]
    completed = run(arguments + [f"https://{url_host}:{port}/"])
    if completed.returncode == 0:
        return completed.stdout.strip() == "200", f"HTTP {completed.stdout.strip()}"
    return False, one_line(completed.stderr)


def curl_short(detail):
    # curl appends advice ("More details here: …", "curl failed to verify the legitimacy of the server …").
    detail = re.split(r" More details here: | curl failed to verify ", detail)[0]
    return first_match([r"SSL certificate problem: (.*)", r"curl: \(\d+\) SSL: (.*)", r"SSL routines::(.*)",
                        r"curl: \(\d+\) (.*)"], detail, detail)


# GnuTLS: gnutls-cli's defaults (its priority string NORMAL), the CA as the only trust file.
def gnutls_version(ctx):
    if not shutil.which("gnutls-cli"):
        return None, "gnutls-cli not installed (apt-get install gnutls-bin)"
    return run(["gnutls-cli", "--version"]).stdout.splitlines()[0], None


def gnutls_one(ctx, target):
    host = target["host"]
    arguments = ["gnutls-cli", "--x509cafile", ctx.ca_file, "-p", str(target["port"]), "--verify-hostname", host]
    if not is_address(host):
        arguments += ["--sni-hostname", host]
    arguments.append(host if is_address(host) else "127.0.0.1")
    with open(ctx.request_file) as stdin:
        completed = run(arguments, stdin=stdin)
    output = completed.stdout + completed.stderr
    if re.search(r"^HTTP/1\.1 200", output, re.M) and "certificate is trusted" in output:
        return True, "HTTP 200, " + first_match([r"Description: \((TLS[^-)]*)"], output, "?")
    return False, one_line(first_match([r"Status: (The certificate is NOT trusted\..*)$", r"\*\*\* (Received alert.*)$",
                                        r"\*\*\* (Fatal error.*)$", r"\*\*\* (.*failed.*)$"], output, output[-300:]))


def gnutls_short(detail):
    return re.sub(r"^The certificate is NOT trusted\. ", "NOT trusted: ", detail)


# NSS: tstclnt with a fresh NSS database that trusts the CA; -a sets both SNI and the name checked.
def nss_version(ctx):
    if not shutil.which("tstclnt") or not shutil.which("certutil"):
        return None, "tstclnt/certutil not installed (apt-get install libnss3-tools)"
    database = ctx.work / "nssdb"
    database.mkdir(exist_ok=True)
    run(["certutil", "-d", f"sql:{database}", "-N", "--empty-password"])
    added = run(["certutil", "-d", f"sql:{database}", "-A", "-t", "C,,", "-n", "tls-fixtures", "-i", ctx.ca_file])
    if added.returncode != 0:
        return None, one_line("certutil could not add the CA: " + added.stderr)
    version = run(["dpkg-query", "-W", "-f", "${Version}", "libnss3"]).stdout.strip()
    return f"NSS {version or '(version unknown)'}", None


def nss_one(ctx, target):
    host = target["host"]
    arguments = ["tstclnt", "-d", f"sql:{ctx.work / 'nssdb'}", "-p", str(target["port"])]
    if is_address(host):
        arguments += ["-h", host, "-6" if ":" in host else "-4"]
    else:
        arguments += ["-h", "127.0.0.1", "-a", host, "-4"]
    with open(ctx.request_file) as stdin:
        completed = run(arguments, stdin=stdin)
    output = completed.stdout + completed.stderr
    if re.search(r"^HTTP/1\.1 200", output, re.M):
        return True, "HTTP 200"
    return False, one_line(first_match([r"^tstclnt: (.*)$"], output, output[-300:]))


def nss_short(detail):
    return first_match([r"\b((?:SEC|SSL)_ERROR_[A-Z0-9_]+)"], detail, detail)


# Chromium: headless, its own profile whose NSS database trusts the CA (Chrome's verifier reads user trust from it),
# every name mapped to 127.0.0.1. Accepted when the fixture's JSON is the page; otherwise the net error code shown.
def chromium_binary():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_version(ctx):
    binary = chromium_binary()
    if not binary:
        return None, "chromium not installed (apt-get install chromium)"
    home = ctx.work / "chromium-home"
    database = home / ".pki/nssdb"
    database.mkdir(parents=True, exist_ok=True)
    run(["certutil", "-d", f"sql:{database}", "-N", "--empty-password"])
    added = run(["certutil", "-d", f"sql:{database}", "-A", "-t", "C,,", "-n", "tls-fixtures", "-i", ctx.ca_file])
    if added.returncode != 0:
        return None, one_line("certutil could not add the CA: " + added.stderr)
    return run([binary, "--version"]).stdout.strip(), None


def chromium_one(ctx, target):
    host = target["host"]
    url_host = f"[{host}]" if ":" in host else host
    home = ctx.work / "chromium-home"
    profile = ctx.work / f"chromium-profile-{target['id']}"
    arguments = [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={profile}", "--host-resolver-rules=MAP * 127.0.0.1, EXCLUDE 127.0.0.1, EXCLUDE [::1]",
                 "--virtual-time-budget=10000", "--dump-dom", f"https://{url_host}:{target['port']}/"]
    completed = run(arguments, env={**os.environ, "HOME": str(home)}, timeout=45)
    shutil.rmtree(profile, ignore_errors=True)
    if f'"scenario":"{target["scenario"]}"' in completed.stdout:
        return True, "page loaded"
    # Headless Chromium logs "Page load failed: net::ERR_CERT_DATE_INVALID" when the navigation itself fails.
    code = first_match([r"Page load failed: (net::ERR_[A-Z0-9_]+)", r"\b(net::ERR_[A-Z0-9_]+)", r"(NET::ERR_[A-Z0-9_]+)"],
                       completed.stderr + completed.stdout)
    return False, code or one_line("no page: " + (completed.stderr or completed.stdout)[-300:])


# The batch clients: one process for every target.
def swift_product(ctx, name):
    path = Path(ctx.swift_products) / name
    return path if path.exists() else None


def swift_version(name):
    def version(ctx):
        if not swift_product(ctx, name):
            return None, f"not built: swift build --package-path Matrix --scratch-path .build-matrix --product {name}"
        packages = {"matrix-nio-ssl": "swift-nio-ssl 2.37.6 (BoringSSL)",
                    "matrix-ahc": "AsyncHTTPClient 1.37.0 on swift-nio-ssl 2.37.6",
                    "matrix-urlsession": "swift-corelibs-foundation " + swift_toolchain()}
        if name == "matrix-urlsession":
            ok, reason = namespace_available()
            if not ok:
                return None, reason
        return packages[name], None
    return version


def swift_toolchain():
    completed = run(["swift", "--version"])
    return first_match([r"Swift version (\S+)"], completed.stdout + completed.stderr, "?")


def run_swift(name):
    def go(ctx, targets):
        return batch_results(run([str(swift_product(ctx, name)), ctx.ca_file, str(targets_file(ctx, name, targets))],
                                 timeout=30 + 20 * len(targets)), targets)
    return go


def boringssl_short(detail):
    return first_match([r"OPENSSL_internal:([A-Z0-9_]+)", r"(failedToValidateHostname)", r"(unsupported name constraint type)",
                        r"^(\w+)\("], detail, detail)


# URLSession on Linux trusts only libcurl's compiled-in CA bundle (swift-corelibs-foundation reads the
# URLSessionCertificateAuthorityInfoFile variable on Android only) and resolves names through the system. So it runs in
# a private mount namespace where that bundle is the built-in CA and /etc/hosts maps the matrix's names to loopback:
# the machine itself is never changed.
CURL_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def namespace_available():
    if platform.system() != "Linux" or not shutil.which("unshare"):
        return False, "needs Linux and unshare (util-linux) for a private mount namespace"
    if not Path(CURL_CA_BUNDLE).exists():
        return False, f"libcurl's CA bundle {CURL_CA_BUNDLE} is missing (apt-get install ca-certificates)"
    probe = run(namespace_prefix() + ["true"])
    if probe.returncode != 0:
        return False, one_line("cannot make a private mount namespace: " + probe.stderr)
    return True, None


def namespace_prefix():
    return ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])


def run_urlsession(ctx, targets):
    hosts = ctx.work / "hosts"
    names = sorted({t["host"] for t in targets if not is_address(t["host"])})
    hosts.write_text("127.0.0.1\t" + " ".join(names) + "\n::1\tlocalhost\n")
    script = (f'mount --bind "$1" {CURL_CA_BUNDLE} && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"')
    program = [str(swift_product(ctx, "matrix-urlsession")), ctx.ca_file, str(targets_file(ctx, "urlsession", targets))]
    completed = run(namespace_prefix() + ["sh", "-c", script, "sh", ctx.ca_file, str(hosts)] + program,
                    timeout=30 + 20 * len(targets))
    return batch_results(completed, targets)


def urlsession_short(detail):
    # On Linux, URLSession reports libcurl's own text under NSURLErrorDomain (often code -1), or only a code.
    if "The operation could not be completed" in detail:
        return first_match([r"^(NSURLErrorDomain -?\d+)"], detail, detail)
    return curl_short(re.sub(r"^NSURLErrorDomain -?\d+: ", "", detail))


def tool_version(command, pattern, missing):
    def version(ctx):
        if not shutil.which(command[0]):
            return None, missing
        completed = run(command)
        return first_match([pattern], completed.stdout + completed.stderr, "?"), None
    return version


def run_java(ctx, targets):
    return batch_results(run(["java", str(MATRIX / "Clients/MatrixClient.java"), ctx.ca_file,
                              str(targets_file(ctx, "java", targets))], timeout=60 + 20 * len(targets)), targets)


# OkHttp: Debian's libokhttp-java on the JDK, compiled at run time like the Java column, with OkHttp's jars on the
# class path. The pinning scenarios get a CertificatePinner (the published pinned key and the backup) and their
# trustedRoots (pin-mitm's interception root), so there the pin, not the trust, decides (Matrix/Clients/OkHttpMatrixClient.java).
OKHTTP_JARS = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]


def okhttp_version(ctx):
    missing = [jar for jar in OKHTTP_JARS if not Path(jar).exists()]
    if missing or not shutil.which("java"):
        return None, "OkHttp's jars or java not installed (apt-get install libokhttp-java default-jdk-headless)"
    version = run(["dpkg-query", "-W", "-f", "${Version}", "libokhttp-java"]).stdout.strip()
    java = first_match([r'version "([^"]+)"'], run(["java", "-version"]).stderr, "?")
    return f"OkHttp {version or '(version unknown)'} on JDK {java}", None


def run_okhttp(ctx, targets):
    pins = ctx.work / "pins-okhttp.txt"
    lines = []
    for target in targets:
        if target["scenario"] in ctx.pinned:
            hashes, roots = ctx.pinned[target["scenario"]]
            lines.append("\t".join([target["id"], ",".join(hashes)] + ([",".join(roots)] if roots else [])))
    pins.write_text("".join(line + "\n" for line in lines))
    return batch_results(run(["java", "-cp", ":".join(OKHTTP_JARS), str(MATRIX / "Clients/OkHttpMatrixClient.java"),
                              ctx.ca_file, str(targets_file(ctx, "okhttp", targets)), str(pins)],
                             timeout=60 + 20 * len(targets)), targets)


def okhttp_short(detail):
    # "javax.net.ssl.SSLPeerUnverifiedException: Certificate pinning failure! Peer certificate chain: …" and
    # "Hostname localhost not verified: certificate: …": the first sentence says what OkHttp objected to.
    first = java_short(detail)
    return re.split(r"(?<=!) | Peer certificate chain:|: certificate: ", first)[0]


def java_short(detail):
    # "javax.net.ssl.SSLHandshakeException: PKIX path validation failed: java.security.cert.CertPathValidatorException:
    # validity check failed <- …": the innermost message of the first exception says what JSSE objected to.
    first = detail.split(" <- ")[0]
    parts = [p.strip() for p in re.split(r"\b(?:[a-z]+\.)*[A-Z]\w*(?:Exception|Error): ", first) if p.strip()]
    return parts[-1] if parts else first


def run_go(ctx, targets):
    environment = {**os.environ, "GOCACHE": str(ROOT / ".build-matrix/go-cache"), "GO111MODULE": "off",
                   "GOFLAGS": "", "GOTOOLCHAIN": "local"}
    binary = ROOT / ".build-matrix/go-client"
    built = run(["go", "build", "-o", str(binary), str(MATRIX / "Clients/go-client.go")], env=environment, timeout=300)
    if built.returncode != 0:
        return {t["id"]: (None, one_line("go build failed: " + built.stderr[-300:])) for t in targets}
    return batch_results(run([str(binary), ctx.ca_file, str(targets_file(ctx, "go", targets))],
                             timeout=30 + 20 * len(targets)), targets)


def go_short(detail):
    detail = re.sub(r": current time .*", "", detail)
    return first_match([r'\(possibly because of "(?:x509: )?([^"]+)"'], detail, detail)


def run_node(ctx, targets):
    return batch_results(run(["node", str(MATRIX / "Clients/node-client.mjs"), ctx.ca_file,
                              str(targets_file(ctx, "node", targets))], timeout=30 + 20 * len(targets)), targets)


def node_short(detail):
    detail = re.sub(r"^UNSPECIFIED: ", "", detail)
    return first_match([r"SSL routines:[^:]*:([^:]+):"], detail, detail)


def pyca_version(ctx):
    completed = run([ctx.python, "-c", "import cryptography, cryptography.x509.verification; print(cryptography.__version__)"])
    if completed.returncode != 0:
        return None, "pyca/cryptography >= 43 not found (make matrix makes .build-matrix/venv; see scripts/matrix-python.sh)"
    return f"pyca/cryptography {completed.stdout.strip()}", None


def run_pyca(ctx, targets):
    return batch_results(run([ctx.python, str(MATRIX / "Clients/pyca-verify.py"), ctx.ca_file,
                              str(targets_file(ctx, "pyca", targets))], timeout=30 + 20 * len(targets)), targets)


def pyca_short(detail):
    detail = re.sub(r" \(encountered processing .*\)$", "", detail)
    detail = re.sub(r": AlgorithmIdentifier \{.*", "", detail)
    return re.sub(r"^VerificationError: validation failed: (candidates exhausted: )?", "", detail)


def per_target_runner(function, workers=4):
    def go(ctx, targets):
        return per_target(lambda target: function(ctx, target), targets, workers)
    return go


CLIENT_SPECS = {
    "openssl": (openssl_version, per_target_runner(openssl_one), openssl_short),
    "curl": (curl_version, per_target_runner(curl_one), curl_short),
    "swift-nio-ssl": (swift_version("matrix-nio-ssl"), run_swift("matrix-nio-ssl"), boringssl_short),
    "async-http-client": (swift_version("matrix-ahc"), run_swift("matrix-ahc"), boringssl_short),
    "urlsession": (swift_version("matrix-urlsession"), run_urlsession, urlsession_short),
    "gnutls": (gnutls_version, per_target_runner(gnutls_one), gnutls_short),
    "nss": (nss_version, per_target_runner(nss_one), nss_short),
    "chromium": (chromium_version, per_target_runner(chromium_one, workers=2), lambda d: d),
    "java": (tool_version(["java", "-version"], r'version "([^"]+)"', "java not installed (apt-get install default-jdk-headless)"),
             run_java, java_short),
    "okhttp": (okhttp_version, run_okhttp, okhttp_short),
    "go": (tool_version(["go", "version"], r"go version (go\S+)", "go not installed (apt-get install golang-go)"), run_go, go_short),
    "node": (tool_version(["node", "--version"], r"(v\S+)", "node not installed (apt-get install nodejs)"), run_node, node_short),
    "pyca": (pyca_version, run_pyca, pyca_short),
}


def short_text(client, accepted, detail):
    if accepted:
        return "accepted"
    if accepted is None:
        return "not judged: " + detail[:50]
    text = CLIENT_SPECS[client][2](detail) or detail
    return text if len(text) <= 60 else text[:57] + "..."


# --- The fixtures ---------------------------------------------------------------------------------------------------

# Three clients run at once, each on a serve of its own with its own block of ports (a block holds the dashboard, every
# catalog port, the OCSP responder at +99 and the user scenarios).
DEFAULT_PORT_BASES = [29800, 30000, 30200]


def check_port_blocks(document, bases):
    ports = [entry["port"] for entry in document["scenarios"] if entry.get("port")]
    span = max(max(ports, default=bases[0]) - bases[0], 99) + 1
    ordered = sorted(bases)
    if len(set(bases)) != len(bases) or any(b - a < span for a, b in zip(ordered, ordered[1:])):
        raise SystemExit(f"--port-base blocks overlap: each serve needs {span} ports from its base ({bases})")


def stop(server):
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()



def serve(cli, store, port_base, names, log):
    arguments = [cli, "serve", "--json", "--dir", str(store), "--port-base", str(port_base),
                 "--scenarios", str(MATRIX / "Scenarios")] + names
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=log, text=True)
    decoder = json.JSONDecoder()
    text = ""
    deadline = time.time() + 600   # an RSA-8192 key on a cold store takes a while
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        text += line
        try:
            document, _ = decoder.raw_decode(text.strip())
        except ValueError:
            continue
        return process, wait_until_prepared(document, deadline)
    process.kill()
    raise SystemExit(f"tls-fixtures serve did not start; see {log.name}")


def wait_until_prepared(document, deadline):
    """serve answers before its slow keys exist (RSA-4096 and RSA-8192 on a fresh store are "preparing"): ask its
    /scenarios.json until nothing is, so those scenarios are judged rather than left out of the report."""
    while any(entry["status"] == "preparing" for entry in document["scenarios"]) and time.time() < deadline:
        time.sleep(2)
        try:
            with urllib.request.urlopen(document["dashboard"].rstrip("/") + "/scenarios.json", timeout=10) as answer:
                document = json.load(answer)
        except (OSError, ValueError):
            continue
    return document


# --- What the server saw -------------------------------------------------------------------------------------------
# Every fixture records each connection it accepts (ConnectionRecord: the ClientHello, how the handshake ended, the
# requests answered), readable over serve's control API. Each client runs against a serve of its own (the same store
# and CA, its own block of ports), started for it and stopped after it, so every record on that serve is that client's;
# and its targets run in rounds that hit each fixture once (rounds()), with a cursor per fixture between rounds, so the
# records a fixture kept since the cursor are that one target's. No record is attributed by guessing from its contents.

# Seconds a record may take to settle (the connection closed, or a request answered) once its client is done: a hang
# detector. Each wait ends as soon as its records have settled; a loaded machine can take more than a few seconds to
# see a close, and a record still open at the deadline is reported as the client's (a refusal not proven).
SETTLE = 60
PHASES = {"beforeClientHello": "before ClientHello", "afterClientHello": "after ClientHello",
          "afterServerFlight": "after server flight"}


def rounds(targets):
    """The targets in rounds, in order, no two of a round on the same fixture (the same scenario): the extra rows
    (ats-compliant by its qualified name, ip-san by 127.0.0.1 and ::1) each go after the row before them."""
    batches = []
    for target in targets:
        for batch in batches:
            if all(other["scenario"] != target["scenario"] for other in batch):
                batch.append(target)
                break
        else:
            batches.append([target])
    return batches


def fetch_connections(dashboard, scenario, after):
    """GET /api/scenarios/NAME/connections?after=ID: the fixture's records after the cursor, and the next cursor."""
    url = f"{dashboard.rstrip('/')}/api/scenarios/{urllib.parse.quote(scenario)}/connections?after={after}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def settled(record):
    """ConnectionRecord.isSettled: it closed, or it answered a request."""
    return record.get("endedAt") is not None or record.get("requestCount", 0) > 0


def connections_since(dashboard, scenario, after, settle=SETTLE):
    """The records after `after`, once each has settled (or `settle` seconds have passed: one still open says so)."""
    deadline = time.time() + settle
    while True:
        listing = fetch_connections(dashboard, scenario, after)
        if all(settled(record) for record in listing["connections"]) or time.time() >= deadline:
            return listing
        time.sleep(0.2)


def compact_record(record):
    """What docs/clients.json keeps of a record: nothing that changes from run to run (ids, times, ports)."""
    hello = record.get("clientHello") or {}
    kept = {"peer": "IPv6" if record.get("peer", "").startswith("[") else "IPv4"}
    if hello:
        kept["serverName"] = hello.get("serverName")
        kept["versions"] = hello.get("supportedVersions") or [hello.get("legacyVersion")]
    kept["outcome"] = record.get("outcome")
    if record.get("alertAfterHandshake"):
        kept["alertAfterHandshake"] = record["alertAfterHandshake"]
    kept["requests"] = [f"malformed request {r['status']}" if r["method"] == "(malformed)"
                        else f"{r['method']} {r['path']} {r['status']}" for r in record.get("requests", [])]
    kept["requestCount"] = record.get("requestCount", len(kept["requests"]))
    if record.get("endedAt") is None and not kept["requestCount"]:
        kept["open"] = True
    return kept


def alert_text(alert):
    return f"{alert['name']}({alert['code']})"


def record_short(record):
    """One record in a few words: `alert unknown_ca(48)`, `closed after server flight`, `completed, GET / 200`."""
    outcome = record.get("outcome")
    if outcome is None:
        return "still open, no outcome" if record.get("open") else "closed, no outcome"
    kind, phase = outcome["kind"], outcome.get("phase")
    where = PHASES.get(phase, phase)
    if kind == "alertReceived":
        return f"alert {alert_text(outcome['alert'])}" + ("" if phase == "afterServerFlight" else f" {where}")
    if kind == "alertSent":   # OpenSSL's reason ("no shared cipher") stays in the report's record
        return f"server sent {alert_text(outcome['alert'])}"
    if kind == "closedWithoutAlert":
        return f"closed {where}"
    if kind == "timedOut":
        return f"timed out {where}"
    if kind == "notTLS":   # plain HTTP (or other bytes) to a TLS port: the server closed, no alert
        return f"not TLS ({outcome.get('firstBytes')})"
    if kind == "cleartext":
        return "cleartext"
    text = "completed"
    if record.get("alertAfterHandshake"):
        text += f", then alert {alert_text(record['alertAfterHandshake'])}"
    if record["requests"]:
        text += ", " + record["requests"][0]
    elif not record.get("alertAfterHandshake"):
        text += ", no request"
    return text


def server_short(records):
    """The distinct outcomes of a cell's records, `never arrived` when there is none. Stable from run to run, as the
    verdicts are: how many times a client retried (AsyncHTTPClient 9 or 10, Chromium 1 to 6) and in which order
    Chromium's sockets (a speculative one, the page's, the favicon's) arrive vary between runs, so the cell says only
    `repeated`, lists outcomes in a fixed order (requests answered first) and counts no extra requests; the report's
    `connections` keep every record in the order it came."""
    if not records:
        return "never arrived"
    counts = {}
    for text in map(record_short, records):
        counts[text] = counts.get(text, 0) + 1

    def rank(text):
        return (0 if re.search(r"^completed, [A-Z]+ ", text) else 2 if text.startswith("completed") else 1, text)

    return "; ".join(text + (" (repeated)" if counts[text] > 1 else "") for text in sorted(counts, key=rank))


def server_finding(client, accepted, records):
    """Where the server's records do not back the client's verdict; None where they do (or there is no verdict).
    pyca judges a chain it fetched with verification off, so its handshakes complete without a request whatever its
    verdict: only its arrival is checked."""
    if accepted is None:
        return None
    if not records:
        return "never arrived: the refusal is not proven" if not accepted else "never arrived, yet accepted"
    if client == "pyca":
        return None
    served = any(record["requestCount"] > 0 for record in records)
    if accepted and not served:
        return "accepted, but the fixture answered no request"
    if not accepted and served:
        return "refused, yet the fixture answered a request"
    return None


def server_result(client, accepted, records, lost=0):
    result = {"short": server_short(records), "connections": records}
    if lost:
        result["lost"] = lost   # more records than the fixture's ring keeps: the oldest are gone
    finding = server_finding(client, accepted, records)
    if finding:
        result["finding"] = finding
    return result


# --- Output ---------------------------------------------------------------------------------------------------------


def expected_for(entry, client):
    """The scenario file's verdict for `client` (resolved by the library: `clientOutcomes`) and the reason it gives;
    None for a scenario not yet judged (no `expect.clients`, so no `clientOutcomes`): this run is what judges it."""
    because = next((d["because"] for d in entry["expect"].get("clients") or [] if client in d["clients"]), None)
    return (entry.get("clientOutcomes") or {}).get(client), because


def short_version(text):
    """`curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1 OpenSSL/3.0.19 zlib/…` → the program and its TLS library."""
    text = re.sub(r" \(Library: [^)]*\)", "", text)
    tls = re.search(r"\b(OpenSSL/\S+|GnuTLS/\S+)", text)
    words = text.split()
    if len(words) > 4 and tls:
        return f"{words[0]} {words[1]} ({tls.group(1)})"
    return text


# Why a flagged cell is what it is, where that is known (shown under the server-side table while the cell is flagged).
FINDING_NOTES = {
    ("ip-san", "::1", "urlsession"): "swift-corelibs-foundation fails a URL whose host is an IPv6 literal with "
    "NSURLErrorBadURL (-1000) before connecting (swiftlang/swift-corelibs-foundation#5496; upstream fix #5498, yet "
    "the toolchain measured still fails): not a TLS "
    "refusal, which the fixture's empty record shows",
}


def server_table(report, clients):
    """The second table: the same cells as the fixture saw them (scripts/matrix.py, What the server saw)."""
    if not any("server" in result for row in report["rows"] for result in row["results"].values()):
        return []
    lines = ["", "## What the server saw", "",
             "The same cells from the fixture's side: the connection records each fixture kept (`tls-fixtures "
             "connections NAME`, `GET /api/scenarios/NAME/connections`). Each client runs against a `serve` of its own "
             "(the same CA, its own ports), and meets each fixture once per round, so every record in a cell is that "
             "client's connection for that row. `alert NAME(code)` is the alert the client sent after the server's "
             "certificate (the phase is named when it came earlier); `server sent …` the server's own alert (no shared "
             "version or suite); `closed …` a close without an alert; `completed, GET / 200` a handshake that "
             "completed and the request answered; `never arrived` no connection at all. A cell lists each distinct "
             "outcome once, requests answered first, and says `repeated` where the client came back with the same "
             "one (AsyncHTTPClient retries a failed handshake about ten times, Chromium up to six; the counts and the "
             "order vary from run to run, and docs/clients.json keeps every record in order). `pyca` is a verifier, not a TLS client: it fetches the chain in a handshake with "
             "verification off and judges it offline, so its cells show that handshake (`completed, no request`) "
             "whatever its verdict. ⚠ marks a cell where the record does not back the client's verdict: a refusal the "
             "fixture never saw is not proven.", "",
             "| scenario | host | " + " | ".join(f"`{c['id']}`" for c in clients) + " |",
             "| --- | --- | " + " | ".join("---" for _ in clients) + " |"]
    findings = []
    for row in report["rows"]:
        cells = []
        for client in clients:
            server = (row["results"].get(client["id"]) or {}).get("server")
            if server is None:
                cells.append("–")
                continue
            text = server["short"].replace("|", "\\|")
            if server.get("finding"):
                text = f"⚠ {text}"
                note = FINDING_NOTES.get((row["scenario"], row["host"], client["id"]))
                findings.append(f"- `{row['scenario']}` ({row['host']}) × `{client['id']}`: {server['finding']} "
                                f"(the client: {row['results'][client['id']]['short']})" + (f". {note}" if note else ""))
            cells.append(text)
        lines.append(f"| `{row['scenario']}` | {row['host']} | " + " | ".join(cells) + " |")
    lines += ["", "Where the server's records do not back the client's verdict:", ""]
    lines += findings or ["- nowhere: every refusal reached its fixture, and every acceptance was answered."]
    return lines


def markdown(report):
    clients = [c for c in report["clients"]]
    lines = ["# Client matrix", "",
             "<!-- Generated by `make matrix` (scripts/matrix.py); do not edit by hand. -->", "",
             f"Every served scenario against every client, each as shipped with the built-in CA (from a fresh "
             f"`tls-fixtures ca init`) as its only trusted root, connecting to `https://HOST:PORT/` with HOST resolved "
             f"to loopback. **accepted** means the handshake, certificate verification for HOST and an HTTP 200; "
             f"anything else is the client's own error, shortened (docs/clients.json has the full text). "
             f"Where a client differs from OpenSSL's verify result, the scenario file says so in `expect.clients`, "
             f"and a test holds those to what the clients do; a cell marked ⚠ disagrees with its scenario file.", "",
             f"Measured {report['generated']} on {report['machine']}.", "",
             "Each scenario's own row is checked against its file's expectations; it connects as `localhost`, but for "
             "`impersonation` (a leaf for `www.apple.com` from the built-in CA, served from Matrix/Scenarios), which "
             "connects as `www.apple.com`, and `long-subdomain`, which connects by its 63-character label. The extra "
             "rows show where the name matters and carry no expectations: the qualified name (under the CA's bare "
             "`test` constraint) and the addresses `ip-san` names.", "",
             "| client | stack | what runs | version |", "| --- | --- | --- | --- |"]
    for client in clients:
        version = short_version(client["version"]) if client["status"] == "ok" else f"**missing**: {client['reason']}"
        lines.append(f"| `{client['id']}` | {client['stack']} | {client['summary']} | {version} |")
    lines += ["", "| scenario | host | " + " | ".join(f"`{c['id']}`" for c in clients) + " |",
              "| --- | --- | " + " | ".join("---" for _ in clients) + " |"]
    for row in report["rows"]:
        cells = []
        for client in clients:
            result = row["results"].get(client["id"])
            if result is None:
                cells.append("missing")
                continue
            text = result["short"].replace("|", "\\|")
            cell = f"**{text}**" if result["accepted"] else text
            if (row["primary"] and result.get("expected") and result["accepted"] is not None
                    and result["expected"] != ("accept" if result["accepted"] else "reject")):
                cell = f"⚠ {cell} (expected {result['expected']})"
            cells.append(cell)
        host = row["host"] if row["host"] != "localhost" else "localhost"
        lines.append(f"| `{row['scenario']}` | {host} | " + " | ".join(cells) + " |")
    lines += server_table(report, clients)
    if report["notServed"]:
        lines += ["", "Not in the matrix:", ""]
        lines += [f"- `{item['scenario']}`: {item['reason']}" for item in report["notServed"]]
    differences = [(row["scenario"], d) for row in report["rows"] if row["primary"] for d in row.get("differences", [])]
    if differences:
        lines += ["", "## Where clients differ from OpenSSL's verify result, and why", "",
                  "From the scenario files' `expect.clients` (shown on the dashboard and in `/scenarios.json`).", ""]
        for scenario, difference in differences:
            who = ", ".join(f"`{c}`" for c in difference["clients"])
            lines.append(f"- `{scenario}`: {who} {difference['outcome']}: {difference['because']}")
    return "\n".join(lines) + "\n"


# --- Main -----------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", default=str(ROOT / ".build/debug/tls-fixtures"), help="the tls-fixtures executable")
    parser.add_argument("--swift-clients", default=str(ROOT / ".build-matrix/debug"), help="where the Matrix package's products are")
    parser.add_argument("--python", default=None, help="a Python with cryptography >= 43 (default: this one, else .build-matrix/venv)")
    parser.add_argument("--clients", default=",".join(CLIENT_SPECS), help="comma-separated subset of: " + ", ".join(CLIENT_SPECS))
    parser.add_argument("--scenarios", default="", help="comma-separated subset (default: every scenario)")
    parser.add_argument("--plan", metavar="FILE", help="JSON {client: [scenario, ...]}: each client runs only its own "
                        "scenarios (make test's matrix); --clients and --scenarios default to what the plan names")
    parser.add_argument("--port-base", type=int, action="append", help="a block of ports for one client's serve "
                        "(repeatable: as many clients run at once as blocks are given; default "
                        + ", ".join(map(str, DEFAULT_PORT_BASES)) + ")")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", help="write docs/CLIENTS.md-style text here")
    parser.add_argument("--no-extra-rows", action="store_true", help="only each scenario's own row")
    parser.add_argument("--render", metavar="REPORT", help="run nothing: re-render an earlier --json report "
                        "(the short texts are recomputed from each client's full text)")
    options = parser.parse_args()
    if options.render:
        report = json.loads(Path(options.render).read_text())
        for row in report["rows"]:
            for client, result in row["results"].items():
                result["short"] = short_text(client, result["accepted"], result["detail"])
                if "server" in result:
                    result["server"] = server_result(client, result["accepted"], result["server"]["connections"],
                                                     result["server"].get("lost", 0))
        write(options, report)
        return

    plan = json.loads(Path(options.plan).read_text()) if options.plan else None
    if plan is not None:
        options.clients = options.clients if "--clients" in sys.argv else ",".join(plan)
        options.scenarios = options.scenarios or ",".join(sorted({s for names in plan.values() for s in names}))
    chosen = [c.strip() for c in options.clients.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CLIENT_SPECS]
    if unknown:
        raise SystemExit(f"unknown client {', '.join(unknown)}: use {', '.join(CLIENT_SPECS)}")
    if not Path(options.cli).exists():
        raise SystemExit(f"{options.cli} not found: build it first (swift build)")
    python = options.python or pick_python()

    work = Path(tempfile.mkdtemp(prefix="tls-fixtures-matrix-"))
    store = work / "store"
    initialized = run([options.cli, "ca", "init", "--dir", str(store)], timeout=120)
    if initialized.returncode != 0:
        raise SystemExit("ca init failed: " + initialized.stderr)
    ca_file = str(store / "ca/root.pem")
    names = [n.strip() for n in options.scenarios.split(",") if n.strip()]
    bases = options.port_base or DEFAULT_PORT_BASES
    # One serve first, for the catalog document and to make every key (minutes on a fresh store); then each client gets
    # a serve of its own on that store, which starts in seconds (measure, run_client).
    with open(work / "serve.log", "w") as log:
        server, document = serve(options.cli, store, bases[0], names, log)
    stop(server)
    check_port_blocks(document, bases)

    def launch(base, client):
        with open(work / f"serve-{client}.log", "w") as log:
            return serve(options.cli, store, base, names, log)

    context = Context(work, ca_file, options.swift_clients, python, cli=options.cli,
                      pinned=pinned_scenarios(options.cli, store, document))
    report = measure(options, chosen, document, context, plan, launch=launch, bases=bases)
    write(options, report)
    mismatches = [(row["scenario"], client, result) for row in report["rows"] if row["primary"]
                  for client, result in row["results"].items()
                  if result.get("expected") and result["accepted"] is not None
                  and result["expected"] != ("accept" if result["accepted"] else "reject")]
    for scenario, client, result in mismatches:
        print(f"differs from the scenario file: {scenario} x {client}: expected {result['expected']}, "
              f"got {'accepted' if result['accepted'] else result['detail']}", file=sys.stderr)
    missing = [c for c in report["clients"] if c["status"] != "ok"]
    for client in missing:
        print(f"missing client {client['id']}: {client['reason']}", file=sys.stderr)
    # Every scenario the matrix judges must say what the clients do: `expect.clients` lists those that differ from its
    # `verify`, and an empty list says none does. Absent means nobody has looked yet, which fails the run (after the
    # report is written, since the report is what to write them from); ClientExpectationTests holds the files to it.
    expectations = {entry["name"]: "clients" in entry["expect"] for entry in document["scenarios"]}
    without = [row["scenario"] for row in report["rows"] if row["primary"] and not expectations[row["scenario"]]]
    for name in without:
        print(f"{name} has no expect.clients: add to its scenario file the clients that differ from its expect.verify, "
              f"each with the reason, from this report (\"clients\": [] when none does); then `make scenarios`", file=sys.stderr)
    # A scenario still being prepared, or one that failed, is a gap in the report, not a verdict.
    unjudged = [item for item in report["notServed"] if item["status"] in ("preparing", "failed", "listed")]
    for item in unjudged:
        print(f"{item['scenario']} was not served ({item['status']}): {item['reason']}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    findings = [(row["scenario"], row["host"], client, result["server"]["finding"]) for row in report["rows"]
                for client, result in row["results"].items() if result.get("server", {}).get("finding")]
    for scenario, host, client, finding in findings:
        print(f"the server's records do not back the verdict: {scenario} ({host}) x {client}: {finding}", file=sys.stderr)
    print(f"{len(report['rows'])} rows x {len(chosen) - len(missing)} clients; {len(findings)} cells the server's "
          f"records do not back; "
          f"{len(mismatches)} differ from the scenario files; {len(missing)} clients missing; "
          f"{len(without)} scenarios without expect.clients", file=sys.stderr)
    if without or unjudged:
        sys.exit(1)


def pinned_scenarios(cli, store, document):
    """The pinning scenarios (those whose file says which published pins match, `expect.pins`): each with the published
    pins as `tls-fixtures pins` prints them (the `pinned` leaf key and the backup, not the CA: a pinner passes on any
    one pin of the chain) and the roots its file says the device trusts besides the CA (`expect.trustedRoots`, found in
    the store's ca/ once serve has made them)."""
    printed = run([cli, "pins", "pinned", "--json", "--dir", str(store)], timeout=120)
    if printed.returncode != 0:
        raise SystemExit("tls-fixtures pins failed: " + printed.stderr)
    material = json.loads(printed.stdout)
    hashes = [f"sha256/{material['leaf']}", f"sha256/{material['backup']}"]
    pinned = {}
    for entry in document["scenarios"]:
        if entry["expect"].get("pins") is not None:
            roots = [str(store / "ca" / f"{root}.pem") for root in entry["expect"].get("trustedRoots") or []]
            pinned[entry["name"]] = (hashes, roots)
    return pinned


def report_json(report):
    """Indented, but each connection record on one line: 60 rows x 13 clients of them would otherwise be most of it."""
    records = []

    def placeholder(record):
        records.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
        return f"@record{len(records) - 1}@"

    shallow = json.loads(json.dumps(report))
    for row in shallow["rows"]:
        for result in row["results"].values():
            if "server" in result:
                result["server"]["connections"] = [placeholder(r) for r in result["server"]["connections"]]
    text = json.dumps(shallow, indent=2, ensure_ascii=False)
    return re.sub(r'"@record(\d+)@"', lambda match: records[int(match.group(1))], text) + "\n"


def write(options, report):
    if options.json:
        Path(options.json).write_text(report_json(report))
    if options.markdown:
        Path(options.markdown).write_text(markdown(report))


def pick_python():
    for candidate in [sys.executable, str(ROOT / ".build-matrix/venv/bin/python")]:
        if Path(candidate).exists() and run([candidate, "-c", "import cryptography.x509.verification"]).returncode == 0:
            return candidate
    return sys.executable


def measure(options, chosen, document, ctx, plan=None, *, launch, bases):
    ctx.request_file.write_text(REQUEST.format(host="localhost"))
    entries = {entry["name"]: entry for entry in document["scenarios"]}
    rows, not_served = [], []
    for entry in document["scenarios"]:
        if entry["name"] in OUT_OF_SCOPE:
            not_served.append({"scenario": entry["name"], "status": "out of scope", "reason": OUT_OF_SCOPE[entry["name"]]})
        elif entry["status"] != "serving":
            not_served.append({"scenario": entry["name"], "status": entry["status"],
                               "reason": one_line(entry.get("reason") or entry["status"])})
        else:
            rows.append({"scenario": entry["name"], "host": primary_host(entry),
                         "port": entry["port"], "primary": True})
    if not options.no_extra_rows:
        for name, host in EXTRA_ROWS:
            if name in entries and entries[name]["status"] == "serving":
                rows.append({"scenario": name, "host": host, "port": entries[name]["port"], "primary": False})
    targets = [{"id": f"t{index}", "scenario": row["scenario"], "host": row["host"], "port": row["port"]}
               for index, row in enumerate(rows)]
    # The library names the clients (MatrixClient); this script only knows how to run them.
    known = {client["id"]: client for client in document["clients"]}
    if set(known) != set(CLIENT_SPECS):
        raise SystemExit(f"scripts/matrix.py runs {sorted(CLIENT_SPECS)} but the catalog names {sorted(known)}")
    clients = []
    for name in [client["id"] for client in document["clients"] if client["id"] in chosen]:
        version, reason = CLIENT_SPECS[name][0](ctx)
        clients.append({"id": name, "stack": known[name]["stack"], "summary": known[name]["summary"],
                        "status": "ok" if version else "missing", "version": version, "reason": reason})
    for row in rows:
        row["results"] = {}
        differences = entries[row["scenario"]]["expect"].get("clients") or []
        if differences:
            row["differences"] = differences

    def targets_of(client):
        """Every target, or with a plan only the rows of the scenarios the plan gives this client."""
        if plan is None:
            return targets
        return [t for t in targets if t["scenario"] in plan.get(client["id"], [])]

    slots = queue.Queue()
    for base in bases:
        slots.put(base)

    def run_client(client):
        """The client against a serve of its own, in rounds (rounds()): its answers, and what each fixture saw."""
        base = slots.get()
        started = time.time()
        server, own = launch(base, client["id"])
        try:
            dashboard = own["dashboard"]
            ports = {entry["name"]: entry["port"] for entry in own["scenarios"] if entry["status"] == "serving"}
            mine = [dict(target, port=ports.get(target["scenario"])) for target in targets_of(client)]
            answers = {t["id"]: (None, "not served by this client's serve") for t in mine if t["port"] is None}
            seen = {}
            cursors = {name: fetch_connections(dashboard, name, 0)["latestID"]
                       for name in sorted({t["scenario"] for t in mine if t["port"] is not None})}
            for batch in rounds([t for t in mine if t["port"] is not None]):
                answers.update(CLIENT_SPECS[client["id"]][1](ctx, batch))
                for target in batch:
                    cursor = cursors[target["scenario"]]
                    listing = connections_since(dashboard, target["scenario"], cursor)
                    cursors[target["scenario"]] = listing["latestID"]
                    seen[target["id"]] = ([compact_record(r) for r in listing["connections"]],
                                          listing["latestID"] - cursor - len(listing["connections"]))
        finally:
            stop(server)
            slots.put(base)
        if plan is not None:
            client["targets"] = len(mine)   # make test's summary says how many each stack judged
        # On standard error, not in the report: the committed report changes only when a verdict does.
        print(f"{client['id']}: {len(mine)} targets in {time.time() - started:.1f} s", file=sys.stderr)
        return client, answers, seen

    runnable = [c for c in clients if c["status"] == "ok"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(bases)) as pool:
        for client, answers, seen in pool.map(run_client, runnable):
            for target, row in zip(targets, rows):
                if target["id"] not in answers:
                    continue   # not in this client's plan
                accepted, detail = answers[target["id"]]
                result = {"accepted": accepted, "detail": detail, "short": short_text(client["id"], accepted, detail)}
                if target["id"] in seen:
                    records, lost = seen[target["id"]]
                    result["server"] = server_result(client["id"], accepted, records, lost)
                if row["primary"]:
                    expected, because = expected_for(entries[row["scenario"]], client["id"])
                    result["expected"] = expected
                row["results"][client["id"]] = result
    for row in rows:
        del row["port"]
    return {"generated": datetime.date.today().isoformat(), "machine": machine(), "clients": clients,
            "rows": rows, "notServed": not_served}


def machine():
    name = "?"
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                name = line.split("=", 1)[1].strip('"')
    except OSError:
        name = platform.system()
    return f"{name} {platform.machine()}"


if __name__ == "__main__":
    main()
