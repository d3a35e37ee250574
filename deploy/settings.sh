#!/usr/bin/env bash
# Sourced by the deploy scripts (deploy/*/deploy.sh): the settings, from
# SPIN_VARIABLE_<NAME> in the environment (the names `spin up` reads;
# docs/configuration.md), left in `variables` as name=value and in
# `variable_flags` as --variable name=value (`read -rs` and `export` keep a
# secret out of the shell history). It refuses what the service would not
# use; the argument `postgres` also requires db_url.
: "${SPIN_VARIABLE_SECRET_TOKEN:?set SPIN_VARIABLE_SECRET_TOKEN (openssl rand -base64 48)}"
for name in SPIN_VARIABLE_SECRET_TOKEN SPIN_VARIABLE_SECRET_TOKEN_PREVIOUS; do
    if [ -n "${!name:-}" ] && [ "$(printf '%s' "${!name}" | LC_ALL=C wc -c)" -lt 32 ]; then
        echo "$name is shorter than 32 bytes: the service would not use it" >&2
        exit 2
    fi
done
if [ -z "${SPIN_VARIABLE_AUTH_PASSWORD_HASH:-}${SPIN_VARIABLE_AUTH_PASSWORD:-}" ]; then
    echo "set SPIN_VARIABLE_AUTH_PASSWORD_HASH (docs/configuration.md) or SPIN_VARIABLE_AUTH_PASSWORD" >&2
    exit 2
fi
export SPIN_VARIABLE_AUTH_USERNAME="${SPIN_VARIABLE_AUTH_USERNAME:-admin}"
if [ "${1:-}" = postgres ]; then
    : "${SPIN_VARIABLE_DB_URL:?set SPIN_VARIABLE_DB_URL (postgres://user:password@host:port/db?sslmode=require)}"
fi
if [ -n "${SPIN_VARIABLE_DB_URL:-}" ]; then
    # db_host is the host:port of db_url (no port: 5432), the one server
    # spin.toml lets the component reach (postgres://{{ db_host }}).
    host="${SPIN_VARIABLE_DB_URL#*://}"
    host="${host%%[/?#]*}"
    host="${host##*@}"
    [[ "$host" =~ :[0-9]+$ ]] || host="$host:5432"
    export SPIN_VARIABLE_DB_HOST="$host"
fi
variables=()
variable_flags=()
for name in $(compgen -e SPIN_VARIABLE_); do
    pair="$(printf '%s' "${name#SPIN_VARIABLE_}" | tr '[:upper:]' '[:lower:]')=${!name}"
    variables+=("$pair")
    variable_flags+=(--variable "$pair")
done
