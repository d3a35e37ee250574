#!/usr/bin/env bash
# Where one GET /book/{id} spends its CPU, by stage: records the server with
# `perf record --call-graph dwarf` for 3 s under `wrk -t2 -c16` GET load and
# attributes every sample to a stage (bench/ab/stages.py).
#
#   bench/ab/profile.sh BIN isolated|reuse CPU_US_PER_REQUEST [OUT.data]
#
# BIN must keep its symbols: build it with
#   CARGO_PROFILE_RELEASE_STRIP=false CARGO_TARGET_DIR=/tmp/book-prof cargo build --release --locked -p book-host
# (a separate target dir leaves target/release/book-host alone). The CPU
# figure (from bench/ab/ab.sh) turns each stage's share into us/request.
# AB_ROOT as in ab.sh.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${AB_ROOT:-$(dirname "$BENCH")}
bin=$1 mode=$2 cpu_us=$3 out=${4:-/tmp/book-prof-$$.data}
SECRET=bench-secret-0123456789abcdef0123456789abcdef
WORK=$(mktemp -d /tmp/book-prof.XXXXXX)
PID=
trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi; rm -rf "$WORK"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$BENCH/seed.py" "sqlite:$WORK/sqlite_db.db" ensure 10000 > /dev/null
extra=()
if [ "$mode" = reuse ]; then extra=(--max-instance-reuse 1000); fi
env SPIN_VARIABLE_SECRET_TOKEN="$SECRET" SPIN_VARIABLE_AUTH_USERNAME=bench SPIN_VARIABLE_AUTH_PASSWORD=bench-password \
    SPIN_VARIABLE_DB_HOST=127.0.0.1:5432 \
    "$bin" --from "$ROOT/spin.toml" --listen "127.0.0.1:$port" --state-dir "$WORK" "${extra[@]}" > "$WORK/log" 2>&1 &
PID=$!
for _ in $(seq 1 1200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null)" != 000 ] && break
    sleep 0.05
done
token=$(curl -s -X POST "http://127.0.0.1:$port/token" -H 'Content-Type: application/json' \
    -d '{"username":"bench","password":"bench-password"}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["token"])')
env BENCH_WRK_DIR="$BENCH/wrk" BENCH_TOKEN="$token" BENCH_IDS=10000 \
    wrk -t2 -c16 -d6s -s "$BENCH/wrk/get.lua" "http://127.0.0.1:$port" > "$WORK/wrk.txt" 2>&1 &
load=$!
sleep 1.5
perf record -q -F 997 --call-graph dwarf,16384 -p "$PID" -o "$out" -- sleep 3 > /dev/null 2>&1
wait "$load" || true
perf script -i "$out" -F comm,tid,ip,sym,dso 2> /dev/null | python3 "$BENCH/ab/stages.py" "$cpu_us"
