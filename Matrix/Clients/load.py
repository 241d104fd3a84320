#!/usr/bin/env python3
"""One load by one client stack of the client matrix: the command `tls-fixtures report --client` runs for each fixture.

Usage: load.py --config FILE [--as SCENARIO=HOST ...] STACK CA.pem SCENARIO PORT

It connects to the fixture on PORT (at 127.0.0.1, or at HOST itself when HOST is an address) as HOST — `localhost`, or
the name `--as` gives the scenario (`impersonation=www.apple.com`, `ip-san=::1`) — with CA.pem as the stack's only
trusted root, asks for `/`, prints one line in the stack's own words (`HTTP 200, TLSv1.3`, or its error) and exits 0
when it read an HTTP 200, 1 when it did not, 2 when the stack could not run at all. scripts/matrix.py writes the
config (where the built clients are, the NSS database, the pins) and renders docs/CLIENTS.md from the report cards.

The C tools (openssl s_client, curl, gnutls-cli, NSS's tstclnt, Chromium) are run here and their output summarised to
that line; the small clients beside this file and the Swift ones in Matrix/Sources already speak it. Each stack sends
a DNS name to 127.0.0.1 its own way (curl --resolve, Go's dialer, Chromium's host resolver rules, ...); URLSession,
which has none, runs in a private mount namespace whose /etc/hosts and CA bundle are the matrix's.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLIENTS = Path(__file__).resolve().parent
REQUEST = "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
TIMEOUT = 20
# URLSession on Linux trusts only libcurl's compiled-in CA bundle (swift-corelibs-foundation reads the
# URLSessionCertificateAuthorityInfoFile variable on Android only) and resolves names through the system.
CURL_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
OKHTTP_JARS = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]


def is_address(host):
    return ":" in host or re.fullmatch(r"[0-9.]+", host) is not None


def one_line(text):
    return " ".join(str(text).split())


def first_match(patterns, text, default=None):
    for pattern in patterns:
        match = re.search(pattern, text, re.M)
        if match:
            return match.group(1).strip()
    return default


def run(arguments, timeout=TIMEOUT, request=None, **kwargs):
    """`request`, when given, is the client's standard input: from a file, because tstclnt waits for ever at the end
    of a pipe."""
    if request is not None:
        with tempfile.TemporaryFile("w+") as stdin:
            stdin.write(request)
            stdin.seek(0)
            return run(arguments, timeout, stdin=stdin, **kwargs)
    try:
        return subprocess.run(arguments, capture_output=True, text=True, errors="replace", timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else expired.stdout or ""
        err = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr or ""
        return subprocess.CompletedProcess(arguments, 124, out, err + "\ntimed out")


# --- The C tools: each (accepted, detail) ---------------------------------------------------------------------------


def openssl(config, ca, host, port, scenario):
    """s_client as a strict client (verify errors end the handshake), with the system's default security level."""
    connect = f"[{host}]:{port}" if ":" in host else f"{host if is_address(host) else '127.0.0.1'}:{port}"
    arguments = ["openssl", "s_client", "-connect", connect, "-CAfile", ca, "-verify_return_error", "-ign_eof"]
    arguments += ["-verify_ip", host] if is_address(host) else ["-servername", host, "-verify_hostname", host]
    completed = run(arguments, request=REQUEST.format(host=host))
    output = completed.stdout + completed.stderr
    if completed.returncode == 0 and re.search(r"^HTTP/1\.1 200", output, re.M):
        return True, "HTTP 200, " + first_match([r"Protocol\s*:\s*(\S+)", r"New, (TLSv1\.3)"], output, "?")
    return False, first_match([r"^verify error:num=\d+:(.*)$", r"^(\S*error:[0-9A-F]{8}:.*)$"], output, output[-300:])


def curl(config, ca, host, port, scenario):
    """--cacert replaces the system bundle; --resolve sends the name to 127.0.0.1."""
    url_host = f"[{host}]" if ":" in host else host
    arguments = ["curl", "-sS", "--max-time", "15", "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}"]
    if not is_address(host):
        arguments += ["--resolve", f"{host}:{port}:127.0.0.1"]
    completed = run(arguments + [f"https://{url_host}:{port}/"])
    if completed.returncode == 0:
        return completed.stdout.strip() == "200", f"HTTP {completed.stdout.strip()}"
    return False, completed.stderr


def gnutls(config, ca, host, port, scenario):
    """gnutls-cli's defaults (its priority string NORMAL), the CA as the only trust file."""
    arguments = ["gnutls-cli", "--x509cafile", ca, "-p", str(port), "--verify-hostname", host]
    if not is_address(host):
        arguments += ["--sni-hostname", host]
    arguments.append(host if is_address(host) else "127.0.0.1")
    completed = run(arguments, request=REQUEST.format(host=host))
    output = completed.stdout + completed.stderr
    if re.search(r"^HTTP/1\.1 200", output, re.M) and "certificate is trusted" in output:
        return True, "HTTP 200, " + first_match([r"Description: \((TLS[^-)]*)"], output, "?")
    return False, first_match([r"Status: (The certificate is NOT trusted\..*)$", r"\*\*\* (Received alert.*)$",
                               r"\*\*\* (Fatal error.*)$", r"\*\*\* (.*failed.*)$"], output, output[-300:])


def nss(config, ca, host, port, scenario):
    """tstclnt with an NSS database that trusts the CA (scripts/matrix.py makes it); -a sets SNI and the name checked."""
    arguments = ["tstclnt", "-d", f"sql:{config['nssDatabase']}", "-p", str(port)]
    if is_address(host):
        arguments += ["-h", host, "-6" if ":" in host else "-4"]
    else:
        arguments += ["-h", "127.0.0.1", "-a", host, "-4"]
    completed = run(arguments, request=REQUEST.format(host=host))
    output = completed.stdout + completed.stderr
    if re.search(r"^HTTP/1\.1 200", output, re.M):
        return True, "HTTP 200"
    return False, first_match([r"^tstclnt: (.*)$"], output, output[-300:])


