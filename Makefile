# Book Catalog Service. `make run` serves it on :8080; `make test` runs every test.

CARGO ?= cargo
WASM := target/wasm32-wasip2/release/book_catalog.wasm
HOST := target/release/spin-lite
LISTEN ?= 0.0.0.0:8080
# Native builds resolve features as `make test`'s `cargo test --workspace`
# does: over every package, with the dev-dependencies (which `--examples`
# brings in; there is none to build). The shared crates then have one
# feature set whatever the packages declare, so `make run` and `make test`
# each reuse the other's wasmtime.
NATIVE_BUILD := $(CARGO) build --release --locked --workspace --examples

.PHONY: run test soak hurl bench build variants toolchain component host clean

## Build the component and the host, then serve on $(LISTEN) (SQLite default).
run: build
	@scripts/run.sh $(HOST) $(LISTEN)

## Every test: native, then end to end on SQLite and PostgreSQL. Last line: N passed, M failed.
test:
	@scripts/test-all.sh

## Full-size fuzzing (10 min per store) and fault tests on SQLite and PostgreSQL.
soak: build
	@scripts/ensure-tools.sh postgres
	@status=0; for store in sqlite postgres; do \
	    scripts/fuzz.sh --store $$store --scale full || status=1; \
	    tests/faults/run.py --store $$store --scale full || status=1; \
	done; exit $$status

## The hurl suite against a running deployment: the plain files (hurl alone,
## README "Testing") and tests/hurl/wrapped/ (forged tokens with SECRET_TOKEN,
## the login limit with TRUSTED_PROXY_HOPS=1), failing if a secret or token
## shows in hurl's output or report or a book the run created is left:
##   make hurl BASE_URL=https://books.example.com USERNAME=admin PASSWORD=... \
##        [SECRET_TOKEN=...] [TRUSTED_PROXY_HOPS=1]
## (or HURL_BASE_URL / HURL_USERNAME / HURL_PASSWORD in the environment).
## Last line: N passed, M failed. `make test` runs it too (tests/e2e.py).
hurl: export HURL_BASE_URL := $(or $(value BASE_URL),$(value HURL_BASE_URL))
hurl: export HURL_USERNAME := $(or $(value USERNAME),$(value HURL_USERNAME))
hurl: export HURL_PASSWORD := $(or $(value PASSWORD),$(value HURL_PASSWORD))
hurl: export SECRET_TOKEN := $(value SECRET_TOKEN)
hurl: export TRUSTED_PROXY_HOPS := $(value TRUSTED_PROXY_HOPS)
hurl: export TRUST_FORWARDED_FOR := $(value TRUST_FORWARDED_FOR)
hurl:
	@scripts/ensure-tools.sh hurl
	@tests/hurl/run.py

## Load benchmark (wrk on loopback): the component under spin-lite and real
## Spin (SPIN=path), SQLite and PostgreSQL; writes build/bench/ (bench/README.md).
bench: build
	@scripts/ensure-tools.sh postgres $(if $(filter 1,$(BENCH_LITESTREAM)),litestream)
	@command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk
	@bench/run.py

build: component host

# The toolchain, wasm32-wasip2 target and components rust-toolchain.toml pins
# (a no-op once installed; some rustup versions do not install them on use).
toolchain:
	@rustup toolchain install >/dev/null 2>&1 || rustup toolchain install

component: toolchain
	$(WASM_BUILD)
	$(PAGE_BUILD)

host: toolchain
	$(NATIVE_BUILD) --bin spin-lite

## The builds of the component, by Cargo feature, with distinct names in
## target/variants/ (README, "Where it runs"): WASI 0.3 with both stores
## (book-catalog.wasm), PostgreSQL only (book-catalog-postgres.wasm: Akamai
## Functions) and SQLite only (book-catalog-sqlite.wasm); WASI 0.2 with both
## stores (book-catalog-p2.wasm: SpinKube, Spin 2.6 to 4.0). The 0.2 build
## has a target dir of its own (its SDK's dependencies differ); the 0.3 ones
## build in VARIANT_TARGET, by default one apart, so the default component
## above is never swapped under a running host. Beside them the catalog page
## (catalog-page.wasm, WASI 0.2), which deploy/'s manifests serve.
VARIANT_TARGET := target/variant-build
P2_TARGET := target/wasi-p2
WASM_BUILD := $(CARGO) build --release --locked --target wasm32-wasip2 -p book-catalog
# The catalog page (ui/): WASI 0.2 only, one build for every platform.
PAGE_BUILD := $(CARGO) build --release --locked --target wasm32-wasip2 -p catalog-page
variants: toolchain
	@mkdir -p target/variants
	CARGO_TARGET_DIR=$(VARIANT_TARGET) $(WASM_BUILD)
	cp $(VARIANT_TARGET)/wasm32-wasip2/release/book_catalog.wasm target/variants/book-catalog.wasm
	CARGO_TARGET_DIR=$(VARIANT_TARGET) $(WASM_BUILD) --no-default-features --features p3,postgres
	cp $(VARIANT_TARGET)/wasm32-wasip2/release/book_catalog.wasm target/variants/book-catalog-postgres.wasm
	CARGO_TARGET_DIR=$(VARIANT_TARGET) $(WASM_BUILD) --no-default-features --features p3,sqlite
	cp $(VARIANT_TARGET)/wasm32-wasip2/release/book_catalog.wasm target/variants/book-catalog-sqlite.wasm
	CARGO_TARGET_DIR=$(P2_TARGET) $(WASM_BUILD) --no-default-features --features p2,sqlite,postgres
	cp $(P2_TARGET)/wasm32-wasip2/release/book_catalog.wasm target/variants/book-catalog-p2.wasm
	CARGO_TARGET_DIR=$(VARIANT_TARGET) $(PAGE_BUILD)
	cp $(VARIANT_TARGET)/wasm32-wasip2/release/catalog_page.wasm target/variants/catalog-page.wasm

clean:
	$(CARGO) clean
	rm -rf build .spin
