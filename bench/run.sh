#!/usr/bin/env bash
# The load benchmark (`make bench`). Serves the Book Catalog on loopback in
# each comparator and drives it with wrk at concurrency 1, 16 and 64:
#   native     bench/native (book-native): the same core, hyper + rusqlite /
#              tokio-postgres, no WebAssembly
#   floor      bench/floor under book-host: a component answering a fixed
#              envelope, the price of an instance per request
#   isolated   the component under book-host, a fresh instance per request
#   reuse      the component under book-host --max-instance-reuse N (when the
#              host has the flag)
#   spin       when there is a Spin binary ($SPIN, else `spin` on PATH): real
#              Spin (`spin up`) serving
#              the same .wasm files, the floor and the component (otherwise
#              the run says it skipped them)
# Every scenario runs on SQLite and on a throwaway PostgreSQL cluster.
# Results: bench/results/latest.md and latest.json (bench/report.py), the
# console log in bench/results/latest.log.
#
# Knobs (environment): BENCH_DURATION (seconds per run, default 2),
# BENCH_CONCURRENCY (default "1 16 64"), BENCH_STORES (default
# "sqlite postgres"), BENCH_COMPARATORS (default "native floor isolated
# reuse spin"), BENCH_REUSE (instances reused in reuse mode, default 1000),
# BENCH_NO_BUILD=1 (use the binaries as they are), BENCH_HOST_BIN and
# BENCH_NATIVE_BIN (other binaries to measure, e.g. an older build).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench
RESULTS=$BENCH/results
HOST_BIN=${BENCH_HOST_BIN:-$ROOT/target/release/book-host}
NATIVE_BIN=${BENCH_NATIVE_BIN:-$ROOT/target/release/book-native}
COMPONENT_WASM=$ROOT/target/wasm32-wasip2/release/book_catalog.wasm
FLOOR_WASM=$ROOT/target/wasm32-wasip2/release/book_floor.wasm

DURATION=${BENCH_DURATION:-2}
CONCURRENCY=${BENCH_CONCURRENCY:-1 16 64}
STORES=${BENCH_STORES:-sqlite postgres}
COMPARATORS=${BENCH_COMPARATORS:-native floor isolated reuse spin}
REUSE=${BENCH_REUSE:-1000}
WRK_TIMEOUT=10s

SECRET=bench-secret-0123456789abcdef0123456789abcdef
USER_NAME=bench
USER_PASS=bench-password

START_EPOCH=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
COMMAND="bench/run.sh"
for knob in BENCH_DURATION BENCH_CONCURRENCY BENCH_STORES BENCH_COMPARATORS BENCH_REUSE BENCH_NO_BUILD BENCH_HOST_BIN BENCH_NATIVE_BIN; do
    if [ -n "${!knob:-}" ]; then COMMAND="$knob=\"${!knob}\" $COMMAND"; fi
done
mkdir -p "$RESULTS"
exec > >(tee "$RESULTS/latest.log") 2>&1

log() { printf '[bench %3ds] %s\n' "$(( $(date +%s) - START_EPOCH ))" "$*"; }

# ---------------------------------------------------------------- tools
if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
for tool in wrk curl python3 psql; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    log "building book-native and the floor component"
    cargo build --release --locked -q -p book-native
    cargo build --release --locked -q --target wasm32-wasip2 -p book-floor
    if [ ! -x "$HOST_BIN" ] || [ ! -f "$COMPONENT_WASM" ]; then
        log "building the component and book-host"
        cargo build --release --locked -q --target wasm32-wasip2 -p book-catalog
        cargo build --release --locked -q -p book-host
    fi
fi
[ -x "$NATIVE_BIN" ] || { echo "bench: $NATIVE_BIN is missing" >&2; exit 1; }

HOST_AVAILABLE=0
REUSE_SUPPORTED=0
if [ -x "$HOST_BIN" ]; then
    HOST_AVAILABLE=1
    if "$HOST_BIN" --help 2>&1 | grep -q -- '--max-instance-reuse'; then
        REUSE_SUPPORTED=1
    fi
