#!/usr/bin/env bash
# `make run`: serve spin.toml with the local host (spin-lite) on the embedded
# SQLite default. Each variable spin.toml declares is taken from this shell
# by its upper-case name (SECRET_TOKEN=... make run) and given to the host as
# a Spin user gives it, SPIN_VARIABLE_<NAME> (so no secret is on a command
# line). Without a signing secret, generate a random one for this session
# rather than run with none: tokens then stop working when the server stops.
set -euo pipefail
host=${1:?host binary}
listen=${2:?listen address}

if [ -z "${SECRET_TOKEN:-}" ] && [ -z "${SPIN_VARIABLE_SECRET_TOKEN:-}" ]; then
    SECRET_TOKEN=$(head -c 48 /dev/urandom | base64 | tr -d '\n/+=')
    export SECRET_TOKEN
    cat >&2 <<'MSG'
************************************************************************
* SECRET_TOKEN is not set: a random signing key was generated for this *
* session. Tokens issued now stop working when the server stops.       *
* To keep them valid across restarts: SECRET_TOKEN=<long random> make run
************************************************************************
MSG
fi
for name in $(python3 -c 'import tomllib; print(*tomllib.load(open("spin.toml", "rb"))["variables"])'); do
    upper=${name^^}
    if [ -n "${!upper:-}" ]; then
        export "SPIN_VARIABLE_$upper=${!upper}"
    fi
done
exec "$host" --from spin.toml --listen "$listen"
