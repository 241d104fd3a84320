#!/usr/bin/env python3
"""The client matrix: every served scenario x every TLS client stack, with the built-in CA trusted: a report card per
stack, rendered as one table.

`make matrix` runs it in full and writes docs/CLIENTS.md and docs/clients.json; `make test` runs every stack through
Tests/TLSFixturesTests/Matrix/ClientMatrixTests.swift with a --plan (each stack on the controls, the refusals and the
scenarios where it differs from OpenSSL), which holds each card to nothing unexpected.

How it works: a fresh store and CA (`tls-fixtures ca init`), one `tls-fixtures serve` of the catalog plus Matrix/Scenarios
(the `impersonation` leaf for www.apple.com), and for every stack `tls-fixtures report --runner … --family STACK
--client TEMPLATE`: the stack runs once on a fresh leased fixture of each scenario and once on one of its control, and
the report's differential judge (LoadJudge) gives each an as expected / unexpected / unproven verdict from what the
client said and what its fixture recorded. The template is Matrix/Clients/load.py, which runs the stack's own client
for one fixture (openssl s_client, curl, gnutls-cli, tstclnt, Chromium, or the small clients in Matrix/), connecting
as `localhost` (`impersonation` as www.apple.com, `long-subdomain` by its 63-character label) and printing the client's
words; its exit status is the verdict. A few reports run at once, each stack's scenarios split over several, against
the one runner: every load has a fixture of its own, so the records beside each verdict are that load's alone.

This script only prepares the stacks (versions, the NSS database, compiled clients, OkHttp's pins), runs the reports
and renders their cards: it judges nothing itself. A client that is not installed is reported missing with the reason,
never counted as a pass or a failure.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "Matrix"
LOAD = MATRIX / "Clients/load.py"
# load.py's text helpers (one line of a client's output, the first pattern that matches), one copy for both scripts.
sys.path.insert(0, str(LOAD.parent))
from load import first_match, one_line  # noqa: E402
# Not run: plain HTTP has no TLS to judge, and client-cert-required judges the client's certificate, not the server's.
OUT_OF_SCOPE = {
    "http": "plain HTTP: no TLS to judge",
    "client-cert-required": "judges the client's certificate, which the matrix clients do not present",
}
# More rows where the name matters, each a report of its own: the qualified name under the CA's bare `test`
# constraint, and the address rows of the only scenario whose leaf names addresses. Their controls load as localhost.
EXTRA_ROWS = [("ats-compliant", "ats-compliant.fixtures.test"), ("ip-san", "127.0.0.1"), ("ip-san", "::1")]
CURL_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
OKHTTP_JARS = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]


def row_host(entry):
    """The host a scenario's own row connects as (its `expect.clients` describe that row): localhost, but for the two
    scenarios whose point is a name — `impersonation`'s www.apple.com, and `long-subdomain`'s 63-character label, the
    first of its file's extraHosts."""
    if entry["name"] == "impersonation":
        return "www.apple.com"
    if entry["name"] == "long-subdomain":
        return entry["certificate"]["extraHosts"][0]
    return "localhost"


