#!/usr/bin/env bash
# `spin deploy` of the Book Catalog to Fermyon Cloud with its variables,
# read from the environment (README.md in this folder):
#   SPIN_VARIABLE_SECRET_TOKEN   required: at least 32 random bytes
#   SPIN_VARIABLE_AUTH_PASSWORD  required
#   SPIN_VARIABLE_AUTH_USERNAME  default admin
#   SPIN_VARIABLE_DB_URL         optional: postgres://...; empty = the cloud's
#                                SQLite database "default"
#   SPIN_VARIABLE_DB_HOST        with DB_URL: its host:port, exactly
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${SPIN_VARIABLE_SECRET_TOKEN:?set SPIN_VARIABLE_SECRET_TOKEN (openssl rand -base64 48)}"
: "${SPIN_VARIABLE_AUTH_PASSWORD:?set SPIN_VARIABLE_AUTH_PASSWORD}"

args=(
    --variable "secret_token=$SPIN_VARIABLE_SECRET_TOKEN"
    --variable "auth_username=${SPIN_VARIABLE_AUTH_USERNAME:-admin}"
    --variable "auth_password=$SPIN_VARIABLE_AUTH_PASSWORD"
)
if [ -n "${SPIN_VARIABLE_DB_URL:-}" ]; then
    : "${SPIN_VARIABLE_DB_HOST:?set SPIN_VARIABLE_DB_HOST to the host:port of SPIN_VARIABLE_DB_URL}"
    args+=(--variable "db_url=$SPIN_VARIABLE_DB_URL" --variable "db_host=$SPIN_VARIABLE_DB_HOST")
fi

spin build
exec spin deploy "${args[@]}"
