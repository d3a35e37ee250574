#!/usr/bin/env bash
# `make test`: every test of the project, in order, with one closing line
# `N passed, M failed` that counts all of them. Stops everything it started,
# also on failure, and exits non-zero if anything failed.
# In order: the builds (the WASI 0.3 default and `make variants`); the native
# tests (`cargo test --workspace`, which also builds target/release/spin-lite
# with the features `make host` resolves); the WASI 0.3 build's suites under
# spin-lite on SQLite and a throwaway PostgreSQL; then, with real Spin
# (SPIN, SPIN_4_0, SPIN_3_6, else build/spin*/spin; else listed as skipped,
# never counted), the legs tests/README.md lists under "Which build under
# which host".
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

# Spin main (WASI 0.3), 4.0.2 and 3.6.3 (WASI 0.2), as .ci/run unpacks them.
spin_at() { [ -x "$1" ] && echo "$PWD/$1"; }
SPIN=${SPIN:-$(spin_at build/spin/spin || command -v spin || true)}
SPIN_4_0=${SPIN_4_0:-$(spin_at build/spin-4.0.2/spin || true)}
SPIN_3_6=${SPIN_3_6:-$(spin_at build/spin-3.6.3/spin || true)}
P2=(--manifest deploy/wasi-p2/spin.toml)
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
tools=(hurl postgres argon2 otel client browser registry litestream)
# containerd for a SpinKube node, where .ci/run unpacked its shim.
[ -x build/containerd-shim/containerd-shim-spin-v2 ] && tools+=(containerd)
if ! scripts/ensure-tools.sh "${tools[@]}"; then
    record 0 1
    summary
    exit 1
fi

step "build: the component (wasm32-wasip2, WASI 0.3) and its variants (WASI 0.3 and 0.2)"
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
SPIN_LITE_TEST_PG_URL="$pg_url" cargo test --release --locked --workspace -- --include-ignored 2>&1 |
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

step "openapi.yaml: Redocly's recommended lint, no warning (.redocly.lint-ignore.yaml: why one rule is not)"
lint=$(build/typed-client/node_modules/.bin/redocly lint openapi.yaml 2>&1)
echo "$lint"
if grep -q "Your API description is valid" <<<"$lint" && ! grep -q "You have" <<<"$lint"; then
    record 1 0
else
    record 0 1
fi

export E2E_TALLY="$tally"
[ -n "$pg_url" ] && export FAULTS_PG_DIR="$pg_dir"
stores=(sqlite)
[ -n "$pg_url" ] && stores+=(postgres)
# A leg under real Spin binary $1 (named $2), or listed as skipped (never counted).
spin_leg() {
    local spin=$1 label=$2
    shift 2
    if [ -n "$spin" ]; then SPIN=$spin "$@" --host spin || true; else skipped+=("$label: no such Spin"); fi
}
# A single-store variant's leg: under Spin main, the platform it is built
# for, else under spin-lite.
variant_leg() {
    if [ -n "$SPIN" ]; then SPIN=$SPIN "$@" --host spin || true; else "$@" || true; fi
}

for store in "${stores[@]}"; do
    step "the WASI 0.3 build under spin-lite on $store"
    if [ "$store" = sqlite ]; then
        tests/e2e.py --store sqlite || true
        variant_leg tests/e2e.py --store sqlite --wasm target/variants/book-catalog-sqlite.wasm
    else
        tests/e2e.py --store postgres || true
        # The PostgreSQL-only build (no SQLite interface) with its manifest.
        variant_leg tests/e2e.py --store postgres --manifest deploy/postgres-only/spin.toml
    fi
    scripts/fuzz.sh --store "$store" || true
    tests/faults/run.py --store "$store" || true
    tests/faults/big_catalog.py --store "$store" || true
done

# What Spin itself decides (each module skips a store it does not need).
spin_faults=throttle,stalls,providers,upgrade,concurrency,crash,variants,safe_writes,limits,tls,otel,transfer
for store in "${stores[@]}"; do
    [ -n "$SPIN" ] && step "Spin main ($("$SPIN" --version)), the WASI 0.3 build on $store"
    spin_leg "$SPIN" "e2e under Spin main on $store" tests/e2e.py --store "$store"
    spin_leg "$SPIN" "spin-lite and Spin main side by side on $store" tests/faults/side_by_side.py --store "$store"
    spin_leg "$SPIN" "fault tests under Spin main on $store" \
        tests/faults/run.py --store "$store" --only "$spin_faults,feed,browser,page,registry,backups"
    spin_leg "$SPIN" "the big catalog under Spin main on $store" tests/faults/big_catalog.py --store "$store"
done
for store in "${stores[@]}"; do
    [ -n "$SPIN_4_0" ] && step "Spin 4.0.2 ($("$SPIN_4_0" --version)), the WASI 0.2 build on $store"
    spin_leg "$SPIN_4_0" "e2e under Spin 4.0.2 on $store" tests/e2e.py --store "$store" "${P2[@]}"
    spin_leg "$SPIN_4_0" "fault tests under Spin 4.0.2 on $store" \
        tests/faults/run.py --store "$store" --only "$spin_faults" "${P2[@]}"
    spin_leg "$SPIN_4_0" "the big catalog under Spin 4.0.2 on $store" \
        tests/faults/big_catalog.py --store "$store" "${P2[@]}"
    # SpinKube's runtime: containerd-shim-spin v0.24.0 embeds Spin 3.6.3.
    [ -n "$SPIN_3_6" ] && step "Spin 3.6.3 ($("$SPIN_3_6" --version)), the WASI 0.2 build on $store"
    spin_leg "$SPIN_3_6" "e2e under Spin 3.6.3 on $store" tests/e2e.py --store "$store" "${P2[@]}"
done
# A SpinKube node: the WASI 0.2 build for SpinKube pushed by Spin 3.6.3 and run
# by containerd with containerd-shim-spin (tests/faults/spinkube.py); exit
# 77: this machine cannot, its last line says why.
if [ -z "$pg_url" ] || [ -z "$SPIN_3_6" ]; then
    skipped+=("a SpinKube node: needs PostgreSQL and Spin 3.6.3")
else
    step "a SpinKube node: containerd and containerd-shim-spin, the WASI 0.2 build on postgres"
    last=$(SPIN=$SPIN_3_6 tests/faults/spinkube.py --store postgres --host spin \
        --manifest deploy/spinkube/spin.toml | tee -a /dev/stderr | tail -n 1)
    [ $? -ne 77 ] || skipped+=("$last")
fi

summary
