#!/usr/bin/env -S python3 -B
"""Store outages while the host serves, and recovery without a restart (a real
PostgreSQL to stop and freeze, a real file system to fill). PostgreSQL stopped
(`pg-cluster.sh pause`; quick: once, full: 3 times) and frozen (SIGSTOP):
every request the 500 envelope, GET /health 503, each within a bound, the
host up; resumed: 200 again, the books from before there. SQLite: the state
directory on a full 2 MiB tmpfs (needs root, else a note), the database file
replaced by garbage, then by a directory; then space freed, the file back.
"""

import os
import shutil
import signal
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import lib
from lib import ERROR, UNAVAILABLE, wait_until

BOUND = 6.0  # seconds: the answer time promised during an outage
# A frozen server: the host's connect (5 s) and query (10 s) timeouts,
# host/src/postgres/pool.rs, bound the answer.
FROZEN_BOUND = 12.0
HEALTHY = (200, "Service healthy")


def seed(host, token, n=5):
    tag = lib.random_text(6)
    return host.seed(token, [{"title": f"Outage {tag} {i}", "author": "Before", "year": 1990 + i}
                             for i in range(n)])


def all_present(host, token, books):
    r = host.call("GET", "/books", token=token)
    if r.status != 200:
        return False, f"GET /books: {r!r}"
    listed = {b["id"]: b for b in r.data}
    wrong = [i for i, b in books.items() if listed.get(i) != dict(b, id=i)]
    return not wrong, f"missing or changed: {wrong[:5]}"


def books_ok(host, token):
    return lambda: host.call("GET", "/books", token=token, timeout=10).status == 200


def health_ok(host):
    return lambda: host.call("GET", "/health", timeout=10).is_envelope(*HEALTHY)


def judge(t, name, answers, good, what, bound):
    """Each answer `good` and within `bound` seconds."""
    slowest = max(r.elapsed for r in answers)
    bad = [r for r in answers if not good(r)]
    t.note(f"{name}: {len(answers)} requests, statuses {sorted({r.status for r in answers})}, "
           f"slowest {slowest:.2f}s")
    t.check(not bad, f"{name}: {what}", f"{len(bad)} not, e.g. {bad[:2]}")
    t.check(slowest < bound, f"{name}: each answered within {bound:.0f} s", f"slowest {slowest:.2f}s")


def outage_requests(host, token, known_id, sequential=True):
    """Every kind of request during an outage, one by one, then 20 at once."""
    body = {"title": "During", "author": "Outage", "year": 2000}
    calls = [("GET", "/books", None), ("GET", f"/book/{known_id}", None), ("POST", "/book", body),
             ("PUT", f"/book/{known_id}", {"year": 1}), ("DELETE", f"/book/{known_id}", None)]
    one = lambda c: host.call(*c, token=token, timeout=30)  # noqa: E731
    with ThreadPoolExecutor(max_workers=20) as pool:
        return ([one(c) for c in calls] if sequential else []) + list(pool.map(one, calls * 4))


def health_answers(host, n_concurrent=8):
    """GET /health once alone, then n_concurrent at once."""
    one = lambda _: host.call("GET", "/health", timeout=30)  # noqa: E731
    with ThreadPoolExecutor(max_workers=n_concurrent) as pool:
        return [one(0)] + list(pool.map(one, range(n_concurrent)))


def postgres(ctx):
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    books = seed(host, token)
    known = next(iter(books))
    for cycle in range(1, (3 if ctx.full else 1) + 1):
        ctx.pg.pause()
        try:
            # Twice: after the first wave the pool holds no live connection.
            answers = outage_requests(host, token, known) + outage_requests(host, token, known)
            judge(t, f"outage {cycle}: GET /health", health_answers(host),
                  lambda r: r.is_envelope(*UNAVAILABLE) and r.data is None,
                  "answers 503 'Service unavailable' (data null)", BOUND)
            t.check(host.alive(), f"outage {cycle}: the host stays up under health probes")
        finally:
            ctx.pg.resume()
        for what, ok in (("GET /health is 200", health_ok(host)), ("the service recovers", books_ok(host, token))):
            took = wait_until(ok, 20)
            t.check(took is not None, f"outage {cycle}: {what} again after resume, without a restart",
                    "not within 20 s")
            if took is not None:
                t.note(f"outage {cycle}: {what} {took:.2f}s after the server was back")
        judge(t, f"outage {cycle}", answers, lambda r: r.is_envelope(*ERROR),
              "every request gets the 500 'Internal server error' envelope", BOUND)
        t.check(host.alive(), f"outage {cycle}: the host stays up")
        ok, why = all_present(host, token, books)
        t.check(ok, f"outage {cycle}: the books from before are all there", why)
        made = host.seed(token, [{"title": "After", "author": "Outage", "year": cycle}])
        t.check(len(made) == 1, f"outage {cycle}: creates work again")
        books.update(made)
    frozen(ctx, host, token, books, known)
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM after the outages")


