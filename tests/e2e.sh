#!/usr/bin/env bash
# End-to-end tests: the real host serving the real component over HTTP.
#
#   tests/e2e.sh [--store sqlite|postgres] [--host book-host|spin] [--reuse N]
#                [--host-bin PATH] [--wasm PATH] [--manifest PATH]
# --reuse N serves with `book-host --max-instance-reuse N` (one instance
# serves up to N requests in turn) instead of a fresh instance per request.
# --manifest serves another manifest than spin.toml (e.g.
# deploy/postgres-only/spin.toml); --wasm points its `source` at a component.
# --host spin serves with real Spin (`spin up`: $SPIN, else spin on PATH),
# its settings set as a Spin user sets them: the secret, DB_URL and db_host as
# SPIN_VARIABLE_*, the others as the component's environment (`spin up -e`).
#
# Starts the host on a free loopback port with a throwaway state directory,
# a random signing secret and custom credentials, runs every
# tests/hurl/*.hurl file against it (with tests/hurl/run.py, the runner of
# `make hurl`; it also checks the suite leaves no books behind), then checks that
# a book survives a restart and that the host exits 0 on SIGTERM.
#
# --store postgres needs E2E_PG_URL (postgres://user:pass@127.0.0.1:PORT/db);
# the database may already hold books: the suite does not assume it is empty.
#
# Output: a line `e2e STORE: N passed, M failed`; `N M` is appended to the
# file named by E2E_TALLY when set. Exit status 0 only when nothing failed.
# Set E2E_KEEP=1 to keep the temporary directory (logs, reports).
#
# Needs: bash, python3, hurl (8.x).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STORE=sqlite
HOST=book-host
HOST_BIN="$ROOT/target/release/book-host"
SPIN_BIN="${SPIN:-$(command -v spin || true)}"
WASM=""
MANIFEST=""
REUSE=1
START_TIMEOUT="${E2E_START_TIMEOUT:-60}"
STOP_TIMEOUT="${E2E_STOP_TIMEOUT:-20}"

usage() {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --store) STORE="${2:?--store needs a value}"; shift 2 ;;
        --store=*) STORE="${1#*=}"; shift ;;
        --host) HOST="${2:?--host needs book-host or spin}"; shift 2 ;;
        --host=*) HOST="${1#*=}"; shift ;;
        --host-bin) HOST_BIN="${2:?--host-bin needs a path}"; shift 2 ;;
        --host-bin=*) HOST_BIN="${1#*=}"; shift ;;
        --reuse) REUSE="${2:?--reuse needs a count}"; shift 2 ;;
        --wasm) WASM="${2:?--wasm needs a path}"; shift 2 ;;
        --wasm=*) WASM="${1#*=}"; shift ;;
        --manifest) MANIFEST="${2:?--manifest needs a path}"; shift 2 ;;
        --manifest=*) MANIFEST="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "e2e: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

case "$STORE" in
    sqlite|postgres) ;;
    *) echo "e2e: --store must be sqlite or postgres, not '$STORE'" >&2; exit 2 ;;
esac
case "$HOST" in
    book-host|spin) ;;
    *) echo "e2e: --host must be book-host or spin, not '$HOST'" >&2; exit 2 ;;
esac
LABEL="$STORE"
if [ "$HOST" = spin ]; then
    LABEL="spin up, $STORE"
fi
if [ "$REUSE" != 1 ]; then
    LABEL="$STORE, instance reuse $REUSE"
fi
if [ -n "$WASM" ]; then
    LABEL="$LABEL, $(basename "$WASM")"
fi

PASSED=0
FAILED=0
HOST_PID=""
TMP=""

pass() { PASSED=$((PASSED + 1)); echo "e2e $LABEL: PASS $*"; }
fail() { FAILED=$((FAILED + 1)); echo "e2e $LABEL: FAIL $*" >&2; }

tally() {
    echo "e2e $LABEL: $PASSED passed, $FAILED failed"
    if [ -n "${E2E_TALLY:-}" ]; then
        echo "$PASSED $FAILED" >> "$E2E_TALLY"
    fi
}

# A setup problem: counted as one failed test, reported, and the run ends.
abort() {
    echo "e2e $LABEL: $*" >&2
    FAILED=$((FAILED + 1))
    tally
    exit 1
}

