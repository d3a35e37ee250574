#!/usr/bin/env bash
# `make run`: serve the component with the local host. Without SECRET_TOKEN
# (or SPIN_VARIABLE_SECRET_TOKEN), generate a random key for this session
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
exec "$host" --from spin.toml --listen "$listen"
