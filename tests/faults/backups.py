#!/usr/bin/env -S python3 -B
"""Restore drills, each running the commands docs/operations.md ("Backups
and restore") shows (its names made ours), with 16 writers creating books.
SQLite: Litestream (deploy/litestream/) replicating while the database
file, its WAL and -shm are deleted under the serving host; host and
Litestream stopped, the damaged files moved aside, `litestream restore
-timestamp` the moment of the loss, both started: every create acknowledged
more than the loss window before it is there, byte for byte, integrity_check
ok, and no snapshot was forced by a checkpoint of the component's; twice, so
replication goes on after a restore. A restore-sqlite whose copy fails (a
file size limit, as a full disk) leaves the database and its WAL as they
were. Both stores: scripts/backup.sh taken during the writes (SQLite: VACUUM
INTO; PostgreSQL: pg_dump) and restored (a new state dir; a new database):
every create acknowledged before it began is served, new ids follow; a
.partial a killed run left is no obstacle; an existing backup is kept unless
--force, and when a forced one fails. PostgreSQL as the service's role (it
owns its database, no superuser), passwords in a password file: none on the
command lines of psql, pg_dump and pg_restore (stand-ins log them). A backup
of a database at migration 4, restored, migrates on its first request.
"""

import datetime
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import threading
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import lib

WRITERS = 16
CONFIG = lib.ROOT / "deploy/litestream/litestream.yml"
WINDOW = 1.25  # CONFIG's monitor-interval + sync-interval: what a loss may take
DATED = "$(date -u +%Y%m%dT%H%M%SZ)"


class Writers:
    """WRITERS threads creating books (odd characters in each title) until
    `stop()`, 60 s at most; `acked`: (time of the 201, id, book)."""

    def __init__(self, host, token):
        self.acked, self.done, deadline = [], threading.Event(), time.monotonic() + 60

        def write(w):
            for k in range(1_000_000):
                if self.done.is_set() or time.monotonic() > deadline:
                    return
                book = {"title": f'Drill "{w}" \\ été 📖 {k}', "author": lib.random_text(12), "year": k}
                r = host.call("POST", "/book", book, token, timeout=10)
                if r.status == 201:
                    self.acked.append((time.monotonic(), r.data["id"], book))
        self.threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for th in self.threads:
            th.start()

    def stop(self):
        self.done.set()
        for th in self.threads:
            th.join(30)
        return self

    def before(self, moment):
        return {i: b for at, i, b in self.acked if at < moment}


def wrong(host, expected):
    """Of `expected` ({id: book}), the ids the host does not list exactly so."""
    r = host.call("GET", "/books", token=host.token(), timeout=60)
    listed = {b["id"]: b for b in r.data or []} if r.status == 200 else {}
    return [i for i, b in expected.items() if listed.get(i) != dict(b, id=i)]


def sh(*command, env=None, **kwargs):
    return subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True, timeout=300,
                          cwd=lib.ROOT, **kwargs)


def as_docs(ctx, db, copy, *steps, more=None, env=None, **kwargs):
    """The lines of docs/operations.md's "Backups and restore" commands holding
    each of `steps`, run by bash from the repository as they stand there but for
    names: the database `db` (a file; a URL: its host, port and database), the
    backup `copy`, and `more`. PostgreSQL: with the roles' password file and
    stand-ins of psql, pg_dump and pg_restore that log their command lines."""
    section = (lib.ROOT / "docs/operations.md").read_text().split("## Backups and restore")[1].split("\n## ")[0]
    lines = "".join(re.findall(r"```sh\n(.*?)```", section, re.S)).splitlines()
    script = "\n".join(next(line for line in lines if step in line and not line.startswith("#")) for step in steps)
    if ctx.store == "sqlite":
        names = {".spin/sqlite_db.db": db, f'"books-{DATED}.db"': copy, "books-20261128T101500Z.db": copy}
    else:
        u = urlsplit(db)
        names = {"db.internal:5432": f"{u.hostname}:{u.port}", "books_restored": u.path[1:], '/books"': f'{u.path}"',
                 f'"books-{DATED}.dump"': copy, "books-20261128T101500Z.dump": copy}
    for theirs, ours in dict(names, **(more or {})).items():
        script = script.replace(theirs, str(ours))
    return sh("bash", "-ec", script, env=env or pg_env(ctx), **kwargs)