def run(arguments, timeout=20, **kwargs):
    try:
        return subprocess.run(arguments, capture_output=True, text=True, errors="replace", timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(arguments, 124, "", "timed out")


# --- The stacks: each available(ctx) -> (version or None, reason when missing) and short(detail) -> the few words a
# table cell shows. What runs for one load is Matrix/Clients/load.py's.


class Context:
    def __init__(self, work, ca_file, swift_clients, python):
        self.work = work
        self.ca_file = ca_file
        self.swift_clients = Path(swift_clients)
        self.python = python
        self.nss_database = work / "nssdb"
        self.chromium_home = work / "chromium-home"
        self.java_classes = ROOT / ".build-matrix/java"
        self.go_client = ROOT / ".build-matrix/go-client"


def openssl_version(ctx):
    completed = run(["openssl", "version"])
    return (completed.stdout.strip(), None) if completed.returncode == 0 else (None, "openssl not installed")


def openssl_short(detail):
    return first_match([r"error:[0-9A-F]+:SSL routines:[^:]*:([^:]+)"], detail, detail)


def curl_version(ctx):
    completed = run(["curl", "--version"])
    return (completed.stdout.splitlines()[0], None) if completed.returncode == 0 else (None, "curl not installed")


def curl_short(detail):
    # curl appends advice ("More details here: …", "curl failed to verify the legitimacy of the server …").
    detail = re.split(r" More details here: | curl failed to verify ", detail)[0]
    return first_match([r"SSL certificate problem: (.*)", r"curl: \(\d+\) SSL: (.*)", r"SSL routines::(.*)",
                        r"curl: \(\d+\) (.*)"], detail, detail)


def gnutls_version(ctx):
    if not shutil.which("gnutls-cli"):
        return None, "gnutls-cli not installed (apt-get install gnutls-bin)"
    return run(["gnutls-cli", "--version"]).stdout.splitlines()[0], None


def gnutls_short(detail):
    return re.sub(r"^The certificate is NOT trusted\. ", "NOT trusted: ", detail)


def trusting_nss_database(ctx, database):
    """A fresh NSS database that trusts the CA (tstclnt reads it; Chromium reads its home's)."""
    database.mkdir(parents=True, exist_ok=True)
    run(["certutil", "-d", f"sql:{database}", "-N", "--empty-password"])
    added = run(["certutil", "-d", f"sql:{database}", "-A", "-t", "C,,", "-n", "tls-fixtures", "-i", ctx.ca_file])
    return None if added.returncode == 0 else one_line("certutil could not add the CA: " + added.stderr)


def nss_version(ctx):
    if not shutil.which("tstclnt") or not shutil.which("certutil"):
        return None, "tstclnt/certutil not installed (apt-get install libnss3-tools)"
    failure = trusting_nss_database(ctx, ctx.nss_database)
    if failure:
        return None, failure
    version = run(["dpkg-query", "-W", "-f", "${Version}", "libnss3"]).stdout.strip()
    return f"NSS {version or '(version unknown)'}", None


def nss_short(detail):
    return first_match([r"\b((?:SEC|SSL)_ERROR_[A-Z0-9_]+)"], detail, detail)


def chromium_version(ctx):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        return None, "chromium not installed (apt-get install chromium)"
    failure = trusting_nss_database(ctx, ctx.chromium_home / ".pki/nssdb")
    if failure:
        return None, failure
    return run([binary, "--version"]).stdout.strip(), None


def swift_version(name):
    def version(ctx):
        if not (ctx.swift_clients / name).exists():
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


def boringssl_short(detail):
    return first_match([r"OPENSSL_internal:([A-Z0-9_]+)", r"(failedToValidateHostname)",
                        r"(unsupported name constraint type)", r"^(\w+)\("], detail, detail)


def namespace_available():
    """URLSession runs in a private mount namespace (Matrix/Clients/load.py): can this machine make one?"""
    if platform.system() != "Linux" or not shutil.which("unshare"):
        return False, "needs Linux and unshare (util-linux) for a private mount namespace"
    if not Path(CURL_CA_BUNDLE).exists():
        return False, f"libcurl's CA bundle {CURL_CA_BUNDLE} is missing (apt-get install ca-certificates)"
    probe = run(["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"]) + ["true"])
    if probe.returncode != 0:
        return False, one_line("cannot make a private mount namespace: " + probe.stderr)
    return True, None


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