def chromium(config, ca, host, port, scenario):
    """Headless, with a profile of its own in a home whose NSS database trusts the CA (Chrome's verifier reads user
    trust from it), every name mapped to 127.0.0.1. Its exit status says nothing about the page, so the verdict is
    the page itself: accepted when the fixture's JSON is what Chromium shows; otherwise the net error it logged."""
    url_host = f"[{host}]" if ":" in host else host
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=config["work"])
    try:
        arguments = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     f"--user-data-dir={profile}",
                     "--host-resolver-rules=MAP * 127.0.0.1, EXCLUDE 127.0.0.1, EXCLUDE [::1]",
                     "--virtual-time-budget=10000", "--dump-dom", f"https://{url_host}:{port}/"]
        completed = run(arguments, timeout=45, env={**os.environ, "HOME": config["chromiumHome"]})
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if f'"scenario":"{scenario}"' in completed.stdout:
        return True, "page loaded"
    # Headless Chromium logs "Page load failed: net::ERR_CERT_DATE_INVALID" when the navigation itself fails.
    code = first_match([r"Page load failed: (net::ERR_[A-Z0-9_]+)", r"\b(net::ERR_[A-Z0-9_]+)", r"(NET::ERR_[A-Z0-9_]+)"],
                       completed.stderr + completed.stdout)
    return False, code or "no page: " + (completed.stderr or completed.stdout)[-300:]


# --- The clients that speak the line themselves: CLIENT CA.pem HOST PORT --------------------------------------------


def swift_product(name):
    def command(config, ca, host, port, scenario):
        return [str(Path(config["swiftClients"]) / name), ca, host, str(port)]
    return command


def urlsession(config, ca, host, port, scenario):
    """In a private mount namespace where libcurl's CA bundle is the CA and /etc/hosts maps HOST to loopback: the
    machine itself is never changed."""
    hosts = Path(tempfile.mkstemp(prefix="hosts-", dir=config["work"])[1])
    hosts.write_text(("" if is_address(host) else f"127.0.0.1\t{host}\n") + "::1\tlocalhost\n")
    script = f'mount --bind "$1" {CURL_CA_BUNDLE} && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"'
    prefix = ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    return prefix + ["sh", "-c", script, "sh", ca, str(hosts)] + swift_product("matrix-urlsession")(
        config, ca, host, port, scenario)


def java(config, ca, host, port, scenario):
    return ["java", "-cp", config["javaClasses"], "MatrixClient", ca, host, str(port)]


def okhttp(config, ca, host, port, scenario):
    """The pinning scenarios get a CertificatePinner (the published pinned key and the backup) and the roots their
    file says the device trusts (pin-mitm's interception root), so there the pin, not the trust, decides."""
    arguments = ["java", "-cp", ":".join(OKHTTP_JARS + [config["javaClasses"]]), "OkHttpMatrixClient", ca, host,
                 str(port)]
    pinned = config.get("pins", {}).get(scenario)
    if pinned:
        arguments.append(",".join(pinned["pins"]))
        if pinned["roots"]:
            arguments.append(",".join(pinned["roots"]))
    return arguments


def go(config, ca, host, port, scenario):
    return [config["goClient"], ca, host, str(port)]


def node(config, ca, host, port, scenario):
    return ["node", str(CLIENTS / "node-client.mjs"), ca, host, str(port)]


def pyca(config, ca, host, port, scenario):
    return [config["python"], str(CLIENTS / "pyca-verify.py"), ca, host, str(port)]


TOOLS = {"openssl": openssl, "curl": curl, "gnutls": gnutls, "nss": nss, "chromium": chromium}
CLIENT_COMMANDS = {"swift-nio-ssl": swift_product("matrix-nio-ssl"), "async-http-client": swift_product("matrix-ahc"),
                   "urlsession": urlsession, "java": java, "okhttp": okhttp, "go": go, "node": node, "pyca": pyca}
STACKS = list(TOOLS) + list(CLIENT_COMMANDS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="the JSON scripts/matrix.py writes")
    parser.add_argument("--as", dest="hosts", action="append", default=[], metavar="SCENARIO=HOST",
                        help="connect to SCENARIO's fixtures as HOST (default: localhost); repeatable")
    parser.add_argument("stack", choices=STACKS)
    parser.add_argument("ca")
    parser.add_argument("scenario")
    parser.add_argument("port", type=int)
    options = parser.parse_args()
    config = json.loads(Path(options.config).read_text())
    hosts = dict(item.split("=", 1) for item in options.hosts)
    host = hosts.get(options.scenario, "localhost")
    if options.stack in TOOLS:
        accepted, detail = TOOLS[options.stack](config, options.ca, host, options.port, options.scenario)
        print(one_line(detail))
        sys.exit(0 if accepted else 1)
    arguments = CLIENT_COMMANDS[options.stack](config, options.ca, host, options.port, options.scenario)
    completed = run(arguments, timeout=60)
    line = next((text for text in completed.stdout.splitlines() if text.strip()), "")
    if completed.returncode not in (0, 1) or not line:
        # The client could not run (missing, or a usage error): what it said on standard error, never a verdict.
        print(one_line(f"{Path(arguments[0]).name} could not run (exit {completed.returncode}): "
                       + (completed.stderr or completed.stdout)[-300:]))
        sys.exit(2)
    print(one_line(line))
    sys.exit(completed.returncode)


if __name__ == "__main__":
    main()
