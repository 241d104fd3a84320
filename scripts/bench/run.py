#!/usr/bin/env python3
"""make bench / make bench-quick: swift-tls-fixtures against nginx and `openssl s_server`.

Every comparison is a ratio of numbers measured in this run, with the same certificate, key, protocol, cipher
and load generator for every peer, session resumption off everywhere (and checked), and the same core split.
Writes BENCHMARKS.md (full mode) or bench-out/BENCHMARKS.quick.md (--quick) and bench-out/results.json.

Usage: scripts/bench/run.py [--quick] [--only SECTION,...] [--rounds N] [--duration S] [--bin DIR]
Sections: limit, startup, handshake, keepalive, prepare, firstrun, memory.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "bench-out")
# The benchmark scenarios and every peer's settings for them, as `tls-fixtures-bench materials` reports them
# (Sources/tls-fixtures-bench/Scenarios.swift is their one definition). Filled before any section runs.
SCENARIOS = {}
ANALYSIS_MARKER = "<!-- Everything below is kept when make bench rewrites this file. -->"
# Scenarios left out of the quick catalog: their keys take seconds to minutes to generate.
SLOW_SCENARIOS = {"rsa4096", "rsa8192"}
# issue 11: a first `serve` must answer with this many scenarios within seconds, the slow keys left to the background.
FIRST_RUN_SCENARIOS = 35

# The load generator's OpenSSL configuration (the same for every peer): TLS 1.0 and 1024-bit RSA need security
# level 0 on the client too. The system openssl.cnf is never touched; servers keep it.
CLIENT_OPENSSL_CONF = """openssl_conf = default_conf
[default_conf]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1
CipherString = DEFAULT:@SECLEVEL=0
"""


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(cmd, check=True, env=None, timeout=None, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, **kw)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port_free(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} still busy")


def wait_port_open(port, proc, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early ({proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def free_port_range(span):
    """A base port with base…base+span all free right now (serve puts every scenario at its offset from the base)."""
    import random
    for _ in range(100):
        base = random.randint(30000, 40000)
        try:
            sockets = []
            for port in range(base, base + span + 1):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no free range of {span + 1} ports")


def cpu_seconds(pid):
    """utime + stime of `pid` and its children (nginx's workers), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, pids = 0, [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / ticks


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def latest_rates(runs):
    """One log line: each peer's rate in the round just run."""
    return ", ".join(f"{p} {r[-1]['rate']:.0f}/s ({r[-1]['perCPUSecond']:.0f}/CPU-s)" for p, r in runs.items())


def median_rates(runs):
    """Each peer's median wall-clock rate and median rate per server CPU-second over the rounds."""
    return ({p: statistics.median(x["rate"] for x in r) for p, r in runs.items()},
            {p: statistics.median(x["perCPUSecond"] for x in r) for p, r in runs.items()})


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.bin = os.path.abspath(args.bin)
        self.bench = os.path.join(self.bin, "tls-fixtures-bench")
        self.cli = os.path.join(self.bin, "tls-fixtures")
        # The build folder's name (release, debug): a debug build's numbers are not comparable and the report says so.
        self.build = os.path.basename(os.path.normpath(self.bin))
        self.results = {"mode": "quick" if self.quick else "full", "build": self.build, "checks": []}
        self.store = os.path.join(OUT, "store")          # the benchmark scenarios' certificates
        self.catalog_store = os.path.join(OUT, "catalog-store")
        self.materials = os.path.join(OUT, "materials")
        self.s_server_dir = os.path.join(OUT, "s_server")   # s_server -HTTP serves files from its working directory
        self.logs = os.path.join(OUT, "logs")
        for d in (OUT, self.logs):
            os.makedirs(d, exist_ok=True)
        self.client_conf = os.path.join(OUT, "client-openssl.cnf")
        with open(self.client_conf, "w") as f:
            f.write(CLIENT_OPENSSL_CONF)
        self.client_env = dict(os.environ, OPENSSL_CONF=self.client_conf)
        # The core split: the load generator on CPU 0, every server on the others (all of them when there is one).
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:
            self.client_cpus, self.server_cpus = [cpus[0]], cpus[1:]
        else:
            self.client_cpus, self.server_cpus = cpus, cpus
        self.server_cores = len(self.server_cpus)
        self.rounds = args.rounds or (1 if self.quick else 3)
        self.duration = args.duration or (2 if self.quick else 10)
        self.connections = 32
        self.body = None

    # MARK: helpers

    def check(self, name, ok, detail=""):
        self.results["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
        log(f"  [{'ok' if ok else 'FAIL'}] {name}{': ' + detail if detail else ''}")

    def pin(self, cpus):
        return ["taskset", "-c", ",".join(map(str, cpus))] if shutil.which("taskset") else []

    def bench_json(self, *argv, timeout=None):
        result = run([self.bench, *argv], timeout=timeout)
        return json.loads(result.stdout.strip().splitlines()[-1])

    # MARK: peers

    def start_ours(self, scenario, port):
        cmd = self.pin(self.server_cpus) + [self.bench, "serve", "--store", self.store, "--scenario", scenario,
                                            "--port", str(port)]
        # NIO sizes its singleton group by the machine's cores, not the process's CPU affinity: give it one event loop
        # per server core, as nginx gets `worker_processes` = server cores (--loops 0 keeps NIO's own choice).
        loops = self.server_cores if self.args.loops is None else self.args.loops
        if loops:
            cmd += ["--loops", str(loops)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(self.logs, "ours.log"), "a"), text=True)
        ready = json.loads(proc.stdout.readline())
        self.results.setdefault("ourEventLoops", ready["loops"])
        return proc

    def nginx_conf(self, scenario, port, workers, session_cache=False, access_log=None):
        s = SCENARIOS[scenario]
        prefix = os.path.join(OUT, "nginx", f"{scenario}-{port}")
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        body = (self.body or '{"scenario":"nginx"}\n').replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        caching = ("ssl_session_cache shared:bench:1m; ssl_session_tickets on;" if session_cache
                   else "ssl_session_cache off; ssl_session_tickets off;")
        log_line = (f"log_format reuse '$ssl_session_reused $ssl_protocol $ssl_cipher'; access_log {access_log} reuse;"
                    if access_log else "access_log off;")
        conf = f"""daemon off;
master_process on;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 8192; multi_accept on; }}
http {{
  {log_line}
  keepalive_requests 10000000;
  keepalive_timeout 60s;
  client_body_temp_path {prefix}/tmp-body; proxy_temp_path {prefix}/tmp-proxy; fastcgi_temp_path {prefix}/tmp-fcgi;
  uwsgi_temp_path {prefix}/tmp-uwsgi; scgi_temp_path {prefix}/tmp-scgi;
  server {{
    listen 127.0.0.1:{port} ssl backlog=1024;
    ssl_certificate {self.materials}/{scenario}.pem;
    ssl_certificate_key {self.materials}/{scenario}.key;
    ssl_protocols {s['nginxProtocols']};
    ssl_ciphers {s['nginxCiphers']};
    ssl_prefer_server_ciphers on;
    {caching}
    location / {{
      default_type application/json;
      add_header Cache-Control no-store;
      add_header Access-Control-Allow-Origin *;
      add_header X-TLS-Fixture {scenario};
      return 200 '{body}';
    }}
  }}
}}
"""
        path = os.path.join(prefix, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        return ["nginx", "-p", prefix, "-e", os.path.join(prefix, "logs", "error.log"), "-c", path]

    def s_server_cmd(self, scenario, port):
        """`-HTTP` rather than `-www`: -www's page has no Content-Length, so wrk never sees a response end (it counts
        0 requests and only read errors). -HTTP serves a file (bench-out/s_server/bench) holding a complete response:
        the fixture's JSON body with Content-Length. It still closes after every response, like -www."""
        s = SCENARIOS[scenario]
        return ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", f"{self.materials}/{scenario}.pem",
                "-key", f"{self.materials}/{scenario}.key", *s["sServerArgs"], "-no_cache", "-no_ticket", "-HTTP", "-quiet"]

    def write_s_server_page(self):
        body = self.body or '{"scenario":"s_server"}\n'
        os.makedirs(self.s_server_dir, exist_ok=True)
        with open(os.path.join(self.s_server_dir, "bench"), "w", newline="") as f:
            f.write("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                    f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}")

    def start_peer(self, peer, scenario, port, **kw):
        if peer == "tls-fixtures":
            return self.start_ours(scenario, port)
        if peer == "nginx":
            cmd = self.nginx_conf(scenario, port, self.server_cores, **kw)
        else:
            cmd = self.s_server_cmd(scenario, port)
        proc = subprocess.Popen(self.pin(self.server_cpus) + cmd, stdout=subprocess.DEVNULL, cwd=self.s_server_dir,
                                stderr=open(os.path.join(self.logs, f"{peer}.log"), "a"))
        wait_port_open(port, proc)
        return proc

    def stop(self, proc, port):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        wait_port_free(port)

    def wrk(self, port, duration, close, connections=None, server=None):
        cmd = self.pin(self.client_cpus) + ["wrk", "-t1", "-c", str(connections or self.connections), "-d", f"{duration}s",
                                            "--timeout", "5s"]
        if close:
            cmd += ["-H", "Connection: close"]
        cmd.append(f"https://127.0.0.1:{port}/bench")
        cpu_before = cpu_seconds(server.pid) if server else 0
        out = run(cmd, env=self.client_env, timeout=duration + 30).stdout
        cpu = cpu_seconds(server.pid) - cpu_before if server else 0
        rate = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
        total = int(re.search(r"(\d+) requests in", out).group(1))
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        return {"rate": rate, "requests": total, "serverCPUSeconds": cpu,
                # Requests per second of server CPU: what the server costs, whatever else the machine was doing.
                "perCPUSecond": total / cpu if cpu > 0 else 0,
                "socketErrors": [int(x) for x in errors.groups()] if errors else [0, 0, 0, 0],
                "non2xx": int(non2xx.group(1)) if non2xx else 0}

    def handshake_facts(self, scenario, port):
        return self.bench_json("check", "--scenario", scenario, "--port", str(port), timeout=30)

    def resumption_count(self, scenario, port):
        """openssl s_client -reconnect: 6 connections offering the first session again; counts the resumed ones."""
        s = SCENARIOS[scenario]
        result = run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *s["clientArgs"], "-reconnect"],
                     check=False, env=self.client_env, input="", timeout=30)
        text = result.stdout
        return text.count("\nReused,"), text.count("\nNew,")

    # MARK: sections

    def environment(self):
        def first_line(cmd):
            try:
                r = run(cmd, check=False)
                return (r.stdout or r.stderr).strip().splitlines()[0]
            except Exception as e:  # noqa: BLE001
                return f"? ({e})"
        cpu = "?"
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        mem = "?"
        try:
            for line in open("/proc/meminfo"):
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
        except OSError:
            pass
        osname = platform.platform()
        try:
            for line in open("/etc/os-release"):
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
        commit = first_line(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], check=False).stdout.strip()
        self.results["environment"] = {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": osname, "kernel": platform.release(),
            "swift": first_line(["swift", "--version"]),
            "openssl": first_line(["openssl", "version"]),
            "nginx": first_line(["nginx", "-v"]),
            "wrk": first_line(["wrk", "-v"]).split(" [")[0],
            "commit": commit + (" (modified)" if dirty else ""),
            "serverCPUs": self.server_cpus, "clientCPUs": self.client_cpus,
            "loadBefore": loadavg(),
        }

    def section_limit(self):
        log("== openssl speed (RSA private-key operations, one core)")
        seconds = "1" if self.quick else "3"
        out = run(self.pin(self.server_cpus[:1]) + ["openssl", "speed", "-seconds", seconds, "rsa1024", "rsa2048"]).stdout
        speed = {}
        for bits, sign in re.findall(r"^rsa\s+(\d+) bits\s+[\d.]+s\s+[\d.]+s\s+([\d.]+)", out, re.M):
            speed[f"rsa{bits}"] = float(sign)
        self.results["speed"] = speed
        self.check("openssl speed reported RSA-2048 and RSA-1024 signs/s", "rsa2048" in speed and "rsa1024" in speed, str(speed))

    def section_startup(self):
        log("== start latency: start → first completed handshake")
        count = 30 if self.quick else 200
        scenario = "bench-tls12"
        results = {}
        ours = self.bench_json("startup", "--store", self.store, "--scenario", scenario, "--count", str(count), timeout=600)
        results["tls-fixtures"] = ours
        port = free_port()
        s_server = self.s_server_cmd(scenario, port)
        results["openssl s_server"] = self.bench_json("spawn-startup", "--scenario", scenario, "--count", str(count),
                                                      "--port", str(port), "--peer", "openssl s_server", "--", *s_server,
                                                      timeout=1200)
        port = free_port()
        nginx = self.nginx_conf(scenario, port, self.server_cores)
        results["nginx"] = self.bench_json("spawn-startup", "--scenario", scenario, "--count", str(count), "--port", str(port),
                                           "--peer", "nginx", "--log", os.path.join(self.logs, "nginx-startup.log"), "--",
                                           *nginx, timeout=1200)
        self.results["startup"] = results
        for peer, r in results.items():
            log(f"  {peer}: median {r['summary']['medianMs']:.3f} ms, p99 {r['summary']['p99Ms']:.3f} ms (n={r['summary']['count']})")
        self.check(f"start latency measured over {count} starts for 3 peers",
                   all(r["summary"]["count"] == count for r in results.values()))
        fingerprints = {r["facts"]["leafSHA256"] for r in results.values()}
        self.check("start-latency peers serve the same certificate", len(fingerprints) == 1)

    def fetch_body(self):
        port = free_port()
        proc = self.start_ours("bench-tls12", port)
        try:
            out = run(["curl", "-sk", f"https://127.0.0.1:{port}/bench"], check=False, timeout=10).stdout
            self.body = out if out.startswith("{") else None
        finally:
            self.stop(proc, port)
        self.write_s_server_page()

    def section_handshake(self):
        log(f"== full-handshake rate: new connection per request (wrk -t1 -c{self.connections} -H 'Connection: close', "
            f"{self.rounds}×{self.duration}s, load generator on CPU {self.client_cpus}, servers on CPU {self.server_cpus})")
        peers = ["tls-fixtures", "nginx", "openssl s_server"]
        results = {}
        for scenario in SCENARIOS:
            runs = {p: [] for p in peers}
            facts, resumed = {}, {}
            for rnd in range(self.rounds):
                for peer in peers:
                    port = free_port()
                    proc = self.start_peer(peer, scenario, port)
                    try:
                        if rnd == 0:
                            facts[peer] = self.handshake_facts(scenario, port)
                            resumed[peer] = self.resumption_count(scenario, port)
                            if not self.quick:
                                self.wrk(port, 1, close=True)   # warm-up
                        runs[peer].append(self.wrk(port, self.duration, close=True, server=proc))
                    finally:
                        self.stop(proc, port)
                log(f"  {scenario} round {rnd + 1}: " + latest_rates(runs))
            medians, per_cpu = median_rates(runs)
            results[scenario] = {"runs": runs, "median": medians, "perCPUSecond": per_cpu, "facts": facts, "reconnect": resumed,
                                 "ratioNginx": medians["tls-fixtures"] / medians["nginx"],
                                 "ratioSServer": medians["tls-fixtures"] / medians["openssl s_server"]}
            same = {(f["protocol"], f["cipher"], f.get("group"), f["leafSHA256"]) for f in facts.values()}
            self.check(f"{scenario}: every peer negotiates the same protocol, cipher, group and certificate", len(same) == 1,
                       "; ".join(f"{p}: {f['protocol']} {f['cipher']} {f.get('group') or '-'} {f['leafSHA256'][:12]}" for p, f in facts.items()))
            self.check(f"{scenario}: no peer resumes a session (s_client -reconnect)",
                       all(r[0] == 0 and r[1] > 0 for r in resumed.values()),
                       ", ".join(f"{p}: {r[0]} reused/{r[1]} new" for p, r in resumed.items()))
            errors = {p: sum(sum(r["socketErrors"]) + r["non2xx"] for r in runs[p]) for p in peers}
            self.check(f"{scenario}: handshake rates measured", all(medians[p] > 0 for p in peers),
                       ", ".join(f"{p} {medians[p]:.0f}/s ({errors[p]} errors)" for p in peers))
        self.results["handshake"] = results
        self.verify_load_generator_does_not_resume()

    def verify_load_generator_does_not_resume(self):
        """wrk resumes sessions when a server allows it (it keeps the last session and offers it again), so every
        server must refuse. Shown with nginx logging $ssl_session_reused: once with a cache and tickets on (wrk
        resumes), once exactly as measured (cache and tickets off: it must resume none)."""
        found = {}
        for label, caching in (("offered", True), ("measured", False)):
            port = free_port()
            access = os.path.join(self.logs, f"nginx-reuse-{label}.log")
            if os.path.exists(access):
                os.remove(access)
            proc = self.start_peer("nginx", "bench-tls12", port, session_cache=caching, access_log=access)
            try:
                self.wrk(port, 1, close=True, connections=4)
            finally:
                self.stop(proc, port)
            lines = open(access).read().splitlines() if os.path.exists(access) else []
            found[label] = {"requests": len(lines), "reused": sum(1 for l in lines if l.startswith("r "))}
        self.results["loadGeneratorResumption"] = found
        self.check("wrk resumes nothing against nginx as measured (cache and tickets off)",
                   found["measured"]["requests"] > 0 and found["measured"]["reused"] == 0,
                   f"{found['measured']['reused']} of {found['measured']['requests']} resumed; with a cache and tickets "
                   f"on, wrk resumed {found['offered']['reused']} of {found['offered']['requests']}")

    def section_keepalive(self):
        log(f"== keep-alive request rate (wrk -t1 -c{self.connections}, {self.rounds}×{self.duration}s)")
        scenario = "bench-tls12"
        peers = ["tls-fixtures", "nginx"]
        runs = {p: [] for p in peers}
        for rnd in range(self.rounds):
            for peer in peers:
                port = free_port()
                proc = self.start_peer(peer, scenario, port)
                try:
                    if rnd == 0 and not self.quick:
                        self.wrk(port, 1, close=False)   # warm-up
                    runs[peer].append(self.wrk(port, self.duration, close=False, server=proc))
                finally:
                    self.stop(proc, port)
            log(f"  round {rnd + 1}: " + latest_rates(runs))
        medians, per_cpu = median_rates(runs)
        self.results["keepalive"] = {"runs": runs, "median": medians, "perCPUSecond": per_cpu,
                                     "ratioNginx": medians["tls-fixtures"] / medians["nginx"],
                                     "bodyBytes": len(self.body or "")}
        self.check("keep-alive rates measured", all(v > 0 for v in medians.values()),
                   ", ".join(f"{p} {v:.0f}/s" for p, v in medians.items()))

    def section_prepare(self):
        log("== certificate preparation: the whole catalog on an empty store, then again")
        shutil.rmtree(self.catalog_store, ignore_errors=True)
        names = []
        if self.quick:
            names = [n for n in self.quick_catalog()]
        cmd = [self.cli, "prepare", "--json", "--dir", self.catalog_store, *names]
        t0 = time.time()
        cold = json.loads(run(cmd, timeout=3600).stdout)
        cold["wallSeconds"] = time.time() - t0
        key_files = [os.path.join(d, f) for d, _, fs in os.walk(self.catalog_store) for f in fs if f.endswith(".key")]
        t0 = time.time()
        warm = json.loads(run(cmd, timeout=600).stdout)
        warm["wallSeconds"] = time.time() - t0
        self.results["prepare"] = {"cold": cold, "warm": warm, "keyFiles": len(key_files), "subset": bool(names),
                                   "scenarios": len(cold["prepared"]) + len(cold["unsupported"])}
        log(f"  cold: {cold['keysGenerated']} keys, {cold['certificatesIssued']} certificates, {cold['wallSeconds']:.1f} s; "
            f"warm: {warm['keysGenerated']} keys, {warm['certificatesIssued']} certificates, {warm['wallSeconds']:.2f} s")
        self.check("cold preparation generates every key exactly once", cold["keysGenerated"] == len(key_files),
                   f"{cold['keysGenerated']} generated, {len(key_files)} key files in the store")
        self.check("warm preparation generates no key and issues no certificate",
                   warm["keysGenerated"] == 0 and warm["certificatesIssued"] == 0,
                   f"{warm['keysGenerated']} keys, {warm['certificatesIssued']} certificates")

    def section_firstrun(self):
        """issue 26: from an empty store to the dashboard answering with FIRST_RUN_SCENARIOS scenarios serving.

        Each round starts `serve` (every scenario, default options) on a new, empty store and asks, every 20 ms, for the
        dashboard's page and its /scenarios.json: the time is that of the first answer in which the page answered 200
        and at least FIRST_RUN_SCENARIOS scenarios were "serving" (each listening: a scenario says serving only once its
        port accepts). RSA key generation is a random search for primes, so rounds differ by a second or more: the
        median and the slowest round are reported."""
        log(f"== first run: empty store → the dashboard answering with {FIRST_RUN_SCENARIOS} scenarios serving "
            f"({self.rounds} round(s))")
        rounds = []
        for rnd in range(self.rounds):
            store = os.path.join(OUT, "firstrun-store")
            shutil.rmtree(store, ignore_errors=True)
            base = free_port_range(span=200)
            page = f"http://127.0.0.1:{base}/"
            # Not pinned: a first run on a developer's Mac has every core, and the slow keys use them in the background.
            t0 = time.time()
            proc = subprocess.Popen([self.cli, "serve", "--dir", store, "--port-base", str(base)],
                                    stdout=subprocess.DEVNULL,
                                    stderr=open(os.path.join(self.logs, f"firstrun-{rnd}.log"), "w"))
            dashboard = served = None
            serving = preparing = 0
            try:
                while time.time() - t0 < 600 and proc.poll() is None:
                    try:
                        with urllib.request.urlopen(page, timeout=2) as answer:
                            answered = answer.status == 200 and len(answer.read()) > 0
                        with urllib.request.urlopen(page + "scenarios.json", timeout=2) as answer:
                            document = json.load(answer)
                    except (OSError, ValueError):
                        time.sleep(0.02)
                        continue
                    now = time.time() - t0
                    dashboard = dashboard if dashboard is not None else now
                    serving = sum(1 for e in document["scenarios"] if e["status"] == "serving")
                    preparing = sum(1 for e in document["scenarios"] if e["status"] == "preparing")
                    if answered and serving >= FIRST_RUN_SCENARIOS:
                        served = now
                        break
                    time.sleep(0.02)
            finally:
                proc.terminate()
                proc.wait(timeout=60)
            rounds.append({"dashboardSeconds": dashboard, "servedSeconds": served, "serving": serving,
                           "preparing": preparing})
            log(f"  round {rnd + 1}: dashboard after {dashboard if dashboard is None else round(dashboard, 2)} s; "
                f"{serving} serving after {served if served is None else round(served, 2)} s, {preparing} preparing")
        done = [r["servedSeconds"] for r in rounds if r["servedSeconds"] is not None]
        self.results["firstrun"] = {
            "rounds": rounds,
            "servedSeconds": statistics.median(done) if len(done) == len(rounds) else None,
            "slowestSeconds": max(done) if done else None,
            "dashboardSeconds": statistics.median([r["dashboardSeconds"] for r in rounds
                                                   if r["dashboardSeconds"] is not None] or [0]),
        }
        self.check(f"first run: the dashboard answered with {FIRST_RUN_SCENARIOS} scenarios serving, every round",
                   len(done) == len(rounds), f"{len(done)} of {len(rounds)} rounds")

    def quick_catalog(self):
        scenario_dir = os.path.join(ROOT, "Scenarios")
        names = sorted(f[:-5] for f in os.listdir(scenario_dir) if f.endswith(".json"))
        return [n for n in names if n not in SLOW_SCENARIOS]

    def section_differential(self):
        """issue 34: one differential assertion on a warm runner (two leased fixtures started, `expired` and its
        control, one verifying load each, both fixtures' records read, the judgement, both stopped), and the same in
        process; target: median ≤ 50 ms through the runner."""
        log("== the differential check: expired and its control, through a warm serve and in process")
        store = os.path.join(OUT, "differential-store")
        shutil.rmtree(store, ignore_errors=True)
        base = free_port_range(100)
        proc = subprocess.Popen([self.cli, "serve", "ats-compliant", "--port-base", str(base), "--dir", store, "--json"],
                                stdout=subprocess.PIPE, stderr=open(os.path.join(self.logs, "differential-serve.log"), "a"),
                                text=True)
        try:
            proc.stdout.readline()   # serve's report: it listens
            ca = os.path.join(OUT, "differential-ca.pem")
            run([self.cli, "ca", "export", "--dir", store, "--out", ca, "--force"])
            count = 10 if self.quick else 50
            r = self.bench_json("differential", "--runner", f"http://localhost:{base}", "--store", store, "--ca", ca,
                                "--count", str(count), timeout=600)
        finally:
            self.stop(proc, base)
        self.results["differential"] = r
        log(f"  through serve: median {r['remote']['medianMs']:.1f} ms, p90 {r['remote']['p90Ms']:.1f} ms; "
            f"in process: median {r['inProcess']['medianMs']:.1f} ms (n={r['remote']['count']})")
        self.check("the differential check passed on expired and its control", "refused at the certificate" in r["verdict"],
                   r["verdict"][:200])

    def section_card(self):
        """issue 38: a whole report card (every scenario and its control) for curl, against a warm serve of the whole
        catalog; target ≤ 10 s."""
        log("== a report card for curl, every scenario and its control, on a warm runner")
        store = os.path.join(OUT, "differential-store")
        base = free_port_range(100)
        proc = subprocess.Popen([self.cli, "serve", "--port-base", str(base), "--dir", store, "--json"],
                                stdout=subprocess.PIPE, stderr=open(os.path.join(self.logs, "card-serve.log"), "a"),
                                text=True)
        try:
            proc.stdout.readline()
            run([self.cli, "wait", f"http://localhost:{base}", "--timeout", "900"], timeout=960)
            cmd = [self.cli, "report", "--runner", f"http://localhost:{base}", "--client",
                   "curl -sS --max-time 10 --cacert {ca} {url}", "--family", "curl", "--out", os.path.join(OUT, "card")]
            run(cmd, timeout=600)   # warm: the leases' certificates exist from here on
            times = []
            for _ in range(1 if self.quick else 3):
                t0 = time.time()
                out = run(cmd, timeout=600).stdout
                times.append(time.time() - t0)
        finally:
            self.stop(proc, base)
        summary = out.strip().splitlines()[-1]
        self.results["card"] = {"seconds": statistics.median(times), "runs": times, "summary": summary}
        log(f"  {summary}: median {statistics.median(times):.1f} s")
        self.check("curl's report card has nothing unexpected", " 0 unexpected" in summary, summary)

    def section_busy(self):
        """issue 35: a fixture's handshake latency with every preparation lane of its process making RSA-3072 keys, beside
        the same process idle: the CPU budget keeps key generation to the cores, so the event loop still answers."""
        log("== handshakes while every preparation lane is busy")
        count = 20 if self.quick else 100
        r = self.bench_json("busy-handshake", "--store", self.store, "--count", str(count), timeout=900)
        self.results["busy"] = r
        log(f"  idle: median {r['idle']['medianMs']:.1f} ms; busy ({r['jobs']} jobs queued, at most {r['mostRunning']} "
            f"running): median {r['busy']['medianMs']:.1f} ms, p90 {r['busy']['p90Ms']:.1f} ms")
        self.check("the CPU budget ran no more jobs than it has permits",
                   r["mostRunning"] <= max(2, len(os.sched_getaffinity(0))), str(r["mostRunning"]))

    def section_memory(self):
        log("== memory: one process holding 100 idle fixtures")
        if not os.path.isdir(self.catalog_store):
            self.section_prepare()
        names = self.quick_catalog() if self.quick else []
        r = self.bench_json("idle", "--store", self.catalog_store, "--count", "100", *names, timeout=600)
        self.results["memory"] = r
        log(f"  RSS {r['rssKiB'] / 1024:.1f} MiB with {r['fixtures']} fixtures of {r['distinctScenarios']} scenarios "
            f"(baseline {r['baselineRSSKiB'] / 1024:.1f} MiB)")
        self.check("100 idle fixtures started and measured", r["fixtures"] == 100 and r["rssKiB"], f"{r['rssKiB']} KiB")

    # MARK: report

    def report(self):
        r = self.results
        env = r["environment"]
        env["loadAfter"] = loadavg()
        lines = []
        add = lines.append
        title = "Benchmarks" if not self.quick else "Benchmarks (quick mode: short runs, for CI; numbers are indicative only)"
        if self.build != "release":
            title += f" — {self.build} build: the harness is checked, the numbers mean nothing"
        add(f"# {title}\n")
        add("Generated by `make bench` (scripts/bench/run.py, Sources/tls-fixtures-bench). Every ratio compares numbers "
            "measured in this one run, with the same certificate, key, protocol, cipher and load generator for every peer.\n")
        add(f"- Date: {env['date']}; commit {env['commit']}")
        add(f"- Machine: {env['cpu']}, {env['cores']} cores, {env['memory']}; {env['os']}, Linux {env['kernel']}")
        add(f"- Versions: {env['swift']}; {env['openssl']}; {env['nginx']}; {env['wrk']}")
        add(f"- Core split: the load generator (wrk -t1, and every client) on CPU {','.join(map(str, env['clientCPUs']))}; "
            f"every server on CPU {','.join(map(str, env['serverCPUs']))} (`taskset`), so each server has "
            f"{self.server_cores} core(s): nginx `worker_processes {self.server_cores}`, tls-fixtures NIO event loops: "
            f"{r.get('ourEventLoops', '?')}.")
        add(f"- Load average before/after: {env['loadBefore']:.2f} / {env['loadAfter']:.2f} (other work on the machine adds noise)")
        add(f"- Runs: {self.rounds} round(s) of {self.duration} s per peer, interleaved; the median is reported. "
            f"wrk -t1 -c{self.connections}; full handshakes use `Connection: close` (one handshake per request).\n")

        add("| measurement | tls-fixtures | nginx | openssl s_server | ratio | target | met |")
        add("| --- | --- | --- | --- | --- | --- | --- |")
        targets = []

        def row(name, ours, nginx, sserver, ratio, target, met):
            targets.append((name, met))
            add(f"| {name} | {ours} | {nginx} | {sserver} | {ratio} | {target} | {'yes' if met else ('n/a' if met is None else '**no**')} |")

        st = r.get("startup")
        if st:
            o, n, s = st["tls-fixtures"]["summary"], st["nginx"]["summary"], st["openssl s_server"]["summary"]
            row(f"start → first handshake, median (n={o['count']})", f"{o['medianMs']:.2f} ms", f"{n['medianMs']:.2f} ms",
                f"{s['medianMs']:.2f} ms", f"{s['medianMs'] / o['medianMs']:.0f}× faster than s_server",
                "≤ 5 ms and ≥ 10× faster than s_server", o["medianMs"] <= 5 and s["medianMs"] / o["medianMs"] >= 10)
            row("start → first handshake, p99", f"{o['p99Ms']:.2f} ms", f"{n['p99Ms']:.2f} ms", f"{s['p99Ms']:.2f} ms",
                f"{s['p99Ms'] / o['p99Ms']:.0f}×", "—", None)
        hs = r.get("handshake")
        speed = r.get("speed", {})
        if hs:
            for scenario, h in hs.items():
                m = h["median"]
                sp = speed.get(SCENARIOS[scenario]["speed"])
                limit = f"; limit {sp * self.server_cores:.0f}/s" if sp else ""
                c = h["perCPUSecond"]
                row(f"full handshakes/s, {SCENARIOS[scenario]['label']}{limit}", f"{m['tls-fixtures']:.0f}", f"{m['nginx']:.0f}",
                    f"{m['openssl s_server']:.0f}", f"{h['ratioNginx']:.2f}× nginx, {h['ratioSServer']:.2f}× s_server",
                    "≥ 1.0× nginx", h["ratioNginx"] >= 1.0)
                row("  … per server CPU-second", f"{c['tls-fixtures']:.0f}", f"{c['nginx']:.0f}", f"{c['openssl s_server']:.0f}",
                    f"{c['tls-fixtures'] / c['nginx']:.2f}× nginx", "—", None)
        ka = r.get("keepalive")
        if ka:
            m = ka["median"]
            c = ka["perCPUSecond"]
            row("keep-alive requests/s, TLS 1.2 (same scenario)", f"{m['tls-fixtures']:.0f}", f"{m['nginx']:.0f}", "—",
                f"{ka['ratioNginx']:.2f}× nginx", "≥ 0.8× nginx", ka["ratioNginx"] >= 0.8)
            row("  … per server CPU-second", f"{c['tls-fixtures']:.0f}", f"{c['nginx']:.0f}", "—",
                f"{c['tls-fixtures'] / c['nginx']:.2f}× nginx", "—", None)
        pr = r.get("prepare")
        if pr:
            c, w = pr["cold"], pr["warm"]
            what = "quick subset of the catalog" if pr["subset"] else "whole catalog"
            row(f"prepare {what} ({pr['scenarios']} scenarios), cold", f"{c['keysGenerated']} keys, {c['certificatesIssued']} certs, "
                f"{c['wallSeconds']:.1f} s", "—", "—", f"{pr['keyFiles']} key files", "every key exactly once",
                c["keysGenerated"] == pr["keyFiles"])
            row(f"prepare {what}, warm (second run)", f"{w['keysGenerated']} keys, {w['certificatesIssued']} certs, "
                f"{w['wallSeconds']:.2f} s", "—", "—", "—", "0 keys generated", w["keysGenerated"] == 0)
        fr = r.get("firstrun")
        if fr and fr["servedSeconds"] is not None:
            row(f"first run: empty store → dashboard answering with ≥ {FIRST_RUN_SCENARIOS} scenarios serving, median "
                f"(n={len(fr['rounds'])})", f"{fr['servedSeconds']:.1f} s", "—", "—",
                f"slowest {fr['slowestSeconds']:.1f} s; dashboard {fr['dashboardSeconds']:.2f} s", "≤ 5 s",
                fr["servedSeconds"] <= 5)
        df = r.get("differential")
        if df:
            row(f"differential check (expired + control: 2 starts, 2 loads, the judgement), median (n={df['remote']['count']})",
                f"{df['remote']['medianMs']:.1f} ms", "—", "—",
                f"p90 {df['remote']['p90Ms']:.1f} ms; in process {df['inProcess']['medianMs']:.1f} ms", "≤ 50 ms",
                df["remote"]["medianMs"] <= 50)
        cd = r.get("card")
        if cd:
            row(f"report card, curl, every scenario and its control, warm runner, median (n={len(cd['runs'])})",
                f"{cd['seconds']:.1f} s", "—", "—", cd["summary"], "≤ 10 s", cd["seconds"] <= 10)
        bz = r.get("busy")
        if bz:
            row("handshake with every preparation lane busy, median", f"{bz['busy']['medianMs']:.1f} ms", "—", "—",
                f"idle {bz['idle']['medianMs']:.1f} ms; p90 {bz['busy']['p90Ms']:.1f} ms; at most {bz['mostRunning']} "
                "jobs at once", "≤ 1 s", bz["busy"]["p90Ms"] <= 1000)
        mem = r.get("memory")
        if mem:
            row(f"resident size, 100 idle fixtures ({mem['distinctScenarios']} scenarios)", f"{mem['rssKiB'] / 1024:.1f} MiB",
                "—", "—", f"baseline {mem['baselineRSSKiB'] / 1024:.1f} MiB", "≤ 64 MiB", mem["rssKiB"] <= 64 * 1024)
        if speed:
            add("")
            add(f"The limit: `openssl speed` on one server core: RSA-2048 {speed.get('rsa2048', 0):.0f} signs/s, "
                f"RSA-1024 {speed.get('rsa1024', 0):.0f} signs/s; × {self.server_cores} server core(s) = "
                f"{speed.get('rsa2048', 0) * self.server_cores:.0f} and {speed.get('rsa1024', 0) * self.server_cores:.0f} "
                "full handshakes/s at most (each needs one private-key operation).")
        lg = r.get("loadGeneratorResumption", {})
        if hs:
            add("")
            add("Handshake details (checked, not assumed): " + "; ".join(
                f"{sc}: " + ", ".join(sorted({f"{f['protocol']} {f['cipher']} {f.get('group') or 'no ECDHE'}" for f in h["facts"].values()}))
                for sc, h in hs.items()) + ", the same leaf certificate (SHA-256 compared) from every peer. "
                "Session resumption: wrk does resume when a server lets it (against nginx with a cache and tickets on it "
                f"resumed {lg.get('offered', {}).get('reused', '?')} of {lg.get('offered', {}).get('requests', '?')} "
                "connections), so every server refuses: the fixtures have no cache and no tickets, nginx "
                "`ssl_session_cache off; ssl_session_tickets off;`, `s_server -no_cache -no_ticket`. Checked: "
                "`openssl s_client -reconnect` resumed 0 times on each peer, and wrk resumed "
                f"{lg.get('measured', {}).get('reused', '?')} of {lg.get('measured', {}).get('requests', '?')} connections "
                "against nginx as measured ($ssl_session_reused).")
        if st:
            add("")
            add(f"Start latency: tls-fixtures is `FixtureServer.start(scenario)` in process with the certificates already in "
                f"the store (the first start in a fresh process took {st['tls-fixtures']['firstMs']:.1f} ms); the peers are "
                "spawned with posix_spawn and polled with the same client until the first handshake completes.")
        checks = r["checks"]
        passed = sum(1 for c in checks if c["ok"])
        add("")
        add(f"Harness checks: {passed} of {len(checks)} passed" + ("" if passed == len(checks) else
            " — failed: " + "; ".join(c["name"] for c in checks if not c["ok"])))
        text = "\n".join(lines) + "\n"
        r["targets"] = [{"name": n, "met": m} for n, m in targets]
        return text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--duration", type=int)
    parser.add_argument("--loops", type=int, help="NIO event loops for the tls-fixtures server (default: one per server "
                                                 "core, like nginx's workers; 0: NIO's own choice)")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--output", help="markdown file (default: BENCHMARKS.md, or bench-out/BENCHMARKS.quick.md with --quick)")
    args = parser.parse_args()
    started = time.time()
    b = Bench(args)
    sections = [s for s in args.only.split(",") if s] or ["limit", "startup", "handshake", "keepalive", "prepare", "firstrun",
                                                         "memory", "differential", "card", "busy"]
    b.environment()
    log(f"bench: {b.results['mode']} mode; servers on CPU {b.server_cpus}, load generator on CPU {b.client_cpus}; "
        f"load average {b.results['environment']['loadBefore']:.2f}")
    report = run([b.bench, "materials", "--store", b.store, "--out", b.materials]).stdout
    SCENARIOS.update({item["scenario"]: item for item in json.loads(report)["items"]})
    b.fetch_body()
    for section in sections:
        t0 = time.time()
        try:
            getattr(b, f"section_{section}")()
        except Exception as e:  # noqa: BLE001 — a broken section is reported, the rest still runs
            b.check(f"section {section} ran", False, str(e))
        b.results.setdefault("sectionSeconds", {})[section] = round(time.time() - t0, 1)
        log(f"  ({section}: {time.time() - t0:.0f} s)")
    text = b.report()
    output = args.output or (os.path.join(OUT, "BENCHMARKS.quick.md") if args.quick else os.path.join(ROOT, "BENCHMARKS.md"))
    if args.only and not args.output:
        output = os.path.join(OUT, "BENCHMARKS.partial.md")
    # Hand-written analysis (profiles, fixes, before/after numbers) below the marker survives regeneration.
    if os.path.exists(output):
        previous = open(output).read()
        if ANALYSIS_MARKER in previous:
            text += "\n" + previous[previous.index(ANALYSIS_MARKER):]
    with open(output, "w") as f:
        f.write(text)
    b.results["seconds"] = time.time() - started
    with open(os.path.join(OUT, "results.json" if not args.quick else "results.quick.json"), "w") as f:
        json.dump(b.results, f, indent=2)
    print(text)
    checks = b.results["checks"]
    failed = sum(1 for c in checks if not c["ok"])
    print(f"{b.results['seconds']:.0f} s; written to {os.path.relpath(output, ROOT)} and bench-out/")
    print(f"bench: {len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
