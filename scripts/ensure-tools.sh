#!/usr/bin/env bash
# Installs what `make test` needs and a fresh Debian machine lacks: hurl
# (from crates.io, with the C libraries it links), PostgreSQL and the argon2
# CLI that docs/configuration.md makes password hashes with (Debian's), and
# `otel`: opentelemetry-proto (PyPI) in build/venv, with which
# tests/faults/otel.py decodes what Spin exports; `registry`: Debian's
# docker-registry, the registry tests/faults/registry.py pushes the app to;
# `client`: openapi-python-client (PyPI) in build/venv, with which
# tests/faults/typed_client.py generates a client from openapi.yaml;
# `browser`: Debian's chromium, for tests/faults/browser.py.
# The Rust toolchain and the wasm32-wasip2 target come from
# rust-toolchain.toml through rustup, on the first cargo call.
set -euo pipefail

HURL_VERSION=8.0.1
OTEL_PROTO_VERSION=1.45.2
CLIENT_GENERATOR_VERSION=0.29.1
VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/venv"
apt_updated=false

apt_install() {
    if [ "$apt_updated" = false ]; then
        apt-get update -qq
        apt_updated=true
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_hurl=false
need_postgres=false
need_argon2=false
need_otel=false
need_registry=false
need_client=false
need_browser=false
for tool in "$@"; do
    case "$tool" in
        hurl) need_hurl=true ;;
        postgres) need_postgres=true ;;
        argon2) need_argon2=true ;;
        otel) need_otel=true ;;
        registry) need_registry=true ;;
        client) need_client=true ;;
        browser) need_browser=true ;;
        *) echo "ensure-tools: unknown tool $tool" >&2; exit 2 ;;
    esac
done

if $need_hurl && ! hurl --version 2>/dev/null | grep -q "hurl $HURL_VERSION"; then
    echo "== installing hurl $HURL_VERSION (cargo install, a few minutes)"
    apt_install libxml2-dev libcurl4-openssl-dev libclang-dev pkg-config
    # cargo here runs rust-toolchain.toml's toolchain: install it first (on a
    # fresh machine a half-installed one fails with "rustc is not applicable").
    rustup toolchain install >/dev/null 2>&1 || rustup toolchain install
    cargo install hurl --version "$HURL_VERSION" --locked --quiet
fi

if $need_postgres && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "== installing PostgreSQL (Debian package)"
    apt_install postgresql
fi

if $need_argon2 && ! command -v argon2 >/dev/null; then
    echo "== installing argon2 (Debian package)"
    apt_install argon2
fi

if $need_otel && ! "$VENV/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('opentelemetry-proto') != '$OTEL_PROTO_VERSION')" 2>/dev/null; then
    echo "== installing opentelemetry-proto $OTEL_PROTO_VERSION into $VENV"
    if [ ! -x "$VENV/bin/pip" ]; then
        python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$VENV"; }
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "opentelemetry-proto==$OTEL_PROTO_VERSION"
fi

if $need_registry && ! command -v docker-registry >/dev/null; then
    echo "== installing docker-registry (Debian package)"
    apt_install docker-registry
    # The package enables a registry service on :5000 (every interface); the
    # test starts its own on loopback. Stopping fails where systemd is not PID 1.
    if command -v systemctl >/dev/null; then
        systemctl disable --now docker-registry >/dev/null 2>&1 || true
    fi
fi

if $need_client && ! "$VENV/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('openapi-python-client') != '$CLIENT_GENERATOR_VERSION')" 2>/dev/null; then
    echo "== installing openapi-python-client $CLIENT_GENERATOR_VERSION into $VENV"
    if [ ! -x "$VENV/bin/pip" ]; then
        python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$VENV"; }
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$CLIENT_GENERATOR_VERSION"
fi

if $need_browser && ! command -v chromium >/dev/null; then
    echo "== installing chromium (Debian package)"
    apt_install chromium
fi
