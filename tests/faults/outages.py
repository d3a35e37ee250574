#!/usr/bin/env python3
"""Store outages while the host serves, and recovery without a restart.

PostgreSQL stopped (`pg-cluster.sh pause`, quick: once; full: 3 times) and
frozen (SIGSTOP): every request gets the 500 envelope, GET /health 503, each
within a bound, the host stays up; resumed: 200 again without a restart, the
books from before there. SQLite: the state directory on a full 2 MiB tmpfs
(needs root, skipped with a note otherwise), and the database file replaced
by garbage, then by a directory; then the space freed or the file put back.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

BOUND = 6.0  # seconds: the answer time promised during an outage
ERROR = (500, "Internal server error")
# A frozen server: the host's connect timeout (5 s) and query timeout (10 s),
# host/src/postgres/pool.rs, bound the answer.
FROZEN_BOUND = 12.0


def create_books(host, token, n, tag):
    made = {}
    for i in range(n):
        book = {"title": f"Outage {tag} {i}", "author": "Before", "year": 1990 + i}
        r = host.call("POST", "/book", book, token)
        if r.status == 201:
            made[r.data["id"]] = book
    return made


def all_present(host, token, books):
    r = lib.try_request(host.port, "GET", "/books", token=token)
    if r.status != 200:
        return False, f"GET /books: {r!r}"
    listed = {b["id"]: b for b in r.data}
    wrong = [i for i, b in books.items() if listed.get(i) != dict(b, id=i)]
    return not wrong, f"missing or changed: {wrong[:5]}"


def wait_until(ok, seconds):
    """Polls `ok()` until true; returns the time it took, or None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if ok():
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def books_ok(host, token):
    return lambda: lib.try_request(host.port, "GET", "/books", token=token, timeout=10).status == 200


def health_ok(host):
    return lambda: lib.try_request(host.port, "GET", "/health", timeout=10).is_envelope(*HEALTHY)


def judge(t, name, answers, good, what, bound):
    """Notes the answers' statuses and slowest time; checks each is `good`
    and came within `bound` seconds."""
    slowest = max(r.elapsed for r in answers)
    bad = [r for r in answers if not good(r)]
    t.note(f"{name}: {len(answers)} requests, statuses {sorted({r.status for r in answers})}, "
           f"slowest {slowest:.2f}s")
    t.check(not bad, f"{name}: {what}", f"{len(bad)} not, e.g. {bad[:2]}")
    t.check(slowest < bound, f"{name}: each answered within {bound:.0f} s", f"slowest {slowest:.2f}s")


def outage_requests(host, token, known_id, sequential=True):
    """Sequential and concurrent requests during an outage; returns them."""
    body = {"title": "During", "author": "Outage", "year": 2000}
    calls = [("GET", "/books", None), ("GET", f"/book/{known_id}", None), ("POST", "/book", body),
             ("PUT", f"/book/{known_id}", {"year": 1}), ("DELETE", f"/book/{known_id}", None)]
    seq = [lib.try_request(host.port, m, p, body=b, token=token, timeout=30) for m, p, b in calls] \
        if sequential else []
    with ThreadPoolExecutor(max_workers=20) as pool:
        conc = list(pool.map(lambda c: lib.try_request(host.port, c[0], c[1], body=c[2], token=token,
                                                       timeout=30), calls * 4))
    return seq + conc


HEALTHY = (200, "Service healthy")
UNAVAILABLE = (503, "Service unavailable")


def health_answers(host, n_concurrent=8):
    """GET /health, once alone and n_concurrent times at once."""
    first = [lib.try_request(host.port, "GET", "/health", timeout=30)]
    with ThreadPoolExecutor(max_workers=n_concurrent) as pool:
        return first + list(pool.map(lambda _: lib.try_request(host.port, "GET", "/health", timeout=30),
                                     range(n_concurrent)))


def health_outage(ctx, host, cycle):
    """GET /health while PostgreSQL is stopped (the caller paused it): 503
    within the connect timeout, no detail in the body, the host stays up."""
    judge(ctx.tally, f"outage {cycle}: GET /health", health_answers(host),
          lambda r: r.is_envelope(*UNAVAILABLE) and r.data is None,
          "answers 503 'Service unavailable' (data null)", BOUND)
    ctx.tally.check(host.alive(), f"outage {cycle}: the host stays up under health probes")


