#!/usr/bin/env bash
# `make test`: every test of the project, in order, with one closing line
# `N passed, M failed` that counts all of them. Stops everything it started,
# also on failure, and exits non-zero if anything failed.
#   1. the component and its variants (wasm32-wasip2, release). The host is
#      built by step 2: `cargo test` builds target/release/spin-lite for the
#      host's own tests, with the features `make host` resolves too (the
#      Makefile's NATIVE_BUILD), so each reuses the other's wasmtime
#   2. native unit and integration tests (cargo test --workspace)
#   3. the hurl suite (the plain hurl command, then tests/hurl/run.py) against
#      the real component served by spin-lite, on SQLite with a fresh instance
#      per request and with instances reused (the one host that can), and on
#      PostgreSQL; each variant build on its store, under real Spin when there
#      is one
#   4. schema-driven fuzzing (schemathesis) and the fault tests, on SQLite
#      and on a throwaway PostgreSQL cluster, sized for CI (`make soak` runs
#      them at full size)
#   5. with real Spin (SPIN=path, else build/spin/spin, else `spin` on PATH):
#      the hurl suite under `spin up` on each store, spin-lite and Spin side
#      by side, and the fault tests of what Spin itself decides (login
#      protection, stalled clients, failing variables providers, upgrades,
#      writers killed, PostgreSQL TLS, safe writes, OpenTelemetry export).
#      Then the hurl suite under Spin 3.6.3, SpinKube's runtime (SPIN_3_6,
#      else build/spin-3.6.3/spin).
#      Without Spin these legs are listed as skipped, never counted.
set -uo pipefail
cd "$(dirname "$0")/.."

build_dir=build
mkdir -p "$build_dir"
tally=$(mktemp "$build_dir/tally.XXXXXX")
pg_dir=
cleanup() {
    [ -n "$pg_dir" ] && scripts/pg-cluster.sh stop "$pg_dir"
    rm -f "$tally"
}
trap cleanup EXIT

record() { echo "$1 $2" >> "$tally"; }

if [ -z "${SPIN:-}" ] && [ -x build/spin/spin ]; then SPIN=$PWD/build/spin/spin; fi
SPIN=${SPIN:-$(command -v spin || true)}
skipped=()

