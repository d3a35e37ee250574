# Book Catalog Service. `make run` serves it on :8080; `make test` runs every test.

CARGO ?= cargo
WASM := target/wasm32-wasip2/release/book_catalog.wasm
HOST := target/release/book-host
LISTEN ?= 0.0.0.0:8080

.PHONY: run test build component host clean

## Build the component and the host, then serve on $(LISTEN) (SQLite default).
run: build
	@scripts/run.sh $(HOST) $(LISTEN)

## Every test: native, then end to end on SQLite and PostgreSQL. Last line: N passed, M failed.
test:
	@scripts/test-all.sh

build: component host

component:
	$(CARGO) build --release --locked --target wasm32-wasip2 -p book-catalog

host:
	$(CARGO) build --release --locked -p book-host

clean:
	$(CARGO) clean
	rm -rf build .spin
