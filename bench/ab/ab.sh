#!/usr/bin/env bash
# A/B of two (or more) book-host or book-native binaries on the same load:
# the binaries take turns, ROUNDS times, each on a fresh server, and every run
# prints one JSON line (requests/s, CPU us/request, context switches/request,
# p50, p99, errors); bench/ab/median.py summarises them.
#
#   bench/ab/ab.sh ROUNDS SCENARIO CONCURRENCY SECONDS MODE BIN [BIN...]
#
# SCENARIO: a bench/wrk script (get, post, put, delete, mix, token, floor).
# MODE: isolated | reuse (book-host, --max-instance-reuse 1000) | native
# (book-native) | floor-isolated | floor-reuse (bench/floor under book-host).
# AB_ROOT: the folder holding spin.toml and target/ (default: this checkout;
# point it at a copy to keep the .wasm fixed while others rebuild).
# AB_ENV: extra VAR=VALUE words for the server's environment.
# Example (the figures in the README's performance section):
#   bench/ab/ab.sh 3 get 16 3 isolated /tmp/old/book-host target/release/book-host | tee ab.txt
#   bench/ab/median.py ab.txt
set -euo pipefail
BENCH=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${AB_ROOT:-$(dirname "$BENCH")}
rounds=$1 scenario=$2 conc=$3 seconds=$4 mode=$5
shift 5
SECRET=bench-secret-0123456789abcdef0123456789abcdef
WORK=$(mktemp -d /tmp/book-ab.XXXXXX)
PID=
trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mkdir -p "$WORK/cache-component" "$WORK/cache-floor"
for round in $(seq 1 "$rounds"); do
    for bin in "$@"; do
        port=$(free_port)
        state=$WORK/state-$round-$(echo "$bin" | tr '/' '_')
        mkdir -p "$state"
        case $mode in
        native) command=("$bin" --listen "127.0.0.1:$port" --state-dir "$state") ;;
        floor-*) command=("$bin" --from "$ROOT/bench/floor/spin.toml" --listen "127.0.0.1:$port"
            --state-dir "$WORK/cache-floor") ;;
        *)
            ln -sfn "$WORK/cache-component" "$state/cache" # a warm compilation cache
            command=("$bin" --from "$ROOT/spin.toml" --listen "127.0.0.1:$port" --state-dir "$state")
            ;;
        esac
        if [[ $mode == *reuse ]]; then command+=(--max-instance-reuse 1000); fi
        if [[ $mode != floor-* ]]; then python3 "$BENCH/seed.py" "sqlite:$state/sqlite_db.db" ensure 10000 > /dev/null; fi
        # shellcheck disable=SC2086
        env ${AB_ENV:-} TRUSTED_PROXY_HOPS=1 SECRET_TOKEN="$SECRET" AUTH_USERNAME=bench AUTH_PASSWORD=bench-password \
            SPIN_VARIABLE_SECRET_TOKEN="$SECRET" SPIN_VARIABLE_AUTH_USERNAME=bench \
            SPIN_VARIABLE_AUTH_PASSWORD=bench-password SPIN_VARIABLE_DB_HOST=127.0.0.1:5432 \
            "${command[@]}" > "$state/log" 2>&1 &
        PID=$!
        for _ in $(seq 1 1200); do
            [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null)" != 000 ] && break
            sleep 0.05
        done
        token=
        if [[ $mode != floor-* ]]; then
            token=$(curl -s -X POST "http://127.0.0.1:$port/token" -H 'Content-Type: application/json' \
                -d '{"username":"bench","password":"bench-password"}' |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["token"])')
        fi
        extra=()
        if [ "$scenario" = delete ]; then
            first=$(python3 "$BENCH/seed.py" "sqlite:$state/sqlite_db.db" range 200000)
            extra=(BENCH_DELETE_FIRST="$first" BENCH_DELETE_COUNT=200000)
        fi
        warm=get
        if [[ $mode == floor-* ]]; then warm=floor; fi
        env BENCH_WRK_DIR="$BENCH/wrk" BENCH_TOKEN="$token" BENCH_IDS=10000 \
            wrk -t2 -c16 -d1s -s "$BENCH/wrk/$warm.lua" "http://127.0.0.1:$port" > /dev/null 2>&1 || true
        before=$(python3 "$BENCH/procstat.py" "$PID")
        out=$(env BENCH_WRK_DIR="$BENCH/wrk" BENCH_TOKEN="$token" BENCH_THREADS=2 BENCH_IDS=10000 "${extra[@]}" \
            wrk -t2 -c"$conc" -d"${seconds}s" --timeout 10s --latency -s "$BENCH/wrk/$scenario.lua" \
            "http://127.0.0.1:$port" 2>&1 || true)
        after=$(python3 "$BENCH/procstat.py" "$PID")
        python3 - "$(grep '^BENCH ' <<< "$out" | sed 's/^BENCH //')" "$before" "$after" "$bin" "$round" <<'PY'
import json, sys
r, b, a = (json.loads(x) for x in sys.argv[1:4])
errors = sum(r[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
print(json.dumps({
    "bin": sys.argv[4], "round": int(sys.argv[5]), "rps": round(r["rps"]),
    "cpu_us": round((a["cpu_ticks"] - b["cpu_ticks"]) / a["clk_tck"] * 1e6 / r["requests"], 1),
    "switches": round((a["switches"] - b["switches"]) / r["requests"], 2),
    "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000, "errors": errors}))
PY
        kill "$PID"
        wait "$PID" 2> /dev/null || true
        PID=
    done
done