fi
# Real Spin, when there is one ($SPIN, else `spin` on PATH); SPIN_STATUS goes
# into the report.
SPIN_BIN=${SPIN:-$(command -v spin || true)}
if [[ " $COMPARATORS " != *" spin "* ]]; then
    SPIN_STATUS="not requested (BENCH_COMPARATORS)"
elif [ -n "$SPIN_BIN" ]; then
    SPIN_STATUS="$("$SPIN_BIN" --version 2>/dev/null | head -n 1) at $SPIN_BIN"
else
    SPIN_STATUS="skipped: no spin binary on PATH"
fi
HOST_HAS_STATE_DIR=0
if [ "$HOST_AVAILABLE" = 1 ] && "$HOST_BIN" --help 2>&1 | grep -q -- '--state-dir'; then
    HOST_HAS_STATE_DIR=1
fi

# ---------------------------------------------------------------- run state
WORK=$(mktemp -d /tmp/book-bench.XXXXXX)
chmod 755 "$WORK" # the PostgreSQL cluster inside runs as user postgres
RAW=$WORK/raw
mkdir -p "$RAW"
RUNS=$WORK/runs.jsonl
SERVERS=$WORK/servers.jsonl
: > "$RUNS"
: > "$SERVERS"
SERVER_PID=
MEASURE_PID=
PG_DIR=$WORK/pg
PG_URL=

