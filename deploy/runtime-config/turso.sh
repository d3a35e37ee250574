#!/usr/bin/env bash
# Creates a Turso database (default book-catalog) and a token for it with the
# turso CLI (logged in), and writes a runtime configuration that puts the
# SQLite `default` database on it, as sqlite-libsql.toml does, to
# .spin/runtime-config.toml (git ignores .spin/; the file holds the token):
#   deploy/runtime-config/turso.sh [DATABASE]
#   spin up --runtime-config-file .spin/runtime-config.toml
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
name="${1:-book-catalog}"
turso db create "$name"
url="$(turso db show --http-url "$name")"
token="$(turso db tokens create "$name")"
mkdir -p .spin
umask 077
printf '[sqlite_database.default]\ntype = "libsql"\nurl = "%s"\ntoken = "%s"\n' "$url" "$token" \
    > .spin/runtime-config.toml