def pg_env(ctx):
    """The roles' passwords in a password file; psql, pg_dump and pg_restore
    stand-ins first on PATH, logging their arguments to ctx.tmp/argv.log."""
    tmp = Path(ctx.tmp)
    env = dict(os.environ, PGPASSFILE=str(tmp / "pgpass"), PATH=f"{tmp / 'bin'}:{os.environ['PATH']}")
    if ctx.store == "postgres" and not (tmp / "bin").exists():
        (tmp / "bin").mkdir()
        (tmp / "pgpass").write_text("".join(f"{u.hostname}:{u.port}:*:{u.username}:{u.password}\n"
                                            for u in map(urlsplit, (ctx.pg.url, ctx.pg.admin_url))))
        (tmp / "pgpass").chmod(0o600)
        real = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda b: float(b.parent.name))
        for name in ("psql", "pg_dump", "pg_restore"):
            (tmp / "bin" / name).write_text(f'#!/bin/sh\necho "$0 $*" >> {tmp / "argv.log"}\nexec {real / name} "$@"\n')
            (tmp / "bin" / name).chmod(0o755)
    return env


def litestream():
    return shutil.which("litestream", path=f"{lib.ROOT / 'build/venv/bin'}:{os.environ['PATH']}") or "litestream"


def litestream_drill(ctx):
    t = ctx.tally
    host = ctx.host()
    db = host.state_dir / "sqlite_db.db"
    env = dict(os.environ, BOOKS_DB=str(db), BOOKS_REPLICA=str(Path(ctx.tmp) / "replica"),
               PATH=f"{lib.ROOT / 'build/venv/bin'}:{os.environ['PATH']}")
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    for rnd in (1, 2):
        log = Path(ctx.tmp) / f"litestream-{rnd}.log"
        with open(log, "w") as out:  # as the docs run it, its syncs logged
            replicating = subprocess.Popen([litestream(), "replicate", "-log-level", "debug", "-config", CONFIG],
                                           env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            host.start()
            writers = Writers(host, host.token())
            time.sleep(3)
            lost = time.monotonic()
            lost_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            for f in files:
                f.unlink(missing_ok=True)
            time.sleep(1.5)
            writers.stop()
            host.stop()
        finally:
            replicating.terminate()
            replicating.wait(30)
        snapshots = [line for line in log.read_text().splitlines() if "snap=true" in line and line[5:29] < lost_at]
        t.check(len(snapshots) == 1, f"round {rnd}: under the writers, Litestream made no full snapshot after its "
                "first: no checkpoint of the component's got between its own", f"{snapshots[1:3]}")
        damaged = sorted(f.name for f in db.parent.glob("*sqlite_db.db*"))  # and what the host made after
        r = as_docs(ctx, db, None, "aside=", "for f in", "litestream restore", env=env,
                    more={".spin/": f"{db.parent}/", "2026-11-28T10:15:00.250Z": lost_at})
        aside = sorted(f.name for f in max(db.parent.glob("damaged-*")).iterdir())
        t.check(r.returncode == 0 and damaged and aside == damaged, f"round {rnd}: the damaged files moved "
                "aside, kept; litestream restore -timestamp (the loss) succeeds",
                f"{damaged} {aside} {r.stderr[-500:]}")
        t.check(host.integrity() == [("ok",)], f"round {rnd}: the restored database's integrity_check is ok",
                f"{host.integrity()[:3]}")
        host.start()
        acked = {i: at for at, i, _ in writers.acked}
        missing = wrong(host, writers.before(lost))
        late = [i for i in missing if acked[i] >= lost - WINDOW]
        t.note(f"round {rnd}: {len(writers.acked)} creates acknowledged, {len(acked) - len(writers.before(lost))} "
               f"after the loss; of those before, the restore lacks {len(missing)}, the oldest acknowledged "
               f"{max([lost - acked[i] for i in missing], default=0):.2f} s before it")
        t.check(len(acked) > len(writers.before(lost - WINDOW)) > 0 and missing == late, f"round {rnd}: every "
                f"create acknowledged more than {WINDOW} s before the loss is served after the restore, byte for "
                "byte", f"{len(missing) - len(late)} not, e.g. {[i for i in missing if i not in late][:5]}")
        host.stop()


def one_shot(ctx):
    """scripts/backup.sh under the writers, restored where a new host serves it."""
    t = ctx.tally
    host = ctx.host(db_url=ctx.fresh_database()).start()
    source = host.pg_url if ctx.store == "postgres" else host.state_dir / "sqlite_db.db"
    copy = Path(ctx.tmp) / "books.backup"
    Path(f"{copy}.partial").write_text("a killed run's")
    writers = Writers(host, host.token())
    time.sleep(2)
    began = time.monotonic()
    r = as_docs(ctx, source, copy, f"backup.sh {ctx.store}")
    took = time.monotonic() - began
    time.sleep(1)
    during = len(writers.stop().before(began + took)) - len(writers.before(began))
    t.check(r.returncode == 0, f"scripts/backup.sh {ctx.store} under {WRITERS} writers succeeds, a .partial a "
            "killed run left no obstacle", r.stderr[-500:])
    t.note(f"the backup took {took:.2f} s; {during} creates acknowledged meanwhile, {len(writers.acked)} in all")
    t.check(during > 0, "writers went on while the backup ran")
    kept(ctx, source, copy)
    if ctx.store == "sqlite":  # restored in place over a crash's files: its WAL must not be replayed
        host.kill()
        t.check(Path(f"{source}-wal").exists(), "the killed host left its WAL")
    restored = serve_restored(ctx, copy, host if ctx.store == "sqlite" else None, secret=host.secret,
                              username=host.username, password=host.password)
    expected = writers.before(began)
    missing = wrong(restored, expected)
    t.check(expected and not missing, f"every one of the {len(expected)} creates acknowledged before the backup "
            "began is served from the restored copy, byte for byte", f"{len(missing)} not, e.g. {missing[:5]}")
    r = restored.call("POST", "/book", {"title": "After", "author": "Restore", "year": 1}, restored.token())
    t.check(r.status == 201 and r.data["id"] > max(expected, default=0), "the restored copy takes new books, ids "
            "after the copied ones", f"{r!r}")


def kept(ctx, source, copy):
    """An existing backup is kept: refused without --force, and when a forced one fails."""
    t, good, step = ctx.tally, copy.read_bytes(), f"backup.sh {ctx.store}"
    force = {step: f"backup.sh --force {ctx.store}"}
    garbage = Path(ctx.tmp) / "not-a-database"
    garbage.write_text("not a database")
    again = as_docs(ctx, source, copy, step)
    failed = as_docs(ctx, ctx.pg.url_of("no_such_database") if ctx.pg else garbage, copy, step, more=force)
    t.check(again.returncode == 1 and failed.returncode != 0 and copy.read_bytes() == good
            and not Path(f"{copy}.partial").exists(), "an existing backup is kept: refused again, kept when a "
            "forced backup fails, no .partial left", f"{again.returncode} {again.stderr[-300:]} {failed.returncode}")
    inode = copy.stat().st_ino
    forced = as_docs(ctx, source, copy, step, more=force)
    t.check(forced.returncode == 0 and copy.stat().st_ino != inode, "--force replaces it", forced.stderr[-300:])


def serve_restored(ctx, copy, host=None, **kwargs):
    """`copy` restored by scripts/backup.sh over `host`'s database, or into a
    new state dir or database (PostgreSQL: made by the admin, owned by the
    service's role, restored as that role); served."""
    if ctx.store == "postgres":
        target = ctx.pg.url_of("restored_" + lib.random_text(8).lower())
        host = ctx.host(db_url=target, **kwargs)
    else:
        host = host or ctx.host(state_dir=Path(ctx.tmp) / lib.random_text(8), **kwargs)
        target = host.state_dir / "sqlite_db.db"
    r = as_docs(ctx, target, copy, *["CREATE DATABASE"] * (ctx.store == "postgres"), f"backup.sh restore-{ctx.store}")
    ctx.tally.check(r.returncode == 0, f"scripts/backup.sh restore-{ctx.store} succeeds", r.stderr[-500:])
    return host.start()


def no_password_shown(ctx):
    """No password on a command line: backup.sh refuses a URL with one; the
    drills' psql, pg_dump and pg_restore had none in their arguments."""
    log = Path(ctx.tmp) / "argv.log"
    shown = log.read_text() if log.exists() else ""
    refused = sh("scripts/backup.sh", "postgres", ctx.pg.url, Path(ctx.tmp) / "never.dump", env=pg_env(ctx))
    passwords = [urlsplit(url).password for url in (ctx.pg.url, ctx.pg.admin_url)]
    ctx.tally.check(refused.returncode == 2 and shown == (log.read_text() if log.exists() else ""),
                    "backup.sh refuses a URL with a password, runs no pg_dump", refused.stderr[-300:])
    ctx.tally.check(all(f"/{name} " in shown for name in ("psql", "pg_dump", "pg_restore"))
                    and not any(pw in shown + refused.stderr for pw in passwords),
                    "no password on the command line of psql, pg_dump or pg_restore", shown[-500:])


def restore_in_place(ctx):
    """restore-sqlite whose copy fails (a file size limit, as a full disk)."""
    db, copy = Path(ctx.tmp) / "live/sqlite_db.db", Path(ctx.tmp) / "big.db"
    db.parent.mkdir()
    with closing(sqlite3.connect(copy)) as big:
        big.execute("CREATE TABLE t (x)")
        big.execute("INSERT INTO t VALUES (zeroblob(4000000))")
        big.commit()
    files = [db, Path(f"{db}-wal")]
    with closing(sqlite3.connect(db, isolation_level=None)) as live:  # open: its WAL stays
        live.execute("PRAGMA journal_mode = WAL")
        live.execute("CREATE TABLE t (x)")
        live.execute("INSERT INTO t VALUES ('the last commit')")
        before = [f.read_bytes() for f in files]
        r = as_docs(ctx, db, copy, "backup.sh restore-sqlite",
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20)))
        after = [f.read_bytes() if f.exists() else None for f in files]
    ctx.tally.check(r.returncode != 0 and after == before and not Path(f"{db}.partial").exists(),
                    "restore-sqlite whose copy fails (a full disk) leaves the database and its WAL as they were",
                    f"{r.returncode}, {[len(a or '') for a in after]} bytes after, {[len(b) for b in before]} before")