cleanup() {
    local status=$?
    stop_server || true
    if [ -n "$PG_URL" ]; then
        "$ROOT/scripts/pg-cluster.sh" stop "$PG_DIR" || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

proc_kb() { # proc_kb PID FIELD: a /proc/PID/status figure in kB (0 if gone)
    local key value rest
    while read -r key value rest; do
        if [ "$key" = "$2:" ]; then echo "$value"; return; fi
    done < "/proc/$1/status" 2>/dev/null || true
    echo 0
}

# ---------------------------------------------------------------- servers
# start_server COMPARATOR MODE STORE: starts it, waits until it has served a
# request, and sets SERVER_PID, BASE, TOKEN, STORE_SPEC, START_MS.
start_server() {
    local comparator=$1 mode=$2 store=$3
    local port state db_url="" db_host="127.0.0.1:5432"
    port=$(free_port)
    if [ "$comparator" = native ]; then
        state=$WORK/state-$comparator-$mode-$store
    elif [ "$mode" = spin ]; then
        # Spin keeps its logs (logs/) and the database here (--state-dir).
        state=$WORK/state-spin-$comparator
        rm -f "$state"/sqlite_db.db "$state"/sqlite_db.db-wal "$state"/sqlite_db.db-shm
    else
        # book-host keeps its compilation cache in the state dir: one dir per
        # component keeps the cache warm; only the database starts afresh.
        state=$WORK/state-host-$comparator
        rm -f "$state"/sqlite_db.db "$state"/sqlite_db.db-wal "$state"/sqlite_db.db-shm
    fi
    mkdir -p "$state"
    BASE=http://127.0.0.1:$port
    if [ "$store" = postgres ]; then
        db_url=$PG_URL
        db_host=$PG_HOSTPORT
        STORE_SPEC=$PG_URL
        python3 "$BENCH/seed.py" "$STORE_SPEC" reset
    else
        STORE_SPEC=sqlite:$state/sqlite_db.db
    fi
    local -a command
    case $comparator in
    native)
        command=("$NATIVE_BIN" --listen "127.0.0.1:$port" --state-dir "$state")
        ;;
    floor | component)
        local manifest=$ROOT/spin.toml
        if [ "$comparator" = floor ]; then manifest=$BENCH/floor/spin.toml; fi
        if [ "$mode" = spin ]; then
            # `spin up` runs the HTTP trigger in a child process (`spin
            # trigger http`); the options `up` does not know (--listen,
            # --state-dir) pass through to it, so they come last. Variables
            # come from SPIN_VARIABLE_* below; -e gives the component the
            # same plain environment book-host gives it.
            command=("$SPIN_BIN" up --from "$manifest"
                -e "SECRET_TOKEN=$SECRET" -e "AUTH_USERNAME=$USER_NAME" -e "AUTH_PASSWORD=$USER_PASS")
            if [ -n "$db_url" ]; then command+=(-e "DB_URL=$db_url"); fi
            command+=(--listen "127.0.0.1:$port" --state-dir "$state")
        else
        command=("$HOST_BIN" --from "$manifest" --listen "127.0.0.1:$port")
        if [ "$HOST_HAS_STATE_DIR" = 1 ]; then command+=(--state-dir "$state"); fi
        if [ "$mode" = reuse ]; then command+=(--max-instance-reuse "$REUSE"); fi
        fi
        ;;
    esac
    local started=$(now_ms)
    # TRUSTED_PROXY_HOPS=1: the token scenario names a client of its own
    # per login in X-Forwarded-For (bench/wrk/token.lua).
    env SECRET_TOKEN="$SECRET" AUTH_USERNAME="$USER_NAME" AUTH_PASSWORD="$USER_PASS" DB_URL="$db_url" \
        TRUSTED_PROXY_HOPS=1 SPIN_VARIABLE_TRUSTED_PROXY_HOPS=1 \
        SPIN_VARIABLE_SECRET_TOKEN="$SECRET" SPIN_VARIABLE_AUTH_USERNAME="$USER_NAME" \
        SPIN_VARIABLE_AUTH_PASSWORD="$USER_PASS" SPIN_VARIABLE_DB_URL="$db_url" \
        SPIN_VARIABLE_DB_HOST="$db_host" \
        "${command[@]}" > "$state/server.log" 2>&1 &
    SERVER_PID=$!
    MEASURE_PID=$SERVER_PID
    SERVER_LOG=$state/server.log
    SERVER_DESC="$comparator/$mode/$store"
    # Served = any HTTP answer (the component answers GET / with a 404).
    local deadline=$(( started + 120000 ))
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/" 2>/dev/null)" != 000 ]; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null || [ "$(now_ms)" -gt "$deadline" ]; then
            echo "bench: $SERVER_DESC did not start; its log:" >&2
            cat "$state/server.log" >&2
            exit 1
        fi
        sleep 0.005
    done
    START_MS=$(( $(now_ms) - started ))
    if [ "$mode" = spin ]; then
        # RSS is the serving child's (CPU and switches count the whole tree).
        MEASURE_PID=$(python3 -c 'import json, sys; p = json.loads(sys.argv[1])["pids"]; print(p[1] if len(p) > 1 else p[0])' \
            "$(python3 "$BENCH/procstat.py" "$SERVER_PID")")
    fi
    TOKEN=
    if [ "$comparator" != floor ]; then
        TOKEN=$(curl -s -X POST "$BASE/token" -H 'Content-Type: application/json' \
            -d "{\"username\":\"$USER_NAME\",\"password\":\"$USER_PASS\"}" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["token"])') || {
            echo "bench: no token from $SERVER_DESC; its log:" >&2
            cat "$state/server.log" >&2
            exit 1
        }
    fi
    log "started $SERVER_DESC (pid $SERVER_PID) in ${START_MS} ms"
}

# Sets STOPPED_HWM (the server's peak RSS over its life, kB).
stop_server() {
    STOPPED_HWM=0
    if [ -n "$SERVER_PID" ]; then
        STOPPED_HWM=$(proc_kb "${MEASURE_PID:-$SERVER_PID}" VmHWM)
        # The server and anything it started (spin up's trigger process):
        # SIGINT first, which `spin up` forwards to its children.
        local tree pid
        tree=$(python3 -c 'import json, sys; print(" ".join(map(str, json.loads(sys.argv[1])["pids"][1:])))' \
            "$(python3 "$BENCH/procstat.py" "$SERVER_PID")" 2>/dev/null || true)
        kill -INT "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        for pid in $tree; do kill "$pid" 2>/dev/null || true; done
        SERVER_PID=
        MEASURE_PID=
    fi
}