summary() {
    local passed=0 failed=0 p f
    if [ "${#skipped[@]}" -gt 0 ]; then
        echo
        echo "skipped (not counted):"
        printf '  %s\n' "${skipped[@]}"
    fi
    while read -r p f; do
        passed=$((passed + p))
        failed=$((failed + f))
    done < "$tally"
    echo
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

step() { echo; echo "== $*"; }

step "tools"
if ! scripts/ensure-tools.sh hurl postgres argon2 otel client browser registry; then
    record 0 1
    summary
    exit 1
fi

step "build: the component (wasm32-wasip2) and its variants"
# The variants in target/, the component's own directory (in theirs, every
# dependency would be built a second time), the default build first; then
# the component, which cargo only puts back in place.
if ! { make --no-print-directory variants VARIANT_TARGET=target &&
    make --no-print-directory component; }; then
    record 0 1
    summary
    exit 1
fi

step "throwaway PostgreSQL cluster"
pg_dir=$(mktemp -d /tmp/book-catalog-pg.XXXXXX)
if ! pg_url=$(scripts/pg-cluster.sh start "$pg_dir"); then
    echo "could not start a PostgreSQL cluster; see $pg_dir" >&2
    record 0 1
    pg_url=
fi

step "native tests (and the host, target/release/spin-lite): cargo test --workspace"
cargo_log="$build_dir/cargo-test.log"
# --include-ignored: the host's tests that need the built component or
# PostgreSQL (here both are provided) are marked so that `cargo test` on a
# fresh clone passes without them.
SPIN_LITE_TEST_PG_URL="$pg_url" BOOK_NATIVE_TEST_PG_URL="$pg_url" cargo test --release --locked --workspace -- --include-ignored 2>&1 |
    tee "$cargo_log"
cargo_status=${PIPESTATUS[0]}
read -r cargo_passed cargo_failed < <(
    sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$cargo_log" |
        awk '{p += $1; f += $2} END {print p + 0, f + 0}'
)
# A build failure runs no test: count it as one failure.
if [ "$cargo_status" -ne 0 ] && [ "$cargo_failed" -eq 0 ]; then
    cargo_failed=1
fi
record "$cargo_passed" "$cargo_failed"

export E2E_TALLY="$tally"
if [ -n "$SPIN" ] && [ -x "$SPIN" ]; then export SPIN; else SPIN=; fi
[ -n "$pg_url" ] && export FAULTS_PG_DIR="$pg_dir"
skip_spin() {
    skipped+=("$1: no Spin binary (set SPIN=path, unpack it to build/spin/spin, or put spin on PATH)")
}
# Runs a leg under real Spin, or lists it as skipped (never counted).
spin_leg() {
    local label=$1
    shift
    if [ -n "$SPIN" ]; then "$@" --host spin || true; else skip_spin "$label"; fi
}
# A variant build's leg: under real Spin, the platform it is built for, else
# under spin-lite.
variant_leg() {
    if [ -n "$SPIN" ]; then "$@" --host spin || true; else "$@" || true; fi
}

step "end to end on SQLite"
tests/e2e.py --store sqlite --argon2-cli || true
# Hosts may serve several requests with one instance (spin-lite
# --max-instance-reuse, Spin for WASI 0.3): the component must be right there
# too. What an instance keeps is its settings (src/spin/mod.rs), whatever
# the store: one store is enough.
tests/e2e.py --store sqlite --reuse 50 || true
# The SQLite-only build (no PostgreSQL interface), from `make variants`.
variant_leg tests/e2e.py --store sqlite --wasm target/variants/book-catalog-sqlite.wasm

step "fuzzing and fault tests on SQLite"
scripts/fuzz.sh --store sqlite || true
tests/faults/run.py --store sqlite || true
tests/faults/big_catalog.py --store sqlite || true

if [ -n "$pg_url" ]; then
    step "end to end on PostgreSQL"
    tests/e2e.py --store postgres || true
    # The PostgreSQL-only build (no SQLite interface) with its manifest (no
    # sqlite_databases), from `make variants`.
    variant_leg tests/e2e.py --store postgres --manifest deploy/postgres-only/spin.toml \
        --wasm target/variants/book-catalog-postgres.wasm

    step "fuzzing and fault tests on PostgreSQL"
    scripts/fuzz.sh --store postgres || true
    tests/faults/run.py --store postgres || true
    tests/faults/big_catalog.py --store postgres || true
fi

# Each module skips the store it does not need (its `ctx.only_on`).
spin_faults=throttle,stalls,providers,upgrade,concurrency,crash,variants,safe_writes,otel,tls,browser,registry
[ -n "$SPIN" ] && step "real Spin ($("$SPIN" --version)): the hurl suite under spin up, side by side, fault tests"
for store in sqlite postgres; do
    if [ "$store" = postgres ] && [ -z "$pg_url" ]; then continue; fi
    spin_leg "e2e under spin up on $store" tests/e2e.py --store "$store"
    if [ -n "$SPIN" ]; then
        tests/faults/side_by_side.py --store "$store" || true
    else
        skip_spin "spin-lite and spin up side by side on $store"
    fi
    spin_leg "fault tests under spin up ($spin_faults) on $store" \
        tests/faults/run.py --store "$store" --only "$spin_faults"
    spin_leg "the big catalog under spin up on $store" tests/faults/big_catalog.py --store "$store"
done

# SpinKube's runtime: containerd-shim-spin v0.24.0 embeds Spin 3.6.3. The
# hurl suite under its spin up: the default build on SQLite, the
# PostgreSQL-only build on PostgreSQL (.ci/run unpacks it as SPIN_3_6).
if [ -z "${SPIN_3_6:-}" ] && [ -x build/spin-3.6.3/spin ]; then SPIN_3_6=$PWD/build/spin-3.6.3/spin; fi
if [ -n "${SPIN_3_6:-}" ]; then
    step "Spin 3.6.3 ($("$SPIN_3_6" --version)): the hurl suite under spin up"
    SPIN=$SPIN_3_6 tests/e2e.py --store sqlite --host spin || true
    if [ -n "$pg_url" ]; then
        SPIN=$SPIN_3_6 tests/e2e.py --store postgres --host spin \
            --manifest deploy/postgres-only/spin.toml --wasm target/variants/book-catalog-postgres.wasm || true
    fi
else
    skipped+=("the hurl suite under Spin 3.6.3: no SPIN_3_6 (.ci/run unpacks it to build/spin-3.6.3/spin)")
fi

summary