show_host_log() {
    if [ -n "$TMP" ] && [ -f "$TMP/host.log" ]; then
        echo "---- host log (last 80 lines): $TMP/host.log ----" >&2
        tail -n 80 "$TMP/host.log" >&2 || true
        echo "---- end of host log ----" >&2
    fi
}

cleanup() {
    local status=$?
    if [ -n "$HOST_PID" ] && kill -0 "$HOST_PID" 2>/dev/null; then
        kill -TERM "$HOST_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$HOST_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$HOST_PID" 2>/dev/null; then
            kill -KILL "$HOST_PID" 2>/dev/null || true
        fi
        wait "$HOST_PID" 2>/dev/null || true
    fi
    HOST_PID=""
    if [ -n "$TMP" ] && [ -d "$TMP" ]; then
        if [ "${E2E_KEEP:-0}" = 1 ] || { [ "$status" -ne 0 ] && [ "${E2E_KEEP_ON_FAILURE:-0}" = 1 ]; }; then
            echo "e2e $LABEL: kept $TMP" >&2
        else
            rm -rf "$TMP"
        fi
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Preconditions -----------------------------------------------------------

command -v hurl >/dev/null || abort "hurl is not installed (https://hurl.dev)"
command -v python3 >/dev/null || abort "python3 is not installed"
if [ "$HOST" = spin ]; then
    [ -n "$SPIN_BIN" ] && [ -x "$SPIN_BIN" ] || abort "--host spin: no Spin binary (set SPIN=path, or put spin on PATH)"
else
    [ -x "$HOST_BIN" ] || abort "host binary not found or not executable: $HOST_BIN (cargo build --release --locked -p book-host)"
fi

MANIFEST="${MANIFEST:-$ROOT/spin.toml}"
[ -f "$MANIFEST" ] || abort "manifest not found: $MANIFEST"
MANIFEST="$(cd "$(dirname "$MANIFEST")" && pwd)/$(basename "$MANIFEST")"
BASE_MANIFEST="$MANIFEST"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/book-e2e-$STORE.XXXXXX")"
STATE_DIR="$TMP/state"
mkdir -p "$STATE_DIR"

if [ -n "$WASM" ]; then
    [ -f "$WASM" ] || abort "component not found: $WASM"
    WASM="$(cd "$(dirname "$WASM")" && pwd)/$(basename "$WASM")"
    # The same manifest, pointing at the given component.
    MANIFEST="$TMP/spin.toml"
    python3 - "$BASE_MANIFEST" "$MANIFEST" "$WASM" <<'EOF' || abort "could not write $MANIFEST"
import json, re, sys
source, target, wasm = sys.argv[1:4]
text = open(source, encoding="utf-8").read()
text, count = re.subn(r'(?m)^source\s*=\s*".*"\s*$', "source = " + json.dumps(wasm), text)
if count != 1:
    sys.exit("e2e: expected exactly one `source = ...` line in spin.toml, found %d" % count)
open(target, "w", encoding="utf-8").write(text)
EOF
elif [ "$MANIFEST" = "$ROOT/spin.toml" ]; then
    DEFAULT_WASM="$ROOT/target/wasm32-wasip2/release/book_catalog.wasm"
    [ -f "$DEFAULT_WASM" ] || abort "component not found: $DEFAULT_WASM (cargo build --release --locked --target wasm32-wasip2 -p book-catalog, or pass --wasm)"
fi

random_text() { # length
    python3 -c 'import secrets, string, sys
alphabet = string.ascii_letters + string.digits
print("".join(secrets.choice(alphabet) for _ in range(int(sys.argv[1]))))' "$1"
}

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

SECRET="$(random_text 48)"
RUN_ID="run$(date +%s)$(random_text 6)"
USERNAME="e2e-user-$(random_text 8 | tr 'A-Z' 'a-z')"
PASSWORD="E2e.pass-$(random_text 16)"

E2E_LOGIN_WINDOW_SECONDS=30
E2E_TRUSTED_PROXY_HOPS=1
HOST_ENV=(
    "SECRET_TOKEN=$SECRET"
    "AUTH_USERNAME=$USERNAME"
    "AUTH_PASSWORD=$PASSWORD"
    # hurl files marked `# needs: forwarded-for` vary the client address, as
    # the one proxy in front of a deployment appends it.
    "TRUSTED_PROXY_HOPS=$E2E_TRUSTED_PROXY_HOPS"
    # A short failed-login window (the limit keeps its default, 10): counts
    # left by tests/hurl/throttle.hurl lapse within a minute.
    "LOGIN_WINDOW_SECONDS=$E2E_LOGIN_WINDOW_SECONDS"
)
if [ "$STORE" = postgres ]; then
    [ -n "${E2E_PG_URL:-}" ] || abort "--store postgres needs E2E_PG_URL (postgres://user:password@127.0.0.1:PORT/database)"
    # spin.toml allows postgres://{{ db_host }}: host[:port] of the URL.
    DB_HOST="$(python3 - "$E2E_PG_URL" <<'EOF'
import sys
from urllib.parse import urlsplit
url = urlsplit(sys.argv[1])
if url.scheme not in ("postgres", "postgresql") or not url.hostname:
    sys.exit("e2e: E2E_PG_URL must be a postgres://user:password@host:port/database URL")
host = url.hostname if ":" not in url.hostname else "[%s]" % url.hostname
print(host + ":" + str(url.port or 5432))
EOF
)" || abort "bad E2E_PG_URL"
    HOST_ENV+=("DB_URL=$E2E_PG_URL" "SPIN_VARIABLE_DB_HOST=$DB_HOST")
    # A query without rows hangs real Spin 4.0.0-4.0.2: the host fails it
    # instead, so any statement that can return zero rows fails the suite.
    HOST_ENV+=("BOOK_HOST_PG_EMPTY_QUERY_ERROR=1")