def postgres(ctx):
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    books = create_books(host, token, 5, lib.random_text(6))
    known = next(iter(books))
    r = lib.try_request(host.port, "GET", "/health")
    t.check(r.is_envelope(*HEALTHY) and r.data is None,
            "GET /health answers 200 'Service healthy' while PostgreSQL runs", f"{r!r}")
    for cycle in range(1, (3 if ctx.full else 1) + 1):
        ctx.pg.pause()
        try:
            answers = outage_requests(host, token, known)
            # Once more after the first wave: the pool holds no live connection now.
            answers += outage_requests(host, token, known)
            health_outage(ctx, host, cycle)
        finally:
            ctx.pg.resume()
        healthy_after = wait_until(health_ok(host), 20)
        t.check(healthy_after is not None,
                f"outage {cycle}: GET /health is 200 again after resume, without a restart",
                "no 200 within 20 s")
        if healthy_after is not None:
            t.note(f"outage {cycle}: GET /health 200 {healthy_after:.2f}s after the server was back")
        judge(t, f"outage {cycle}", answers, lambda r: r.is_envelope(*ERROR),
              "every request gets the 500 'Internal server error' envelope", BOUND)
        t.check(host.alive(), f"outage {cycle}: the host stays up")
        took = wait_until(books_ok(host, token), 20)
        t.check(took is not None, f"outage {cycle}: the service recovers after resume, without a restart",
                "no 200 within 20 s")
        if took is not None:
            t.note(f"outage {cycle}: first 200 {took:.2f}s after the server was back")
        ok, why = all_present(host, token, books)
        t.check(ok, f"outage {cycle}: the books from before are all there", why)
        r = host.call("POST", "/book", {"title": "After", "author": "Outage", "year": cycle}, token)
        t.check(r.status == 201, f"outage {cycle}: creates work again", f"{r!r}")
        if r.status == 201:
            books[r.data["id"]] = {"title": "After", "author": "Outage", "year": cycle}
    frozen(ctx, host, token, books, known)
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM after the outages")


def cluster_pids(pg):
    """The postmaster of the cluster and its children (by /proc), by pid."""
    try:
        master = int((Path(pg.dir) / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [master]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == master:
                pids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return pids


def frozen(ctx, host, token, books, known):
    """PostgreSQL frozen (SIGSTOP on its processes, SIGCONT after): connections
    hang instead of being refused, so the host's own timeouts must answer."""
    t = ctx.tally
    pids = cluster_pids(ctx.pg)
    if not pids:
        t.note("frozen-server test skipped: no postmaster.pid")
        return
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        # Requests and health probes at once: each waits out a timeout.
        with ThreadPoolExecutor(max_workers=2) as pool:
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
        books = create_books(host, token, 5, lib.random_text(6))
        filler = mnt / "filler"
        fill(filler, 65536)
        fill(mnt / "filler2", 512)  # the space left in partial blocks
        statuses, bad, slowest = Counter(), [], 0.0
        big = {"title": "F" * 1000, "author": "A" * 1000, "year": 1}
        for _ in range(300):
            r = lib.try_request(host.port, "POST", "/book", body=big, token=token, timeout=30)
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
        filler.unlink()
        (mnt / "filler2").unlink()
        def create_one():
            made = create_books(host, token, 1, "freed")
            books.update(made)
            return made

        t.check(wait_until(create_one, 10) is not None,
                "disk full: creates work again once space is freed, without a restart")
        ok, why = all_present(host, token, books)
        t.check(ok, "disk full: every book answered 201 is there", why)
        t.check(host.stop() == 0, "disk full: the host exits 0 on SIGTERM")
        res = lib.sqlite_integrity(host.state_dir / "sqlite_db.db")
        t.check(res == [("ok",)], "disk full: PRAGMA integrity_check = ok afterwards", f"{res}")
    finally:
        for h in ctx.hosts:
            h.kill()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def sqlite_bad_file(ctx):
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    books = create_books(host, token, 5, lib.random_text(6))
    t.check(host.stop() == 0, "bad file: the host exits 0 on SIGTERM before the fault")
    db = host.state_dir / "sqlite_db.db"
    saved = Path(ctx.tmp) / "saved.db"
    shutil.copy2(db, saved)
    for suffix in ("-wal", "-shm", "-journal"):
        extra = Path(str(db) + suffix)
        if extra.exists():
            shutil.copy2(extra, Path(str(saved) + suffix))
    for fault in ("garbage", "directory"):
        for suffix in ("", "-wal", "-shm", "-journal"):
            p = Path(str(db) + suffix)
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        if fault == "garbage":
            db.write_bytes(os.urandom(64 * 1024))
        else:
            db.mkdir()
        host.start(healthy=False)
        # The earlier token stays valid (same secret). A login needs the
        # database too (the failed-login check), so it fails closed.
        answers = [host.login(),
                   host.call("GET", "/books", token=token),
                   host.call("POST", "/book", {"title": "x", "author": "y", "year": 1}, token),
                   host.call("GET", f"/book/{next(iter(books))}", token=token)]
        judge(t, f"database file replaced by {fault}", answers, lambda r: r.is_envelope(*ERROR),
              "500 'Internal server error' envelope", BOUND)
        t.check(host.alive(), f"database file replaced by {fault}: the host stays up")
        t.check(host.stop() == 0, f"database file replaced by {fault}: the host exits 0 on SIGTERM")
    # Restore.
    shutil.rmtree(db)
    shutil.copy2(saved, db)
    host.start()
    token = host.token()
    ok, why = all_present(host, token, books)
    t.check(ok, "restored: every earlier book is there", why)
    r = host.call("POST", "/book", {"title": "Restored", "author": "File", "year": 3}, token)
    t.check(r.status == 201, "restored: creates work again", f"{r!r}")
    t.check(host.stop() == 0, "restored: the host exits 0 on SIGTERM")
    res = lib.sqlite_integrity(db)
    t.check(res == [("ok",)], "restored: PRAGMA integrity_check = ok", f"{res}")


def run(ctx):
    if ctx.store == "postgres":
        postgres(ctx)
    else:
        sqlite_disk_full(ctx)
        sqlite_bad_file(ctx)


if __name__ == "__main__":
    lib.main("outages", run)