def old_schema(ctx):
    t = ctx.tally
    book = {"title": "Dune", "author": "Frank Herbert", "year": 1965}
    sql = lib.old_schema(ctx.store, 4) + "INSERT INTO books (title, author, year) VALUES ('Dune', 'Frank Herbert', 1965)"
    copy = Path(ctx.tmp) / "old.backup"
    if ctx.store == "postgres":
        source = ctx.fresh_database()
        lib.psql(source, sql)
    else:
        source = Path(ctx.tmp) / "old.db"
        with closing(sqlite3.connect(source)) as db:
            db.executescript(sql)
    r = as_docs(ctx, source, copy, f"backup.sh {ctx.store}")
    t.check(r.returncode == 0, "a database at migration 4 backed up", r.stderr[-500:])
    host = serve_restored(ctx, copy)
    r = host.call("GET", "/books?title=DUNE", token=host.token())  # 0007's index
    every = sorted(int(f.name[:4]) for f in (lib.ROOT / "migrations" / ctx.store).glob("*.sql"))
    versions = [int(v) for (v,) in host.rows("SELECT version FROM schema_migrations ORDER BY version")]
    t.check(r.status == 200 and r.data == [dict(book, id=1)] and versions == every,
            f"restored, it migrates to {every[-1]} on the first request that needs it, its book found",
            f"{r!r} {versions}")


def run(ctx):
    if ctx.store == "sqlite":
        litestream_drill(ctx)
        restore_in_place(ctx)
    one_shot(ctx)
    old_schema(ctx)
    if ctx.store == "postgres":
        no_password_shown(ctx)


if __name__ == "__main__":
    lib.main("backups", run)
