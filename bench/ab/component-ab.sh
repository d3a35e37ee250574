#!/usr/bin/env bash
# A/B of two builds of the component (.wasm) under the same book-host, on
# one wrk scenario: the two take turns, ROUNDS times, each on a fresh server
# (a fresh instance per request) and a fresh SQLite database or the given
# PostgreSQL one. One line per run: requests/s, the server's CPU time per
# request (bench/procstat.py), p50, p99, errors.
#
#   bench/ab/component-ab.sh ROUNDS SCENARIO CONCURRENCY A.wasm B.wasm
#
# SCENARIO: a bench/wrk script taking no seeded data (token, floor).
# AB_PG_URL / AB_PG_HOSTPORT: run on that PostgreSQL database instead.
# AB_ENV: extra VAR=VALUE words for the server (e.g. LOGIN_MAX_FAILURES=0,
# or AUTH_PASSWORD_HASH=... made with `book-host hash-password` from
# "bench-password").
# Example (the login figures in the README's "Login protection"):
#   git worktree add /tmp/before <commit>; (cd /tmp/before && CARGO_TARGET_DIR=/tmp/before-target \
#     cargo build --release --locked --target wasm32-wasip2 -p book-catalog)
#   bench/ab/component-ab.sh 3 token 16 /tmp/before-target/wasm32-wasip2/release/book_catalog.wasm \
#     target/wasm32-wasip2/release/book_catalog.wasm
set -euo pipefail
BENCH=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(dirname "$BENCH")
rounds=$1 scenario=$2 conc=$3
shift 3
[ $# -eq 2 ] || { echo "usage: $0 ROUNDS SCENARIO CONCURRENCY A.wasm B.wasm" >&2; exit 2; }
SECRET=bench-secret-0123456789abcdef0123456789abcdef
WORK=$(mktemp -d /tmp/book-component-ab.XXXXXX)
PID=
trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for i in 1 2; do
    wasm=$(cd "$(dirname "${!i}")" && pwd)/$(basename "${!i}")
    sed "s#^source = .*#source = \"$wasm\"#" "$ROOT/spin.toml" > "$WORK/$i.toml"
done
threads=2
if [ "$conc" -lt 2 ]; then threads=1; fi
for round in $(seq 1 "$rounds"); do
    for i in 1 2; do
        port=$(free_port)
        state=$WORK/state-$i-$round
        mkdir -p "$state"
        pg=()
        if [ -n "${AB_PG_URL:-}" ]; then pg=(DB_URL="$AB_PG_URL" SPIN_VARIABLE_DB_HOST="$AB_PG_HOSTPORT"); fi
        # shellcheck disable=SC2086
        # The token scenario names a client per login in X-Forwarded-For; a
        # build from before trusted_proxy_hops reads TRUST_FORWARDED_FOR.
        env -i PATH="$PATH" SECRET_TOKEN="$SECRET" AUTH_USERNAME=bench AUTH_PASSWORD=bench-password \
            TRUSTED_PROXY_HOPS=1 TRUST_FORWARDED_FOR=true \
            "${pg[@]}" ${AB_ENV:-} \
            "$ROOT/target/release/book-host" --from "$WORK/$i.toml" --listen "127.0.0.1:$port" \
            --state-dir "$state" > "$state/log" 2>&1 &
        PID=$!
        for _ in $(seq 1 600); do
            [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null)" != 000 ] && break
            sleep 0.05
        done
        wrk_env=(BENCH_WRK_DIR="$BENCH/wrk" BENCH_USER=bench BENCH_PASS=bench-password BENCH_THREADS="$threads")
        env "${wrk_env[@]}" wrk -t1 -c4 -d1s -s "$BENCH/wrk/$scenario.lua" "http://127.0.0.1:$port" > /dev/null 2>&1 || true
        before=$(python3 "$BENCH/procstat.py" "$PID")
        out=$(env "${wrk_env[@]}" wrk -t"$threads" -c"$conc" -d3s --timeout 10s --latency \
            -s "$BENCH/wrk/$scenario.lua" "http://127.0.0.1:$port" | grep '^BENCH ' | sed 's/^BENCH //')
        after=$(python3 "$BENCH/procstat.py" "$PID")
        kill -INT "$PID"
        wait "$PID" 2>/dev/null || true
        PID=
        python3 -c '
import json, sys
r, b, a = (json.loads(x) for x in sys.argv[1:4])
cpu = (a["cpu_ticks"] - b["cpu_ticks"]) / a["clk_tck"] * 1e6 / max(r["requests"], 1)
errors = sum(r[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
print("%s c%s round %s %s: %.0f rps, cpu %.1f us/req, p50 %.2f ms, p99 %.2f ms, errors %d"
      % (sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], r["rps"], cpu, r["p50_us"] / 1000,
         r["p99_us"] / 1000, errors))' "$out" "$before" "$after" "$scenario" "$conc" "$round" "$( [ $i = 1 ] && echo A || echo B )"
    done
done
