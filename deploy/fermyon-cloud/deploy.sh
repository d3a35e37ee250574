#!/usr/bin/env bash
# Deploys the Book Catalog to Fermyon Cloud with the cloud plugin's
# `spin cloud deploy` (Spin 4 has no default deploy plugin), reading the
# settings from the environment so that they stay out of the shell history
# (README.md in this folder):
#   SPIN_VARIABLE_SECRET_TOKEN        required: at least 32 bytes
#                                     (openssl rand -base64 48)
#   SPIN_VARIABLE_AUTH_PASSWORD_HASH  an Argon2id PHC string
#                                     (Debian's argon2 CLI: README.md), or
#   SPIN_VARIABLE_AUTH_PASSWORD       a plain password: one of the two is required
#   SPIN_VARIABLE_AUTH_USERNAME       default admin
#   SPIN_VARIABLE_DB_URL              optional: postgres://...; empty = the cloud
#                                     SQLite database linked to the label "default"
#   SPIN_VARIABLE_DB_HOST             with DB_URL: its host:port, exactly
#   BOOK_CATALOG_SQLITE_DB            the cloud SQLite database the label
#                                     "default" is linked to on the first deploy
#                                     (created if missing); default book-catalog
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${SPIN_VARIABLE_SECRET_TOKEN:?set SPIN_VARIABLE_SECRET_TOKEN (openssl rand -base64 48)}"
if [ "$(printf '%s' "$SPIN_VARIABLE_SECRET_TOKEN" | LC_ALL=C wc -c)" -lt 32 ]; then
    echo "SPIN_VARIABLE_SECRET_TOKEN is shorter than 32 bytes: the service would not use it" >&2
    exit 2
fi

args=(
    --link "sqlite:default=${BOOK_CATALOG_SQLITE_DB:-book-catalog}"
    --variable "secret_token=$SPIN_VARIABLE_SECRET_TOKEN"
    --variable "auth_username=${SPIN_VARIABLE_AUTH_USERNAME:-admin}"
)
if [ -n "${SPIN_VARIABLE_AUTH_PASSWORD_HASH:-}" ]; then
    args+=(--variable "auth_password_hash=$SPIN_VARIABLE_AUTH_PASSWORD_HASH")
elif [ -n "${SPIN_VARIABLE_AUTH_PASSWORD:-}" ]; then
    args+=(--variable "auth_password=$SPIN_VARIABLE_AUTH_PASSWORD")
else
    echo "set SPIN_VARIABLE_AUTH_PASSWORD_HASH (or SPIN_VARIABLE_AUTH_PASSWORD)" >&2
    exit 2
fi
if [ -n "${SPIN_VARIABLE_DB_URL:-}" ]; then
    : "${SPIN_VARIABLE_DB_HOST:?set SPIN_VARIABLE_DB_HOST to the host:port of SPIN_VARIABLE_DB_URL}"
    args+=(--variable "db_url=$SPIN_VARIABLE_DB_URL" --variable "db_host=$SPIN_VARIABLE_DB_HOST")
fi

spin build
exec spin cloud deploy "${args[@]}"