# stop_and_record COMPARATOR MODE STORE WARM
stop_and_record() {
    stop_server
    printf '{"comparator":"%s","mode":"%s","store":"%s","start_ms":%d,"warm_cache":%s,"vmhwm_kb":%d}\n' \
        "$1" "$2" "$3" "$START_MS" "$4" "${STOPPED_HWM:-0}" >> "$SERVERS"
}

# check_get PATH: the seeded books must be readable before measuring.
check_get() {
    local code
    code=$(curl -s -o "$WORK/check.json" -w '%{http_code}' -H "Authorization: $TOKEN" "$BASE$1")
    if [ "$code" != 200 ]; then
        echo "bench: GET $1 on $SERVER_DESC answered $code: $(cat "$WORK/check.json")" >&2
        tail -n 20 "$SERVER_LOG" >&2
        exit 1
    fi
}

# ---------------------------------------------------------------- wrk runs
RUN_INDEX=0
# run_wrk COMPARATOR MODE STORE SCENARIO SCRIPT CONCURRENCY BOOKS [VAR=VALUE...]
run_wrk() {
    local comparator=$1 mode=$2 store=$3 scenario=$4 script=$5 conc=$6 books=$7
    shift 7
    local threads=2
    if [ "$conc" -lt 2 ]; then threads=1; fi
    RUN_INDEX=$(( RUN_INDEX + 1 ))
    local out
    out=$RAW/$(printf '%03d' "$RUN_INDEX")-$comparator-$mode-$store-$scenario-c$conc.txt
    # Peak RSS during the run: VmRSS polled every 50 ms.
    local flag=$WORK/sampling peak_file=$WORK/peak
    touch "$flag"
    (
        peak=0
        while [ -e "$flag" ]; do
            v=$(proc_kb "$MEASURE_PID" VmRSS)
            if [ "${v:-0}" -gt "$peak" ]; then peak=$v; fi
            sleep 0.05
        done
        echo "$peak" > "$peak_file"
    ) &
    local sampler=$!
    # CPU time and context switches of the server over the run (per request
    # in the report): procstat.py before and after wrk.
    local before after
    before=$(python3 "$BENCH/procstat.py" "$SERVER_PID")
    env BENCH_WRK_DIR="$BENCH/wrk" BENCH_TOKEN="$TOKEN" BENCH_THREADS="$threads" \
        BENCH_USER="$USER_NAME" BENCH_PASS="$USER_PASS" BENCH_IDS="${BENCH_IDS:-100}" "$@" \
        wrk -t"$threads" -c"$conc" -d"${DURATION}s" --timeout "$WRK_TIMEOUT" --latency \
        -s "$BENCH/wrk/$script.lua" "$BASE" > "$out" 2>&1 || true
    after=$(python3 "$BENCH/procstat.py" "$SERVER_PID")
    rm -f "$flag"
    wait "$sampler" || true
    local peak
    peak=$(cat "$peak_file" 2>/dev/null || echo 0)
    printf '{"comparator":"%s","mode":"%s","store":"%s","scenario":"%s","concurrency":%d,"threads":%d,"books":%d,"rss_peak_kb":%d,"file":"%s","proc_before":%s,"proc_after":%s}\n' \
        "$comparator" "$mode" "$store" "$scenario" "$conc" "$threads" "$books" "${peak:-0}" "$(basename "$out")" \
        "${before:-null}" "${after:-null}" >> "$RUNS"
    local line
    line=$(grep '^BENCH ' "$out" | sed 's/^BENCH //' || true)
    if [ -z "$line" ]; then
        log "$comparator/$mode/$store $scenario c$conc: wrk gave no result:"
        cat "$out"
        return
    fi
    python3 - "$line" "$comparator/$mode/$store" "$scenario" "$conc" "$peak" "${before:-null}" "${after:-null}" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
errors = sum(r[k] for k in ("err_connect", "err_read", "err_write", "err_status", "err_timeout"))
extra = f" exhausted={r['exhausted']}" if r.get("exhausted") else ""
before, after = json.loads(sys.argv[6]), json.loads(sys.argv[7])
per = ""
if before and after and r["requests"]:
    cpu = (after["cpu_ticks"] - before["cpu_ticks"]) / after["clk_tck"] * 1e6 / r["requests"]
    sw = (after["switches"] - before["switches"]) / r["requests"]
    per = f"  cpu {cpu:6.1f} us/req  switches {sw:5.2f}/req"
print(f"    {sys.argv[2]:<28} {sys.argv[3]:<10} c{sys.argv[4]:<3} {r['rps']:>10.0f} rps  "
      f"p50 {r['p50_us']/1000:7.2f} ms  p99 {r['p99_us']/1000:7.2f} ms  errors {errors}{extra}{per}  "
      f"rss {int(sys.argv[5])/1024:.0f} MiB")
PY
}

