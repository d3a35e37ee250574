#!/usr/bin/env bash
# Schema-driven fuzzing of the running service with schemathesis.
#
#   scripts/fuzz.sh [--store sqlite|postgres] [--scale quick|full] [--host spin-lite|spin]
#                   [--wasm F] [--manifest F]
#
# Installs schemathesis 4.32.5 (PyPI) into build/venv (reused when present),
# then runs tests/faults/fuzz.py: its own host on a free loopback port, a
# token, `schemathesis run openapi.yaml --checks all` over the phases
# examples, coverage, fuzzing and stateful. Reports go to build/fuzz/STORE/.
# --scale full (or FAULTS_SCALE=full) is the `make soak` size.
# PostgreSQL: uses the pg-cluster.sh cluster in FAULTS_PG_DIR, else starts
# (and removes) its own.
#
# Output: a line `fuzz STORE: N passed, M failed`: one test per API operation
# (passed every check in every phase, or not) plus run and host checks (see
# tests/faults/fuzz.py); `N M` is appended to $E2E_TALLY when set. Exit 0 only when nothing
# failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/build/venv"
ST_VERSION=4.32.5

# Before fuzz.py can count, a failed installation is one failed test.
fail_setup() {
    echo "fuzz: $*" >&2
    echo "fuzz: 0 passed, 1 failed"
    if [ -n "${E2E_TALLY:-}" ]; then echo "0 1" >> "$E2E_TALLY"; fi
    exit 1
}

if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "version $ST_VERSION\$"; then
    echo "== installing schemathesis $ST_VERSION into $VENV" >&2
    mkdir -p "$ROOT/build"
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV" || fail_setup "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION" \
        || fail_setup "pip install schemathesis==$ST_VERSION failed"
fi

exec python3 "$ROOT/tests/faults/fuzz.py" "$@"
