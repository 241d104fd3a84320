#!/usr/bin/env python3
"""The control API under load (issue 27): how long `GET /api/fixtures` and a start of a prepared scenario take while
hostile requests and slow key generation are in flight. A figure for a closing note, not a test: it prints numbers.

    scripts/bench/hostile-api.py [--bin PATH/tls-fixtures] [--hostile 4] [--slow 2] [--name-bytes 1000000]

It starts `tls-fixtures serve ats-compliant` on a free port range with a store of its own (so ats-compliant's key
exists: that start needs no new key), measures `GET /api/fixtures` at rest, then sends HOSTILE requests each naming an
unknown scenario of NAME_BYTES bytes and SLOW inline RSA-8192 starts (a key each, made afresh), and while they are in
flight measures `GET /api/fixtures` every 100 ms and one `POST /api/fixtures {"scenario": "ats-compliant"}`.
A request the runner closed without answering, or that timed out, is reported by the exception's name.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port_base():
    """A base whose next 100 ports are free (serve's catalog and revocation ports live there)."""
    for _ in range(200):
        base = random.randrange(20000, 30000)  # below Linux's ephemeral range, where clients' ports come from
        free = True
        for port in range(base, base + 100):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    free = False
                    break
        if free:
            return base
    sys.exit("no free port range")


def request(port, method, path, body=None, timeout=600):
    """(status, seconds, body) of one request on a connection of its own; the status is the exception's name when
    the runner closed the connection without answering or the request timed out."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("localhost", port, timeout=timeout)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, time.monotonic() - started, data
    except (OSError, http.client.HTTPException) as error:
        return type(error).__name__, time.monotonic() - started, b""
    finally:
        connection.close()


def summary(seconds):
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return "none answered"
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return (f"n={len(ms)} min {ms[0]:.0f} ms, median {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, "
            f"max {ms[-1]:.0f} ms")


def line(outcome):
    status, took, data = outcome
    text = data.decode(errors="replace").strip()
    shown = (text[:100] + f"… ({len(data)} bytes)") if len(text) > 100 else text
    return f"{status} in {took * 1000:.0f} ms {shown}"


def measure(arguments, base):
    rest = [request(base, "GET", "/api/fixtures")[1] for _ in range(20)]
    print(f"binary: {arguments.bin}")
    print(f"GET /api/fixtures at rest: {summary(rest)}")

    results = {"hostile": [], "slow": [], "prepared": [], "get": []}
    lock = threading.Lock()

    def record(kind, outcome):
        with lock:
            results[kind].append(outcome)

    def hostile():
        body = json.dumps({"scenario": "a" * arguments.name_bytes})
        record("hostile", request(base, "POST", "/api/fixtures", body))

    def slow(index):
        body = json.dumps({"scenario": {
            "name": f"slow-{index}-{os.getpid()}", "group": "custom", "summary": "RSA-8192, made afresh",
            "tls": {}, "certificate": {"key": "rsa:8192"}, "expect": {"ats": "allow"}}, "ttl": 600})
        record("slow", request(base, "POST", "/api/fixtures", body))

    def prepared():
        time.sleep(1)  # once the load has arrived
        record("prepared", request(base, "POST", "/api/fixtures", json.dumps({"scenario": "ats-compliant"})))

    load = [threading.Thread(target=hostile) for _ in range(arguments.hostile)]
    load += [threading.Thread(target=slow, args=(i,)) for i in range(arguments.slow)]
    started = time.monotonic()
    for thread in load:
        thread.start()
    starter = threading.Thread(target=prepared)
    starter.start()
    time.sleep(0.5)
    while time.monotonic() - started < arguments.window and any(t.is_alive() for t in load):
        record("get", request(base, "GET", "/api/fixtures", timeout=120))
        time.sleep(0.1)
    sampled = time.monotonic() - started
    starter.join(timeout=600)
    for thread in load:
        thread.join(timeout=600)

    print(f"under load ({arguments.hostile} unknown names of {arguments.name_bytes} bytes, {arguments.slow} inline "
          f"RSA-8192 starts), GET sampled for {sampled:.0f} s:")
    answered = [took for status, took, _ in results["get"] if status == 200]
    failed = [f"{status} after {took:.1f} s" for status, took, _ in results["get"] if status != 200]
    print(f"  GET /api/fixtures: {summary(answered)}" + (f"; not answered: {failed}" if failed else ""))
    for outcome in results["prepared"]:
        print(f"  POST ats-compliant (its key exists): {line(outcome)}")
    for outcome in sorted(results["hostile"], key=lambda r: r[1]):
        print(f"  hostile name: {line(outcome)}")
    for status, took, data in sorted(results["slow"], key=lambda r: r[1]):
        detail = "" if status == 201 else " " + data.decode(errors="replace").strip()[:160]
        print(f"  inline RSA-8192: {status} in {took:.1f} s{detail}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "debug", "tls-fixtures"))
    parser.add_argument("--hostile", type=int, default=4)
    parser.add_argument("--slow", type=int, default=2)
    parser.add_argument("--name-bytes", type=int, default=1_000_000)
    parser.add_argument("--window", type=float, default=30, help="seconds to sample GET while the load runs")
    arguments = parser.parse_args()

    store = tempfile.mkdtemp(prefix="hostile-api-store-")
    base = free_port_base()
    serve = subprocess.Popen([arguments.bin, "serve", "ats-compliant", "--port-base", str(base), "--dir", store,
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        serve.stdout.readline()  # --json prints the catalog document once everything named listens
        measure(arguments, base)
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            print("serve did not stop within 30 s of SIGTERM: killed")
            serve.kill()
            serve.wait()
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