last_rps() { # the requests/s of the newest run
    local file
    file=$(ls "$RAW" | sort | tail -n 1)
    grep '^BENCH ' "$RAW/$file" | sed 's/.*"rps":\([0-9.]*\).*/\1/' | cut -d. -f1
}

# The book scenarios. Single-book scenarios first, on 10,000 books; then the
# table is emptied and the lists run on exactly 100, 1,000 and 10,000 books
# (last, so that the memory a 10,000-book list takes does not show in the
# other scenarios' peak RSS).
run_book_scenarios() {
    local comparator=$1 mode=$2 store=$3 c
    python3 "$BENCH/seed.py" "$STORE_SPEC" ensure 10000
    check_get /book/10000
    # Warm-up (not recorded): caches, connections, the first instances.
    env BENCH_WRK_DIR="$BENCH/wrk" BENCH_TOKEN="$TOKEN" BENCH_IDS=10000 \
        wrk -t2 -c16 -d1s -s "$BENCH/wrk/get.lua" "$BASE" > /dev/null 2>&1 || true
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" token token "$c" 10000; done
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" get get "$c" 10000 BENCH_IDS=10000; done
    declare -A post_rps=()
    for c in $CONCURRENCY; do
        run_wrk "$comparator" "$mode" "$store" post post "$c" 10000
        post_rps[$c]=$(last_rps)
    done
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" put put "$c" 10000 BENCH_IDS=10000; done
    for c in $CONCURRENCY; do
        # Enough fresh books for every DELETE of the run: three times what
        # POST managed at this concurrency (deletes are as cheap), at least 5,000.
        local count first
        count=$(( ${post_rps[$c]:-0} * DURATION * 3 + 5000 ))
        first=$(python3 "$BENCH/seed.py" "$STORE_SPEC" range "$count")
        run_wrk "$comparator" "$mode" "$store" delete delete "$c" 10000 \
            BENCH_DELETE_FIRST="$first" BENCH_DELETE_COUNT="$count"
    done
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" mix mix "$c" 10000 BENCH_IDS=10000; done
    python3 "$BENCH/seed.py" "$STORE_SPEC" clear
    python3 "$BENCH/seed.py" "$STORE_SPEC" ensure 100
    check_get /book/100
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" list100 list "$c" 100; done
    python3 "$BENCH/seed.py" "$STORE_SPEC" ensure 1000
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" list1k list "$c" 1000; done
    python3 "$BENCH/seed.py" "$STORE_SPEC" ensure 10000
    # Catalog pages of 100 of the 10,000 books: the first, and a deep one
    # (keyset: `after` near the end must cost what the first page does).
    check_get "/books?limit=100&after=9800"
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" page page "$c" 10000; done
    for c in $CONCURRENCY; do
        run_wrk "$comparator" "$mode" "$store" pagedeep page "$c" 10000 BENCH_PAGE_AFTER=9800
    done
    for c in $CONCURRENCY; do run_wrk "$comparator" "$mode" "$store" list10k list "$c" 10000; done
}

# ---------------------------------------------------------------- the run
wants() { [[ " $COMPARATORS " == *" $1 "* ]]; }
wants_store() { [[ " $STORES " == *" $1 "* ]]; }

if wants_store postgres; then
    PG_URL=$("$ROOT/scripts/pg-cluster.sh" start "$PG_DIR")
    PG_HOSTPORT=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(f"{p.hostname}:{p.port or 5432}")' "$PG_URL")
    log "PostgreSQL cluster on $PG_HOSTPORT"