fi

# --- The host ----------------------------------------------------------------

PORT=""
BASE_URL=""

start_host() {
    PORT="$(free_port)"
    BASE_URL="http://127.0.0.1:$PORT"
    # A clean environment for the settings (no SPIN_VARIABLE_* or settings
    # from the caller's shell), run from the temporary directory (no stray
    # .env).
    local -a clean=()
    local name
    for name in $(compgen -e); do
        case "$name" in
            SPIN_VARIABLE_*|SECRET_TOKEN|SECRET_TOKEN_PREVIOUS|DB_URL|AUTH_*|LOGIN_*|TRUST*|CLIENT_IP_HEADER)
                clean+=(-u "$name") ;;
        esac
    done
    local -a command env=("${HOST_ENV[@]}")
    if [ "$HOST" = spin ]; then
        # As a Spin user sets them: the secret and the store as Spin
        # variables, the rest as the component's environment (`-e`).
        env=()
        command=("$SPIN_BIN" up --from "$MANIFEST")
        local assignment
        for assignment in "${HOST_ENV[@]}"; do
            case "$assignment" in
                SECRET_TOKEN=*|DB_URL=*) env+=("SPIN_VARIABLE_$assignment") ;;
                SPIN_VARIABLE_*) env+=("$assignment") ;;
                BOOK_HOST_*) ;;
                *) command+=(-e "$assignment") ;;
            esac
        done
        command+=(--listen "127.0.0.1:$PORT" --state-dir "$STATE_DIR")
    else
        command=("$HOST_BIN" --from "$MANIFEST" --listen "127.0.0.1:$PORT"
            --state-dir "$STATE_DIR" --max-instance-reuse "$REUSE")
    fi
    echo "e2e $LABEL: starting ${command[0]} on 127.0.0.1:$PORT" >&2
    (
        cd "$TMP"
        exec env "${clean[@]}" "${env[@]}" "${command[@]}"
    ) >> "$TMP/host.log" 2>&1 &
    HOST_PID=$!
    local deadline=$((SECONDS + START_TIMEOUT))
    while true; do
        if ! kill -0 "$HOST_PID" 2>/dev/null; then
            local status=0
            wait "$HOST_PID" || status=$?
            HOST_PID=""
            show_host_log
            abort "the host exited (status $status) before listening on port $PORT"
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
            return 0
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_host_log
            abort "the host did not listen on port $PORT within ${START_TIMEOUT}s"
        fi
        sleep 0.2
    done
}

# Sends SIGTERM and waits; sets STOP_STATUS to the exit status, or "timeout".
STOP_STATUS=""
stop_host() {
    local pid="$HOST_PID"
    STOP_STATUS=0
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            HOST_PID=""
            STOP_STATUS="timeout after ${STOP_TIMEOUT}s"
            return 0
        fi
        sleep 0.1
    done
    wait "$pid" || STOP_STATUS=$?
    HOST_PID=""
}

check_stop() { # when
    stop_host
    if [ "$STOP_STATUS" = 0 ]; then
        pass "host exits 0 on SIGTERM ($1)"
    else
        fail "host exit status on SIGTERM ($1): $STOP_STATUS, expected 0"
    fi
}

