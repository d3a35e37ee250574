#!/usr/bin/env bash
# One-shot backups of a live deployment, and their restore (docs/operations.md,
# "Backups and restore"):
#   backup.sh sqlite DB FILE             DB (.spin/sqlite_db.db) to FILE, while Spin serves
#   backup.sh postgres URL FILE          the database at URL to FILE (pg_dump's custom format)
#   backup.sh restore-sqlite FILE DB     FILE becomes DB (Spin stopped); its -wal and -shm go
#   backup.sh restore-postgres FILE URL  FILE into the empty database at URL
# SQLite needs python3 (its sqlite3 module); PostgreSQL pg_dump and pg_restore
# as new as the server (on PATH, else the newest in /usr/lib/postgresql).
set -euo pipefail
usage="usage: backup.sh sqlite|postgres|restore-sqlite|restore-postgres FROM TO"
[ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
from=$2 to=$3

pg() {
    command -v "$1" >/dev/null && { echo "$1"; return; }
    ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1 | sed "s|$|/$1|"
}

# check FILE: PRAGMA integrity_check of a SQLite file is ok, else fail.
check() {
    python3 - "$1" <<'EOF'
import sqlite3, sys
with sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True) as db:
    result = db.execute("PRAGMA integrity_check").fetchall()
sys.exit(0 if result == [("ok",)] else f"{sys.argv[1]}: integrity_check: {result[:5]}")
EOF
}

case $1 in
sqlite)
    [ -f "$from" ] || { echo "backup.sh: no database at $from" >&2; exit 1; }
    [ ! -e "$to" ] || { echo "backup.sh: $to exists" >&2; exit 1; }
    # VACUUM INTO reads one snapshot in one read transaction: writers go on
    # (WAL), and it never restarts. The copy is put in WAL mode, as served.
    python3 - "$from" "$to.partial" <<'EOF'
import sqlite3, sys
source, copy = sys.argv[1:]
with sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30) as db:
    db.execute("VACUUM INTO ?", (copy,))
with sqlite3.connect(copy) as db:
    db.execute("PRAGMA journal_mode = WAL")
EOF
    check "$to.partial"
    mv "$to.partial" "$to" ;;
postgres)
    "$(pg pg_dump)" --format=custom --file="$to" "$from" ;;
restore-sqlite)
    check "$from"
    mkdir -p "$(dirname "$to")"
    rm -rf "$to-wal" "$to-shm" "$(dirname "$to")/.$(basename "$to")-litestream"
    cp "$from" "$to.partial"
    mv "$to.partial" "$to" ;;
restore-postgres)
    "$(pg pg_restore)" --exit-on-error --single-transaction --no-owner --no-privileges --dbname="$to" "$from" ;;
*) echo "$usage" >&2; exit 2 ;;
esac
