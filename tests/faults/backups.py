#!/usr/bin/env -S python3 -B
"""Restore drills, each as docs/operations.md ("Backups and restore") says it,
with 16 writers creating books. SQLite: Litestream (deploy/litestream/)
replicating while the database file, its WAL and -shm are deleted under the
serving host; host and Litestream stopped, `litestream restore -timestamp`
the moment of the loss, both started: every create acknowledged more than
the loss window before it is there, byte for byte, integrity_check ok, and
no snapshot was forced by a checkpoint of the component's; twice, so
replication goes on after a restore. Both stores: scripts/backup.sh taken
during the writes (SQLite: VACUUM INTO; PostgreSQL: pg_dump) and restored (a
new state dir; a new database): every create acknowledged before it began is
served, new ids follow. A backup of a database at migration 4, restored,
migrates on its first request.
"""

import datetime
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from contextlib import closing
from pathlib import Path

import lib

WRITERS = 16
CONFIG = lib.ROOT / "deploy/litestream/litestream.yml"
WINDOW = 1.25  # CONFIG's monitor-interval + sync-interval: what a loss may take
BACKUP = str(lib.ROOT / "scripts/backup.sh")


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


def sh(*command, env=None):
    return subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True, timeout=300)


def litestream():
    return shutil.which("litestream", path=f"{lib.ROOT / 'build/venv/bin'}:{os.environ['PATH']}") or "litestream"


def litestream_drill(ctx):
    t = ctx.tally
    host = ctx.host()
    db = host.state_dir / "sqlite_db.db"
    env = dict(os.environ, BOOKS_DB=str(db), BOOKS_REPLICA=str(Path(ctx.tmp) / "replica"))
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
        for f in files:  # and the new database the host made after the loss
            f.unlink(missing_ok=True)
        shutil.rmtree(db.parent / f".{db.name}-litestream", ignore_errors=True)
        r = sh(litestream(), "restore", "-config", CONFIG, "-timestamp", lost_at, db, env=env)
        t.check(r.returncode == 0, f"round {rnd}: litestream restore -timestamp (the loss) succeeds", r.stderr[-500:])
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
    writers = Writers(host, host.token())
    time.sleep(2)
    began = time.monotonic()
    r = sh(BACKUP, ctx.store, source, copy)
    took = time.monotonic() - began
    time.sleep(1)
    during = len(writers.stop().before(began + took)) - len(writers.before(began))
    t.check(r.returncode == 0, f"scripts/backup.sh {ctx.store} under {WRITERS} writers succeeds", r.stderr[-500:])
    t.note(f"the backup took {took:.2f} s; {during} creates acknowledged meanwhile, {len(writers.acked)} in all")
    t.check(during > 0, "writers went on while the backup ran")
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


def serve_restored(ctx, copy, host=None, **kwargs):
    """`copy` restored by scripts/backup.sh over `host`'s database, or into a
    new state dir or database; served."""
    if ctx.store == "postgres":
        target = ctx.fresh_database()
        host = ctx.host(db_url=target, **kwargs)
    else:
        host = host or ctx.host(state_dir=Path(ctx.tmp) / lib.random_text(8), **kwargs)
        target = host.state_dir / "sqlite_db.db"
    r = sh(BACKUP, f"restore-{ctx.store}", copy, target)
    ctx.tally.check(r.returncode == 0, f"scripts/backup.sh restore-{ctx.store} succeeds", r.stderr[-500:])
    return host.start()


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
    r = sh(BACKUP, ctx.store, source, copy)
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
    one_shot(ctx)
    old_schema(ctx)


if __name__ == "__main__":
    lib.main("backups", run)