def compiled_java(ctx):
    """The two JSSE clients compiled once into .build-matrix/java (a `java File.java` launch compiles on every load)."""
    sources = [MATRIX / "Clients/MatrixClient.java", MATRIX / "Clients/OkHttpMatrixClient.java"]
    stamp = ctx.java_classes / "sources.stamp"
    fingerprint = "".join(source.read_text() for source in sources) + ":".join(OKHTTP_JARS)
    if stamp.exists() and stamp.read_text() == fingerprint:
        return None
    shutil.rmtree(ctx.java_classes, ignore_errors=True)
    ctx.java_classes.mkdir(parents=True)
    built = run(["javac", "-d", str(ctx.java_classes), "-cp", ":".join(OKHTTP_JARS)] + [str(s) for s in sources],
                timeout=300)
    if built.returncode != 0:
        return one_line("javac failed: " + built.stderr[-300:])
    stamp.write_text(fingerprint)
    return None


def java_version(ctx):
    if not shutil.which("java") or not shutil.which("javac"):
        return None, "java not installed (apt-get install default-jdk-headless)"
    failure = compiled_java(ctx)
    if failure:
        return None, failure
    return first_match([r'version "([^"]+)"'], run(["java", "-version"]).stderr, "?"), None


# OkHttp: Debian's libokhttp-java on the JDK, with OkHttp's jars on the class path. The pinning scenarios get a
# CertificatePinner (the published pinned key and the backup) and their trustedRoots (pin-mitm's interception root),
# so there the pin, not the trust, decides (Matrix/Clients/OkHttpMatrixClient.java; the pins: pinned_scenarios).
def okhttp_version(ctx):
    missing = [jar for jar in OKHTTP_JARS if not Path(jar).exists()]
    if missing or not shutil.which("java"):
        return None, "OkHttp's jars or java not installed (apt-get install libokhttp-java default-jdk-headless)"
    failure = compiled_java(ctx)
    if failure:
        return None, failure
    version = run(["dpkg-query", "-W", "-f", "${Version}", "libokhttp-java"]).stdout.strip()
    java = first_match([r'version "([^"]+)"'], run(["java", "-version"]).stderr, "?")
    return f"OkHttp {version or '(version unknown)'} on JDK {java}", None


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


def go_version(ctx):
    if not shutil.which("go"):
        return None, "go not installed (apt-get install golang-go)"
    environment = {**os.environ, "GOCACHE": str(ROOT / ".build-matrix/go-cache"), "GO111MODULE": "off",
                   "GOFLAGS": "", "GOTOOLCHAIN": "local"}
    built = run(["go", "build", "-o", str(ctx.go_client), str(MATRIX / "Clients/go-client.go")], env=environment,
                timeout=300)
    if built.returncode != 0:
        return None, one_line("go build failed: " + built.stderr[-300:])
    return first_match([r"go version (go\S+)"], run(["go", "version"]).stdout, "?"), None


def go_short(detail):
    detail = re.sub(r": current time .*", "", detail)
    return first_match([r'\(possibly because of "(?:x509: )?([^"]+)"'], detail, detail)


def node_short(detail):
    detail = re.sub(r"^UNSPECIFIED: ", "", detail)
    return first_match([r"SSL routines:[^:]*:([^:]+):"], detail, detail)


def pyca_version(ctx):
    completed = run([ctx.python, "-c",
                     "import cryptography, cryptography.x509.verification; print(cryptography.__version__)"])
    if completed.returncode != 0:
        return None, ("pyca/cryptography >= 43 not found (make matrix makes .build-matrix/venv; see "
                      "scripts/matrix-python.sh)")
    return f"pyca/cryptography {completed.stdout.strip()}", None


def pyca_short(detail):
    detail = re.sub(r" \(encountered processing .*\)$", "", detail)
    detail = re.sub(r": AlgorithmIdentifier \{.*", "", detail)
    return re.sub(r"^VerificationError: validation failed: (candidates exhausted: )?", "", detail)


