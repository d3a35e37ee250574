#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on a free loopback port, for tests.
#   pg-cluster.sh start DIR [--tls]
#                             initialises and starts it; prints its superuser's
#                             URL (the tests' own steps). Database `books` is
#                             owned by role `books` (its password in
#                             DIR/books.pwfile), as production runs the
#                             service: it logs in, owns its database and
#                             nothing else (no superuser, CREATEDB or
#                             CREATEROLE). With
#                             --tls it also serves TLS, with a certificate for
#                             IP 127.0.0.1 signed by a CA of its own
#                             (DIR/ca.crt), which no system trusts.
#   pg-cluster.sh pause DIR   stops the server, keeping its data (outage tests)
#   pg-cluster.sh resume DIR  starts it again on the same port
#   pg-cluster.sh stop DIR    stops it and removes DIR
# initdb refuses to run as root, so the cluster belongs to user postgres.
set -euo pipefail

usage="usage: pg-cluster.sh start|pause|resume|stop DIR [--tls]"
command=${1:?$usage}
dir=${2:?$usage}
tls=${3:-}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_postgres() { runuser -u postgres -- "$@"; }
server_start() {
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-p $(cat "$dir/port") -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" \
        start >/dev/null
}

case "$command" in
start)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    mkdir -p "$dir"
    chown postgres: "$dir"
    printf '%s\n' "$password" > "$dir/pwfile"
    chown postgres: "$dir/pwfile"
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1
    echo "$port" > "$dir/port"
    if [ "$tls" = --tls ]; then
        (
            cd "$dir"
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=book-catalog test CA" \
                -keyout ca.key -out ca.crt 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
                -keyout server.key -out server.csr 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
                -extfile server.ext -out server.crt 2>/dev/null
            chown postgres: server.key server.crt
            chmod 600 server.key
        )
        printf "ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n" \
            "$dir/server.crt" "$dir/server.key" >> "$dir/data/postgresql.conf"
    fi
    server_start
    python3 -c 'import secrets; print(secrets.token_hex(16))' > "$dir/books.pwfile"
    echo "CREATE ROLE books LOGIN PASSWORD '$(cat "$dir/books.pwfile")'; CREATE DATABASE books OWNER books" |
        as_postgres "$bin/psql" -h "$dir" -p "$port" -U postgres -X -q -v ON_ERROR_STOP=1 postgres
    echo "postgres://postgres:$password@127.0.0.1:$port/books?sslmode=disable"
    ;;
pause)
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
resume)
    server_start
    ;;
stop)
    if [ -d "$dir/data" ]; then
        as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
