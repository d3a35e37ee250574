#!/usr/bin/env bash
# One-shot backups of a live deployment, and their restore (docs/operations.md,
# "Backups and restore"):
#   backup.sh [--force] sqlite DB FILE     DB (.spin/sqlite_db.db) to FILE, while Spin serves
#   backup.sh [--force] postgres URL FILE  the database at URL to FILE (pg_dump's custom format)
#   backup.sh restore-sqlite FILE DB       FILE becomes DB (Spin stopped), then its -wal and -shm go
#   backup.sh restore-postgres FILE URL    FILE into the empty database at URL, owned by URL's role
# A backup is written to FILE.partial, then renamed: never a FILE half
# written; an existing FILE is kept unless --force. A URL holds no password
# (`ps` shows command lines to every local user): PGPASSWORD or a password
# file (~/.pgpass, PGPASSFILE) gives it. SQLite needs python3 (its sqlite3
# module); PostgreSQL pg_dump and pg_restore as new as the server (on PATH,
# else the newest in /usr/lib/postgresql).
set -euo pipefail
usage="usage: backup.sh [--force] sqlite|postgres|restore-sqlite|restore-postgres FROM TO"
force=
[ "${1:-}" != --force ] || { force=1 && shift; }
[ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
from=$2 to=$3 partial=
# A .partial is the run's own: a killed run's is replaced, a failed run's removed.
trap '[ -z "$partial" ] || rm -f "$partial"' EXIT
to_partial() {
    partial=$to.partial
    rm -f "$partial"
}
backup_to() {
    [ -n "$force" ] || [ ! -e "$to" ] || { echo "backup.sh: $to exists (--force replaces it)" >&2; exit 1; }
    to_partial
}
# A URL (or key=value string) with a password: refused.
no_password() {
    local in_url='^[a-z]+://[^/@]*:[^/@]*@' as_key='(^|[?&[:space:]])password='
    if [[ $1 =~ $in_url || $1 =~ $as_key ]]; then
        echo "backup.sh: the URL holds a password, which ps shows to every local user;" \
            "give it in PGPASSWORD or a password file (~/.pgpass, PGPASSFILE)" >&2
        exit 2
    fi
}

pg() {
    command -v "$1" >/dev/null && { echo "$1"; return; }
    ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1 | sed "s|$|/$1|"
}

# check FILE: PRAGMA integrity_check of a SQLite file is ok, else fail; the file
# alone, as copied (immutable: no -wal or -shm made beside it).
check() {
    python3 - "$1" <<'EOF'
import sqlite3, sys
with sqlite3.connect(f"file:{sys.argv[1]}?mode=ro&immutable=1", uri=True) as db:
    result = db.execute("PRAGMA integrity_check").fetchall()
sys.exit(0 if result == [("ok",)] else f"{sys.argv[1]}: integrity_check: {result[:5]}")
EOF
}

case $1 in
sqlite)
    [ -f "$from" ] || { echo "backup.sh: no database at $from" >&2; exit 1; }
    backup_to
    # VACUUM INTO reads one snapshot in one read transaction: writers go on
    # (WAL), and it never restarts. The copy is put in WAL mode, as served.
    python3 - "$from" "$partial" <<'EOF'
import sqlite3, sys
source, copy = sys.argv[1:]
with sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30) as db:
    db.execute("VACUUM INTO ?", (copy,))
with sqlite3.connect(copy) as db:
    db.execute("PRAGMA journal_mode = WAL")
EOF
    check "$partial"
    mv "$partial" "$to" ;;
postgres)
    no_password "$from"
    backup_to
    "$(pg pg_dump)" --format=custom --file="$partial" "$from"
    mv "$partial" "$to" ;;
restore-sqlite)
    check "$from"
    mkdir -p "$(dirname "$to")"
    # The copy whole beside the database first: a failed one (a full disk)
    # leaves the database and its WAL as they were; the old WAL goes before
    # the rename, never to be replayed into the copy.
    to_partial
    cp "$from" "$partial"
    rm -rf "$to-wal" "$to-shm" "$(dirname "$to")/.$(basename "$to")-litestream"
    mv "$partial" "$to" ;;
restore-postgres)
    no_password "$to"
    # --no-comments: the dump's comment on pg_trgm needs the extension's
    # owner, not the role when an admin made it (docs/operations.md).
    "$(pg pg_restore)" --exit-on-error --single-transaction --no-owner --no-privileges --no-comments \
        --dbname="$to" "$from" ;;
*) echo "$usage" >&2; exit 2 ;;
esac
