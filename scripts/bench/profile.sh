#!/usr/bin/env bash
# Instructions per request of the tls-fixtures server, counted by callgrind: repeatable even on a busy machine.
#
#   scripts/bench/profile.sh keepalive [N]    instructions per keep-alive request (TLS 1.2)
#   scripts/bench/profile.sh handshake [N]    instructions per full handshake + request (TLS 1.2, RSA-2048)
#   scripts/bench/profile.sh handshake10 [N]  the same for TLS 1.0 AES128-SHA, RSA-1024
#   PEER=nginx scripts/bench/profile.sh MODE [N]   the same for nginx (one process, same certificate and settings)
#
# Runs the server twice under callgrind (N and 2N requests) and reports the difference divided by N, so start-up
# and shut-down cancel out. Leaves callgrind.out files in bench-out/profile/ (callgrind_annotate reads them).
# Needs a release build: swift build -c release --product tls-fixtures-bench (and `make bench` once for bench-out/store).
set -euo pipefail
PATH="$PATH:/usr/sbin"   # nginx
cd "$(dirname "$0")/../.."
mode=${1:-keepalive}
n=${2:-2000}
bin=.build/release/tls-fixtures-bench
out=bench-out/profile
mkdir -p "$out" bench-out/materials
# Valgrind 3.19 cannot read the DWARF 5 the Swift toolchain emits: profile a copy without debug info (the symbol
# table stays, so callgrind still names every function).
strip --strip-debug -o "$out/tls-fixtures-bench" "$bin"
# The scenario files, and each peer's protocol and cipher for them (Sources/tls-fixtures-bench/Scenarios.swift).
"$bin" materials --store bench-out/store --out bench-out/materials >bench-out/materials/report.json
case "$mode" in
  keepalive) scenario=bench-tls12; keep=1 ;;
  handshake) scenario=bench-tls12; keep=0 ;;
  handshake10) scenario=bench-tls10; keep=0 ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac

peer=${PEER:-tls-fixtures}
setting() {   # $1: a field of this scenario's entry in the materials report
  python3 -c 'import json,sys; print(next(i for i in json.load(open(sys.argv[1]))["items"] if i["scenario"] == sys.argv[2])[sys.argv[3]])' \
    bench-out/materials/report.json "$scenario" "$1"
}

nginx_conf() {   # $1 port: one nginx process (no master), the settings scripts/bench/run.py gives nginx
  local prefix="$PWD/$out/nginx" protocols ciphers
  mkdir -p "$prefix/logs"
  protocols=$(setting nginxProtocols); ciphers=$(setting nginxCiphers)
  cat >"$prefix/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $prefix/nginx.pid; error_log $prefix/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; keepalive_requests 10000000; keepalive_timeout 60s;
  client_body_temp_path $prefix/tmp1; proxy_temp_path $prefix/tmp2; fastcgi_temp_path $prefix/tmp3; uwsgi_temp_path $prefix/tmp4; scgi_temp_path $prefix/tmp5;
  server {
    listen 127.0.0.1:$1 ssl; ssl_certificate $PWD/bench-out/materials/$scenario.pem; ssl_certificate_key $PWD/bench-out/materials/$scenario.key;
    ssl_protocols $protocols; ssl_ciphers '$ciphers'; ssl_prefer_server_ciphers on; ssl_session_cache off; ssl_session_tickets off;
    location / { default_type application/json; add_header Cache-Control no-store; return 200 '{"scenario":"$scenario"}\n'; }
  }
}
CONF
  echo "$prefix/nginx.conf"
}

measure() {
  local count=$1 file="$out/callgrind.$peer.$mode.$1.out" port
  : >"$out/serve.log"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$peer" = nginx ]; then
    local conf; conf=$(nginx_conf "$port")
    valgrind --tool=callgrind --callgrind-out-file="$file" nginx -p "$(dirname "$conf")" -e "$(dirname "$conf")/logs/error.log" \
      -c "$conf" >"$out/serve.log" 2>"$out/valgrind.log" &
  else
    valgrind --tool=callgrind --callgrind-out-file="$file" "$out/tls-fixtures-bench" serve --store bench-out/store --scenario "$scenario" \
      --port "$port" --loops 1 >"$out/serve.log" 2>"$out/valgrind.log" &
  fi
  local pid=$!
  for _ in $(seq 1 600); do
    if [ "$peer" = nginx ]; then
      python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$port)))" 2>/dev/null && break
    else
      grep -q '"port"' "$out/serve.log" 2>/dev/null && break
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$out/valgrind.log" >&2; exit 1; }
    sleep 0.1
  done
  if ! "$bin" load --port "$port" --scenario "$scenario" --requests "$count" --keepalive "$keep" >/dev/null; then
    kill -TERM "$pid"; exit 1
  fi
  kill -TERM "$pid"
  # nginx under valgrind only notices the signal when epoll_wait returns: wake it with connections.
  while kill -0 "$pid" 2>/dev/null; do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port), 1).close()" 2>/dev/null || true
    sleep 0.5
  done
  wait "$pid" || true
  # Total instructions (Ir) of the run.
  callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",","",$1); print $1; done=1}'
}

small=$(measure "$n")
large=$(measure $((2 * n)))
per=$(( (large - small) / n ))
echo "{\"peer\": \"$peer\", \"mode\": \"$mode\", \"requests\": $n, \"irSmall\": $small, \"irLarge\": $large, \"instructionsPerRequest\": $per}"
echo "hot spots: scripts/bench/callgrind-diff.py $out/callgrind.$peer.$mode.{$n,$((2 * n))}.out $n [--inclusive] | head -60" >&2
