#!/usr/bin/env bash
# Prints one entry of the `accounts` setting (docs/configuration.md,
# "Accounts") for a name and a role, the password read from standard input
# (asked for without echo at a terminal) and hashed with Argon2id by the
# argon2 command (Debian's `argon2`), with the parameters and a random salt
# as that page's recipe: m=19456 KiB, t=2, p=1.
#   scripts/account.sh rita reader        # then type the password
#   printf '%s' "$PASSWORD" | scripts/account.sh ed editor
set -euo pipefail
usage="usage: scripts/account.sh NAME reader|editor < password"
name=${1:?$usage} role=${2:?$usage}
[[ $role =~ ^(reader|editor)$ ]] || { echo "$usage" >&2 && exit 2; }
command -v argon2 >/dev/null || { echo "needs the argon2 command (apt-get install argon2)" >&2 && exit 2; }
if [ -t 0 ]; then
    IFS= read -rsp "Password for $name: " password && echo >&2  # every byte typed, spaces too
else
    password=$(cat)
fi
[ -n "$password" ] || { echo "the password is empty" >&2 && exit 2; }
hash=$(printf '%s' "$password" | argon2 "$(openssl rand -hex 16)" -id -t 2 -k 19456 -p 1 -e)
python3 - "$name" "$role" "$hash" <<'PY'
import json, sys
name, role, password_hash = sys.argv[1:]
if not 1 <= len(name) <= 64 or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
    sys.exit("the name must be 1 to 64 characters, none of them a control character")
print(json.dumps({"username": name, "role": role, "password_hash": password_hash}))
PY