start_host

# --- The hurl suite ----------------------------------------------------------

# tests/hurl/run.py: the same runner as `make hurl` against any deployment,
# here with the signing secret (forged-token files run too) and --strict (the
# host is ours alone: the catalog must be exactly as before the suite).
HURL_COUNTS="$TMP/hurl-counts"
: > "$HURL_COUNTS"
HURL_BASE_URL="$BASE_URL" HURL_USERNAME="$USERNAME" HURL_PASSWORD="$PASSWORD" \
    SECRET_TOKEN="$SECRET" TRUSTED_PROXY_HOPS="$E2E_TRUSTED_PROXY_HOPS" \
    LOGIN_WINDOW_SECONDS="$E2E_LOGIN_WINDOW_SECONDS" \
    python3 "$ROOT/tests/hurl/run.py" --strict --label "e2e $LABEL" --counts "$HURL_COUNTS" >&2 || true
read -r hurl_passed hurl_failed < "$HURL_COUNTS" || true
hurl_passed="${hurl_passed:-0}"
hurl_failed="${hurl_failed:-1}"
PASSED=$((PASSED + hurl_passed))
FAILED=$((FAILED + hurl_failed))
echo "e2e $LABEL: hurl: $hurl_passed passed, $hurl_failed failed" >&2

# --- Persistence across a restart --------------------------------------------

# Phase 1 creates a book and prints `id token`; phase 2 reads it back with the
# old token (same secret: still valid) and a new one, then deletes it.
RESTART_PY='
import json, os, sys, urllib.request, urllib.error

base, phase = sys.argv[1], sys.argv[2]
username, password, run_id = os.environ["E2E_USER"], os.environ["E2E_PASS"], os.environ["E2E_RUN"]
expected = {"title": "Restart \u2713 " + run_id, "author": "Persistence \u00e9", "year": 1851}

def call(method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", token)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")

def login():
    status, envelope = call("POST", "/token", {"username": username, "password": password})
    assert status == 200, ("login", status, envelope)
    return envelope["data"]["token"]

def check(status, envelope, want_status, want_message):
    assert status == want_status and envelope.get("status") == want_status \
        and envelope.get("message") == want_message, (status, envelope)

if phase == "create":
    token = login()
    status, envelope = call("POST", "/book", expected, token)
    check(status, envelope, 201, "Book created successfully")
    print(envelope["data"]["id"], token)
else:
    book_id, old_token = sys.argv[3], sys.argv[4]
    for token in (old_token, login()):
        status, envelope = call("GET", "/book/" + book_id, None, token)
        check(status, envelope, 200, "Book retrieved successfully")
        assert envelope["data"] == dict(expected, id=int(book_id)), envelope["data"]
    status, envelope = call("GET", "/books", None, old_token)
    check(status, envelope, 200, "Books retrieved successfully")
    assert [b for b in envelope["data"] if b["id"] == int(book_id)] == [dict(expected, id=int(book_id))]
    status, envelope = call("DELETE", "/book/" + book_id, None, old_token)
    check(status, envelope, 200, "Book deleted successfully")
'
export E2E_USER="$USERNAME" E2E_PASS="$PASSWORD" E2E_RUN="$RUN_ID"

restart_ok=1
created=""
if ! created="$(python3 -c "$RESTART_PY" "$BASE_URL" create)"; then
    restart_ok=0
    fail "restart: could not create a book before the restart"
fi

check_stop "after the suite"

if [ "$STORE" = sqlite ]; then
    if [ -s "$STATE_DIR/sqlite_db.db" ]; then
        pass "the default SQLite database is <state-dir>/sqlite_db.db"
    else
        fail "no $STATE_DIR/sqlite_db.db after the suite (files: $(ls -A "$STATE_DIR" | tr '\n' ' '))"
    fi
fi

start_host
if [ "$restart_ok" = 1 ]; then
    read -r book_id old_token <<< "$created"
    if python3 -c "$RESTART_PY" "$BASE_URL" verify "$book_id" "$old_token"; then
        pass "a book survives a restart (id $book_id, same fields; old token still valid)"
    else
        fail "the book created before the restart (id $book_id) is not the same after it"
    fi
fi

check_stop "after the restart"

# --- Result ------------------------------------------------------------------

if [ "$FAILED" -gt 0 ]; then
    show_host_log
fi
tally
[ "$FAILED" -eq 0 ]