STACKS = {
    "openssl": (openssl_version, openssl_short),
    "curl": (curl_version, curl_short),
    "swift-nio-ssl": (swift_version("matrix-nio-ssl"), boringssl_short),
    "async-http-client": (swift_version("matrix-ahc"), boringssl_short),
    "urlsession": (swift_version("matrix-urlsession"), urlsession_short),
    "gnutls": (gnutls_version, gnutls_short),
    "nss": (nss_version, nss_short),
    "chromium": (chromium_version, lambda d: d),
    "java": (java_version, java_short),
    "okhttp": (okhttp_version, okhttp_short),
    "go": (go_version, go_short),
    "node": (tool_version(["node", "--version"], r"(v\S+)", "node not installed (apt-get install nodejs)"), node_short),
    "pyca": (pyca_version, pyca_short),
}
# How many reports share a stack's scenarios: the slow ones (a browser per load, a client that retries a refused
# handshake until its connect timeout, a JVM per load) are split so that the run is as long as the fastest stacks'.
SHARDS = {"chromium": 4, "async-http-client": 3, "java": 2, "okhttp": 2}


def short_text(client, accepted, detail):
    if accepted:
        return "accepted"
    text = STACKS[client][1](detail) or detail
    return text if len(text) <= 60 else text[:57] + "..."


# --- The runner and the reports -------------------------------------------------------------------------------------


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


def scenario_files():
    """The catalog's scenario files and the matrix's own, by name: which names to serve, and each one's control."""
    files = sorted((ROOT / "Scenarios").glob("*.json")) + sorted((MATRIX / "Scenarios").glob("*.json"))
    return {entry["name"]: entry for entry in (json.loads(path.read_text()) for path in files)}


def pinned_scenarios(cli, store, document):
    """The pinning scenarios (those whose file says which published pins match, `expect.pins`): each with the published
    pins as `tls-fixtures pins` prints them (the `pinned` leaf key and the backup, not the CA: a pinner passes on any
    one pin of the chain) and the roots its file says the device trusts besides the CA (`expect.trustedRoots`, found in
    the store's ca/ once serve has made them)."""
    printed = run([cli, "pins", "pinned", "--json", "--dir", str(store)], timeout=120)
    if printed.returncode != 0:
        raise SystemExit("tls-fixtures pins failed: " + printed.stderr)
    material = json.loads(printed.stdout)
    pins = [f"sha256/{material['leaf']}", f"sha256/{material['backup']}"]
    return {entry["name"]: {"pins": pins, "roots": [str(store / "ca" / f"{root}.pem")
                                                    for root in entry["expect"].get("trustedRoots") or []]}
            for entry in document["scenarios"] if entry["expect"].get("pins") is not None}


def report_jobs(stacks, rows, plan):
    """The reports to run: for each stack, its scenarios' own rows (split into SHARDS[stack] reports) with the hosts
    they connect as, and each extra row as a report of its own. Each job: (stack, [(scenario, host)], out folder)."""
    jobs = []
    for stack in stacks:
        own = [(row["scenario"], row["host"]) for row in rows if row["primary"]
               and (plan is None or row["scenario"] in plan.get(stack, []))]
        count = min(SHARDS.get(stack, 1), max(len(own), 1))
        for index in range(count):
            shard = own[index::count]
            if shard:
                jobs.append((stack, shard, f"{stack}-{index}"))
        for number, row in enumerate(row for row in rows if not row["primary"]):
            if plan is None or row["scenario"] in plan.get(stack, []):
                jobs.append((stack, [(row["scenario"], row["host"])], f"{stack}-extra-{number}"))
    # The slowest stacks first, so none of them is left to run alone at the end.
    return sorted(jobs, key=lambda job: -SHARDS.get(job[0], 1))