fi

if wants native; then
    for store in $STORES; do
        start_server native - "$store"
        run_book_scenarios native - "$store"
        stop_and_record native - "$store" true
    done
fi

if [ "$HOST_AVAILABLE" = 1 ]; then
    MODES=isolated
    if [ "$REUSE_SUPPORTED" = 1 ]; then
        wants reuse && MODES="isolated reuse"
    else
        log "book-host has no --max-instance-reuse: isolated mode only"
    fi
    wants isolated || MODES=${MODES#isolated}
    # One start each first, so that the compilation cache is warm for the
    # measured starts.
    warm_kinds=
    [ -n "${MODES// /}" ] && warm_kinds=component
    wants floor && warm_kinds="$warm_kinds floor"
    for manifest_kind in $warm_kinds; do
        start_server "$manifest_kind" cache-warmup sqlite
        stop_and_record "$manifest_kind" cache-warmup sqlite false
    done
    if wants floor; then
        for mode in $MODES; do
            start_server floor "$mode" -
            env BENCH_WRK_DIR="$BENCH/wrk" wrk -t2 -c16 -d1s -s "$BENCH/wrk/floor.lua" "$BASE" \
                > /dev/null 2>&1 || true # warm-up
            for c in $CONCURRENCY; do run_wrk floor "$mode" - floor floor "$c" 0; done
            stop_and_record floor "$mode" - true
        done
    fi
    for mode in $MODES; do
        for store in $STORES; do
            start_server component "$mode" "$store"
            run_book_scenarios component "$mode" "$store"
            stop_and_record component "$mode" "$store" true
        done
    done
else
    log "target/release/book-host is missing: native runs only"
fi

if wants spin; then
    if [ -n "$SPIN_BIN" ]; then
        log "Spin: $SPIN_STATUS"
        # In a subshell, so that a Spin that fails (to start, or on a
        # request) is reported without losing the runs already made.
        set +e
        trap - ERR
        (
            set -e
            trap 'stop_server' EXIT
            start_server floor spin -
            env BENCH_WRK_DIR="$BENCH/wrk" wrk -t2 -c16 -d1s -s "$BENCH/wrk/floor.lua" "$BASE" \
                > /dev/null 2>&1 || true # warm-up
            for c in $CONCURRENCY; do run_wrk floor spin - floor floor "$c" 0; done
            stop_and_record floor spin - false
            for store in $STORES; do
                start_server component spin "$store"
                run_book_scenarios component spin "$store"
                stop_and_record component spin "$store" false
            done
        )
        spin_status=$?
        set -e
        trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
        if [ "$spin_status" != 0 ]; then
            SPIN_STATUS="$SPIN_STATUS: failed (exit $spin_status), see bench/results/latest.log"
            log "the Spin comparators failed (exit $spin_status); the report keeps the runs made"
        fi
    else
        log "no spin binary on PATH: skipped the Spin comparators (floor and component under spin up)"
    fi
fi

ELAPSED=$(( $(date +%s) - START_EPOCH ))
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
log "runs done in ${ELAPSED}s; writing the report"
cp "$RUNS" "$RESULTS/latest-runs.jsonl"
for file in $(ls "$RAW" | sort); do
    printf '=== %s\n' "$file"
    cat "$RAW/$file"
done > "$RESULTS/latest-wrk.txt"
python3 "$BENCH/report.py" \
    --raw "$RAW" --runs "$RUNS" --servers "$SERVERS" \
    --command "$COMMAND" --duration "$DURATION" \
    --elapsed "$ELAPSED" --host-available "$HOST_AVAILABLE" --reuse-supported "$REUSE_SUPPORTED" \
    --reuse "$REUSE" --spin "$SPIN_STATUS" --load-before "$LOAD_BEFORE" --load-after "$LOAD_AFTER" --md "$RESULTS/latest.md" --json "$RESULTS/latest.json"
log "wrote bench/results/latest.md and latest.json in $(( $(date +%s) - START_EPOCH ))s"
