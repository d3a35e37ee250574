#!/usr/bin/env python3
"""Puts benchmark books straight into the database behind a server under test.

Writing rows directly is much faster than through the API, and keeps the
seeding out of the measured runs. The tables are created from the project's
own migrations first (migrations/STORE/*.sql in order; each is idempotent),
as the servers would create them.

    seed.py STORE reset           drop the tables (PostgreSQL) or the books (SQLite)
    seed.py STORE clear           delete every book (the id counter goes on)
    seed.py STORE ensure N        books 1..N exist (adds max(id)+1..N)
    seed.py STORE range COUNT     adds COUNT books after max(id); prints the first id

STORE is sqlite:PATH (a SQLite file) or a postgres:// URL (run through psql).
Ids are given explicitly; afterwards the store's id counter (SQLite's
AUTOINCREMENT sequence, PostgreSQL's identity sequence) is past every seeded
id, so books created through the API never collide with them.
"""

import os
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIGRATIONS = os.path.join(ROOT, "migrations")


def migrations(store):
    """The migration files of `store` (sqlite or postgres), in order, as one script."""
    folder = os.path.join(MIGRATIONS, store)
    script = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as migration:
            script.append(migration.read())
    return "\n".join(script)


def sqlite_connect(path):
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)
    connection.executescript(migrations("sqlite"))
    return connection


def sqlite_insert(connection, first, last):
    if last < first:
        return
    rows = (
        (i, f"Title {i}", f"Author {i % 997}", 1900 + i % 125)
        for i in range(first, last + 1)
    )
    connection.execute("BEGIN IMMEDIATE")
    connection.executemany(
        "INSERT INTO books (id, title, author, year) VALUES (?, ?, ?, ?)", rows
    )
    connection.execute("COMMIT")


def sqlite_max(connection):
    return connection.execute("SELECT COALESCE(MAX(id), 0) FROM books").fetchone()[0]


def psql(url, sql):
    result = subprocess.run(
        ["psql", url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


def pg_insert_sql(first_sql, last_sql):
    return (
        "INSERT INTO books (id, title, author, year) "
        "SELECT g, 'Title ' || g, 'Author ' || (g % 997), 1900 + g % 125 "
        f"FROM generate_series(({first_sql}), ({last_sql})) AS g; "
        "SELECT setval(pg_get_serial_sequence('books', 'id'), "
        "(SELECT GREATEST(MAX(id), 1) FROM books));"
    )


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    store, command = argv[1], argv[2]
    if store.startswith("sqlite:"):
        connection = sqlite_connect(store[len("sqlite:"):])
        if command in ("reset", "clear"):
            connection.execute("DELETE FROM books")
        elif command == "ensure":
            sqlite_insert(connection, sqlite_max(connection) + 1, int(argv[3]))
        elif command == "range":
            count = int(argv[3])
            first = sqlite_max(connection) + 1
            sqlite_insert(connection, first, first + count - 1)
            print(first)
        else:
            sys.exit(__doc__)
        connection.close()
    elif store.startswith(("postgres://", "postgresql://")):
        if command == "reset":
            psql(store, "DROP TABLE IF EXISTS books, login_failures, login_attempts, "
                        "schema_migrations; " + migrations("postgres"))
        elif command == "clear":
            psql(store, "TRUNCATE books")
        elif command == "ensure":
            n = int(argv[3])
            psql(store, pg_insert_sql("SELECT COALESCE(MAX(id), 0) + 1 FROM books", str(n)))
        elif command == "range":
            count = int(argv[3])
            first = int(psql(store, "SELECT COALESCE(MAX(id), 0) + 1 FROM books"))
            psql(store, pg_insert_sql(str(first), str(first + count - 1)) + " ANALYZE books;")
            print(first)
        else:
            sys.exit(__doc__)
    else:
        sys.exit(f"unknown store {store!r}")


if __name__ == "__main__":
    main(sys.argv)