def run_report(options, runner, config, job, cards):
    """`tls-fixtures report` for one job; its card (the parsed report.json), or SystemExit saying why there is none."""
    stack, rows, name = job
    template = [options.python_for_load, str(LOAD), "--config", str(config)]
    template += [f"--as={scenario}={host}" for scenario, host in rows if host != "localhost"]
    template += [stack, "{ca}", "{scenario}", "{port}"]
    out = cards / name
    arguments = [options.cli, "report", "--runner", runner, "--family", stack, "--timeout", "90", "--out", str(out),
                 "--client", " ".join(shlex.quote(word) if "{" not in word else word for word in template)]
    if stack == "okhttp":
        arguments.append("--trusts-assumed-roots")   # it is given pin-mitm's interception root: its pin must refuse
    for scenario, _ in rows:
        arguments += ["--scenario", scenario]
    started = time.time()
    completed = run(arguments, timeout=60 + 120 * len(rows))
    # report exits 3 when something is unexpected: a verdict, not a failure of the run.
    if completed.returncode not in (0, 3) or not (out / "report.json").exists():
        raise SystemExit(f"tls-fixtures report for {name} failed (exit {completed.returncode}): "
                         + (completed.stderr or completed.stdout)[-1500:])
    print(f"{name}: {len(rows)} scenarios in {time.time() - started:.1f} s", file=sys.stderr)
    return json.loads((out / "report.json").read_text())


# --- What the server saw ------------------------------------------------------------------------------------------
# Every fixture records each connection it accepts (ConnectionRecord: the ClientHello, how the handshake ended, the
# requests answered), and the card keeps them beside each verdict: the records of a fixture nobody else used.

PHASES = {"beforeClientHello": "before ClientHello", "afterClientHello": "after ClientHello",
          "afterServerFlight": "after server flight"}


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


def said_detail(said):
    """The client's words from a card: `exit 1: certificate has expired` → `certificate has expired`."""
    return re.sub(r"^exit -?\d+(: |$)", "", said["detail"]) or said["detail"]


def cell(client, entry):
    """One cell of docs/clients.json from a card's entry: what the client said, what its fixture saw, the verdict."""
    accepted = entry["said"]["accepted"]
    detail = said_detail(entry["said"])
    result = {"accepted": accepted, "detail": detail, "short": short_text(client, accepted, detail),
              "server": {"short": server_short([compact_record(r) for r in entry["records"]]),
                         "connections": [compact_record(r) for r in entry["records"]]},
              "expected": "accept" if entry["expected"] == "accept" else "reject",
              "verdict": entry["verdict"]}
    if entry["verdict"] != "as expected":
        result["why"] = entry["why"]
    return result


# --- Output ---------------------------------------------------------------------------------------------------------


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
    "the toolchain measured still fails): not a TLS refusal, which the fixture's empty record shows",
    ("ip-san", "::1", "okhttp"): "OkHttp 3.x compares an address host with the certificate's iPAddress names as "
    "text: `::1` against the JDK's `0:0:0:0:0:0:0:1` fails after the handshake (square/okhttp#5885, fixed in 4.5.0 "
    "by comparing canonical forms); the row's expectation is the scenario file's, which has no address rows",
}