def frozen(ctx, host, token, books, known):
    """PostgreSQL frozen (SIGSTOP, then SIGCONT): connections hang instead of
    being refused, so the host's own timeouts must answer."""
    t = ctx.tally
    pids = ctx.pg.pids()
    if not pids:
        t.note("frozen-server test skipped: no postmaster.pid")
        return
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        with ThreadPoolExecutor(max_workers=2) as pool:  # requests and health probes at once
            requests = pool.submit(outage_requests, host, token, known, sequential=False)
            health = pool.submit(health_answers, host)
            answers, health = requests.result(), health.result()
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    judge(t, "PostgreSQL frozen", answers, lambda r: r.is_envelope(*ERROR),
          "every request gets the 500 envelope", FROZEN_BOUND)
    t.check(host.alive(), "PostgreSQL frozen: the host stays up")
    judge(t, "PostgreSQL frozen: GET /health", health, lambda r: r.is_envelope(*UNAVAILABLE),
          "answers 503 'Service unavailable'", FROZEN_BOUND)
    t.check(wait_until(books_ok(host, token), 30) is not None,
            "PostgreSQL thawed: the service recovers without a restart")
    t.check(wait_until(health_ok(host), 30) is not None,
            "PostgreSQL thawed: GET /health is 200 again without a restart")
    ok, why = all_present(host, token, books)
    t.check(ok, "PostgreSQL thawed: the books from before are all there", why)


def fill(path, chunk):
    """Writes zeros to `path` until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * chunk)
    except OSError:
        pass
    finally:
        os.close(fd)


def sqlite_disk_full(ctx):
    t = ctx.tally
    mnt = Path(ctx.tmp) / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        t.note(f"disk-full test skipped: mount -t tmpfs failed ({r.stderr.strip()})")
        return
    try:
        host = ctx.host(state_dir=mnt / "state").start()
        token = host.token()
        books = seed(host, token)
        fill(mnt / "filler", 65536)
        fill(mnt / "filler2", 512)  # the space left in partial blocks
        statuses, bad, slowest = Counter(), [], 0.0
        big = {"title": "F" * 1000, "author": "A" * 1000, "year": 1}
        for _ in range(300):
            r = host.call("POST", "/book", big, token, timeout=30)
            slowest = max(slowest, r.elapsed)
            statuses[r.status] += 1
            if r.status == 201:
                books[r.data["id"]] = big
            elif not r.is_envelope(*ERROR):
                bad.append(r)
            if statuses[500] >= 20:
                break
        t.note(f"disk full: creates answered {dict(statuses)}, slowest {slowest:.2f}s")
        t.check(statuses[500] > 0 and not bad,
                "disk full: creates get the 500 envelope (none another error)", f"{statuses} {bad[:2]}")
        # A read opens its own connection, as under Spin; when the last one
        # closed, SQLite removed the WAL files, and on a full disk a new
        # connection may not create them again: then the read is a 500 too.
        r = host.call("GET", "/books", token=token)
        t.check(r.is_envelope(200) or r.is_envelope(*ERROR),
                "disk full: reads answer 200, or the 500 envelope, never another error", f"{r.status}")
        t.check(host.alive(), "disk full: the host stays up")
        (mnt / "filler").unlink()
        (mnt / "filler2").unlink()

        def create_one():
            made = seed(host, token, 1)
            books.update(made)
            return made
        t.check(wait_until(create_one, 10) is not None,
                "disk full: creates work again once space is freed, without a restart")
        ok, why = all_present(host, token, books)
        t.check(ok, "disk full: every book answered 201 is there", why)
        t.check(host.stop() == 0, "disk full: the host exits 0 on SIGTERM")
        res = host.integrity()
        t.check(res == [("ok",)], "disk full: PRAGMA integrity_check = ok afterwards", f"{res}")
    finally:
        for h in ctx.hosts:
            h.kill()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def sqlite_bad_file(ctx):
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    books = seed(host, token)
    t.check(host.stop() == 0, "bad file: the host exits 0 on SIGTERM before the fault")
    db = host.state_dir / "sqlite_db.db"
    files = [Path(str(db) + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    saved = {f: f.read_bytes() for f in files if f.exists()}
    for fault in ("garbage", "directory"):
        for p in files:
            if p.is_dir():
                shutil.rmtree(p)
            p.unlink(missing_ok=True)
        if fault == "garbage":
            db.write_bytes(os.urandom(64 * 1024))
        else:
            db.mkdir()
        host.start(healthy=False)
        # The earlier token stays valid (same secret); a login needs the
        # database too (the failed-login check), so it fails closed.
        answers = [host.login(), host.call("GET", "/books", token=token),
                   host.call("POST", "/book", {"title": "x", "author": "y", "year": 1}, token),
                   host.call("GET", f"/book/{next(iter(books))}", token=token)]
        judge(t, f"database file replaced by {fault}", answers, lambda r: r.is_envelope(*ERROR),
              "500 'Internal server error' envelope", BOUND)
        t.check(host.alive(), f"database file replaced by {fault}: the host stays up")
        t.check(host.stop() == 0, f"database file replaced by {fault}: the host exits 0 on SIGTERM")
    shutil.rmtree(db)
    for f, content in saved.items():
        f.write_bytes(content)
    host.start()
    token = host.token()
    ok, why = all_present(host, token, books)
    t.check(ok, "restored: every earlier book is there", why)
    r = host.call("POST", "/book", {"title": "Restored", "author": "File", "year": 3}, token)
    t.check(r.status == 201, "restored: creates work again", f"{r!r}")
    t.check(host.stop() == 0, "restored: the host exits 0 on SIGTERM")
    res = host.integrity()
    t.check(res == [("ok",)], "restored: PRAGMA integrity_check = ok", f"{res}")


def run(ctx):
    if ctx.store == "postgres":
        postgres(ctx)
    else:
        sqlite_disk_full(ctx)
        sqlite_bad_file(ctx)


if __name__ == "__main__":
    lib.main("outages", run)