def server_table(report, clients):
    """The second table: the same cells as each fixture saw them, and the cards' verdicts that are not as expected."""
    if not any("server" in result for row in report["rows"] for result in row["results"].values()):
        return []
    lines = ["", "## What the server saw", "",
             "The same cells from the fixture's side: the connection records the cell's own fixture kept (a report "
             "card's load: every scenario, and its control, loaded on a fresh fixture nobody else used, so every "
             "record in a cell is that client's connection for that row). `alert NAME(code)` is the alert the client "
             "sent after the server's certificate (the phase is named when it came earlier); `server sent …` the "
             "server's own alert (no shared version or suite); `closed …` a close without an alert; `completed, GET / "
             "200` a handshake that completed and the request answered; `never arrived` no connection at all. A cell "
             "lists each distinct outcome once, requests answered first, and says `repeated` where the client came "
             "back with the same one (AsyncHTTPClient retries a failed handshake about ten times, Chromium up to six; "
             "the counts and the order vary from run to run, and docs/clients.json keeps every record in order). "
             "`pyca` judges the chain between the server's flight and its own Finished, so its refusals are closes "
             "after the server's flight. Each cell's verdict is its report card's (`tls-fixtures report`, the "
             "differential judge): a refusal counts only at the scenario's step, for its reason, with the control "
             "accepted by the same client; ⚠ marks a cell whose verdict is not *as expected*, listed below.", "",
             "| scenario | host | " + " | ".join(f"`{c['id']}`" for c in clients) + " |",
             "| --- | --- | " + " | ".join("---" for _ in clients) + " |"]
    findings = []
    for row in report["rows"]:
        cells = []
        for client in clients:
            result = row["results"].get(client["id"]) or {}
            server = result.get("server")
            if server is None:
                cells.append("–")
                continue
            text = server["short"].replace("|", "\\|")
            if result.get("verdict", "as expected") != "as expected":
                text = f"⚠ {text}"
                note = FINDING_NOTES.get((row["scenario"], row["host"], client["id"]))
                findings.append(f"- `{row['scenario']}` ({row['host']}) × `{client['id']}`: {result['verdict']}: "
                                f"{result.get('why', '?')} (the client: {result['short']})"
                                + (f". {note}" if note else ""))
            cells.append(text)
        lines.append(f"| `{row['scenario']}` | {row['host']} | " + " | ".join(cells) + " |")
    lines += ["", "Where the card's verdict is not *as expected*:", ""]
    lines += findings or ["- nowhere: every refusal was seen at its step, and every acceptance was answered."]
    return lines


def markdown(report):
    clients = [c for c in report["clients"]]
    lines = ["# Client matrix", "",
             "<!-- Generated by `make matrix` (scripts/matrix.py); do not edit by hand. -->", "",
             "Every served scenario against every client, each as shipped with the built-in CA (from a fresh "
             "`tls-fixtures ca init`) as its only trusted root, connecting to `https://HOST:PORT/` with HOST resolved "
             "to loopback. **accepted** means the handshake, certificate verification for HOST and an HTTP 200; "
             "anything else is the client's own error, shortened (docs/clients.json has the full text). Each column is "
             "a report card (`tls-fixtures report --family CLIENT`); where a client differs from OpenSSL's verify "
             "result, the scenario file says so in `expect.clients`, and a test holds those to what the clients do; "
             "a cell marked ⚠ disagrees with its scenario file.", "",
             f"Measured {report['generated']} on {report['machine']}.", "",
             "Each scenario's own row connects as `localhost`, but for `impersonation` (a leaf for `www.apple.com` "
             "from the built-in CA, served from Matrix/Scenarios), which connects as `www.apple.com`, and "
             "`long-subdomain`, which connects by its 63-character label. The extra rows show where the name "
             "matters: the qualified name (under the CA's bare `test` constraint) and the addresses `ip-san` names; "
             "they are judged by the same scenario files.", "",
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
            cell_text = f"**{text}**" if result["accepted"] else text
            if result.get("verdict") == "unexpected":
                agrees = result["expected"] == ("accept" if result["accepted"] else "reject")
                cell_text = f"⚠ {cell_text} ({'at another step' if agrees else 'expected ' + result['expected']})"
            cells.append(cell_text)
        lines.append(f"| `{row['scenario']}` | {row['host']} | " + " | ".join(cells) + " |")
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


def machine():
    name = "?"
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                name = line.split("=", 1)[1].strip('"')
    except OSError:
        name = platform.system()
    return f"{name} {platform.machine()}"


def pick_python():
    for candidate in [sys.executable, str(ROOT / ".build-matrix/venv/bin/python")]:
        if Path(candidate).exists() and run([candidate, "-c", "import cryptography.x509.verification"]).returncode == 0:
            return candidate
    return sys.executable


# --- Main -----------------------------------------------------------------------------------------------------------


def rows_of(document, files, extra_rows):
    """Each served scenario's own row (in the catalog's order), then the extra rows; and what is not served, and why."""
    rows, not_served = [], []
    served = {entry["name"] for entry in document["scenarios"] if entry["status"] == "serving"}
    for entry in document["scenarios"]:
        if entry["name"] in OUT_OF_SCOPE:
            not_served.append({"scenario": entry["name"], "status": "out of scope",
                               "reason": OUT_OF_SCOPE[entry["name"]]})
        elif entry["status"] != "serving":
            not_served.append({"scenario": entry["name"], "status": entry["status"],
                               "reason": one_line(entry.get("reason") or entry["status"])})
        else:
            row = {"scenario": entry["name"], "host": row_host(files[entry["name"]]), "primary": True, "results": {}}
            if entry["expect"].get("clients"):
                row["differences"] = entry["expect"]["clients"]
            rows.append(row)
    if extra_rows:
        rows += [{"scenario": name, "host": host, "primary": False, "results": {}}
                 for name, host in EXTRA_ROWS if name in served]
    return rows, not_served


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", default=str(ROOT / ".build/debug/tls-fixtures"), help="the tls-fixtures executable")
    parser.add_argument("--swift-clients", default=str(ROOT / ".build-matrix/debug"),
                        help="where the Matrix package's products are")
    parser.add_argument("--python", default=None,
                        help="a Python with cryptography >= 43 (default: this one, else .build-matrix/venv)")
    parser.add_argument("--clients", default=",".join(STACKS), help="comma-separated subset of: " + ", ".join(STACKS))
    parser.add_argument("--scenarios", default="", help="comma-separated subset (default: every scenario)")
    parser.add_argument("--plan", metavar="FILE", help="JSON {client: [scenario, ...]}: each client runs only its own "
                        "scenarios (make test's matrix); --clients and --scenarios default to what the plan names")
    parser.add_argument("--port-base", type=int, default=29800, help="the runner's block of ports (default 29800)")
    parser.add_argument("--jobs", type=int, default=4, help="reports run at once (default 4)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", help="write docs/CLIENTS.md-style text here")
    parser.add_argument("--cards", help="keep every report card here (report.md, .json, .junit.xml per report)")
    parser.add_argument("--no-extra-rows", action="store_true", help="only each scenario's own row")
    parser.add_argument("--render", metavar="REPORT", help="run nothing: re-render an earlier --json report (the "
                        "short texts are recomputed from each client's full text, the verdicts kept)")
    options = parser.parse_args()
    if options.render:
        report = json.loads(Path(options.render).read_text())
        for row in report["rows"]:
            for client, result in row["results"].items():
                result["short"] = short_text(client, result["accepted"], result["detail"])
                result["server"]["short"] = server_short(result["server"]["connections"])
        write(options, report)
        return

    plan = json.loads(Path(options.plan).read_text()) if options.plan else None
    if plan is not None:
        options.clients = options.clients if "--clients" in sys.argv else ",".join(plan)
        options.scenarios = options.scenarios or ",".join(sorted({s for names in plan.values() for s in names}))
    chosen = [c.strip() for c in options.clients.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in STACKS]
    if unknown:
        raise SystemExit(f"unknown client {', '.join(unknown)}: use {', '.join(STACKS)}")
    if not Path(options.cli).exists():
        raise SystemExit(f"{options.cli} not found: build it first (swift build)")
    options.python_for_load = options.python or pick_python()

    work = Path(tempfile.mkdtemp(prefix="tls-fixtures-matrix-"))
    store = work / "store"
    initialized = run([options.cli, "ca", "init", "--dir", str(store)], timeout=120)
    if initialized.returncode != 0:
        raise SystemExit("ca init failed: " + initialized.stderr)
    files = scenario_files()
    names = [n.strip() for n in options.scenarios.split(",") if n.strip()]
    # The runner serves what the reports load: the scenarios, and their controls.
    served = sorted(set(names) | {files[n]["expect"]["refusal"]["control"] for n in names
                                  if (files.get(n, {}).get("expect") or {}).get("refusal")}) if names else []
    log = open(work / "serve.log", "w")
    server, document = serve(options.cli, store, options.port_base, served, log)
    try:
        report = measure(options, chosen, document, files, plan, work, store)
    finally:
        stop(server)
        log.close()
    write(options, report)
    findings = [(row["scenario"], row["host"], client, result) for row in report["rows"]
                for client, result in row["results"].items() if result["verdict"] != "as expected"]
    for scenario, host, client, result in findings:
        print(f"{result['verdict']}: {scenario} ({host}) x {client}: {result.get('why')}", file=sys.stderr)
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
              f"each with the reason, from this report (\"clients\": [] when none does); then `make scenarios`",
              file=sys.stderr)
    # A scenario still being prepared, or one that failed, is a gap in the report, not a verdict.
    unjudged = [item for item in report["notServed"] if item["status"] in ("preparing", "failed", "listed")]
    for item in unjudged:
        print(f"{item['scenario']} was not served ({item['status']}): {item['reason']}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(report['rows'])} rows x {len(chosen) - len(missing)} clients; {len(findings)} cells not as expected; "
          f"{len(missing)} clients missing; {len(without)} scenarios without expect.clients", file=sys.stderr)
    if without or unjudged:
        sys.exit(1)


def measure(options, chosen, document, files, plan, work, store):
    rows, not_served = rows_of(document, files, extra_rows=not options.no_extra_rows)
    if plan is not None:
        rows = [row for row in rows if any(row["scenario"] in plan.get(client, []) for client in chosen)]
    # The library names the clients (MatrixClient); this script only knows how to prepare and render them.
    known = {client["id"]: client for client in document["clients"]}
    if set(known) != set(STACKS):
        raise SystemExit(f"scripts/matrix.py runs {sorted(STACKS)} but the catalog names {sorted(known)}")
    ctx = Context(work, str(store / "ca/root.pem"), options.swift_clients, options.python_for_load)
    clients = []
    for name in [client["id"] for client in document["clients"] if client["id"] in chosen]:
        version, reason = STACKS[name][0](ctx)
        clients.append({"id": name, "stack": known[name]["stack"], "summary": known[name]["summary"],
                        "status": "ok" if version else "missing", "version": version, "reason": reason})
    config = work / "load.json"
    config.write_text(json.dumps({
        "work": str(work), "swiftClients": str(ctx.swift_clients), "python": ctx.python,
        "nssDatabase": str(ctx.nss_database), "chromiumHome": str(ctx.chromium_home),
        "javaClasses": str(ctx.java_classes), "goClient": str(ctx.go_client),
        "pins": pinned_scenarios(options.cli, store, document)}))
    cards = Path(options.cards) if options.cards else work / "cards"
    runnable = [c["id"] for c in clients if c["status"] == "ok"]
    jobs = report_jobs(runnable, rows, plan)
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {pool.submit(run_report, options, document["dashboard"].rstrip("/"), config, job, cards): job
                   for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            stack, job_rows, _ = futures[future]
            entries = {entry["scenario"]: entry for entry in future.result()["entries"]}
            for scenario, host in job_rows:
                if scenario not in entries:
                    raise SystemExit(f"the card of {stack} has no {scenario}: the runner does not serve it")
                row = next(r for r in rows if r["scenario"] == scenario and r["host"] == host)
                row["results"][stack] = cell(stack, entries[scenario])
    # On standard error, not in the report: the committed report changes only when a verdict does.
    print(f"{len(jobs)} reports in {time.time() - started:.1f} s", file=sys.stderr)
    return {"generated": datetime.date.today().isoformat(), "machine": machine(), "clients": clients,
            "rows": rows, "notServed": not_served}


if __name__ == "__main__":
    main()
