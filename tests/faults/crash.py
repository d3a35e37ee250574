#!/usr/bin/env python3
"""Crash safety: SIGKILL the host in the middle of a burst of creates.

8 threads create books as fast as they can; after ~1 s (of a ~2 s burst) the
host gets SIGKILL. It is restarted on the same state (same state directory,
same database, same secret) and every create that was answered 201 must be
there with its fields. SQLite: `PRAGMA integrity_check` on the database file
right after the kill, before the restart. quick: 1 kill; full: 5 kills.
"""

import threading
import time
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

THREADS = 8


def burst(host, token, tag, seconds):
    """Creates books from THREADS threads until `seconds` pass or the host
    dies; returns (answered 201: {id: book}, other answers, errors)."""
    created, others, errors = {}, [], []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker(w):
        k = 0
        while time.monotonic() < stop_at:
            book = {"title": f"Crash {tag} w{w} #{k}", "author": f"Kill {w}", "year": k % 3000}
            k += 1
            r = lib.try_request(host.port, "POST", "/book", body=book, token=token, timeout=10)
            with lock:
                if r.status == 201:
                    created[r.data["id"]] = book
                elif r.status == 0:
                    errors.append(r)
                    if not host.alive():
                        return
                else:
                    others.append(r)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(THREADS)]
    for th in threads:
        th.start()
    return threads, created, others, errors


def run(ctx):
    t = ctx.tally
    rounds = 5 if ctx.full else 1
    host = ctx.host().start()
    total_verified = 0
    for rnd in range(1, rounds + 1):
        token = host.token()
        tag = lib.random_text(6)
        threads, created, others, errors = burst(host, token, tag, 2.0)
        time.sleep(1.0)
        before_kill = len(created)
        host.kill()
        for th in threads:
            th.join(15)
        t.note(f"round {rnd}: SIGKILL after {before_kill} creates answered 201; "
               f"{len(created)} answered 201 in all, {len(errors)} requests failed at the connection (in flight at the kill or refused after it)")
        t.check(before_kill > 0, f"round {rnd}: creates were answered 201 before the kill")
        t.check(not [r for r in others if r.status >= 500],
                f"round {rnd}: no 5xx before the kill", f"{others[:2]}")
        if ctx.store == "sqlite":
            result = lib.sqlite_integrity(host.state_dir / "sqlite_db.db")
            t.check(result == [("ok",)], f"round {rnd}: SQLite integrity_check after SIGKILL is ok", f"{result}")
        # Same state, same secret: a restart, as after a crash.
        host.start()
        token = host.token()
        missing, changed = [], []
        for book_id, book in created.items():
            r = lib.try_request(host.port, "GET", f"/book/{book_id}", token=token)
            if r.status != 200:
                missing.append((book_id, r.status))
            elif r.data != dict(book, id=book_id):
                changed.append((book_id, r.data))
        total_verified += len(created) - len(missing) - len(changed)
        t.check(not missing and not changed,
                f"round {rnd}: all {len(created)} creates answered 201 are there after the restart, same fields",
                f"missing {missing[:5]}, changed {changed[:3]}")
        r = lib.try_request(host.port, "POST", "/book", body={"title": "After", "author": "Crash", "year": 1},
                            token=token)
        t.check(r.status == 201, f"round {rnd}: the restarted host creates books again", f"{r!r}")
    t.note(f"creates verified after SIGKILL: {total_verified} over {rounds} kill(s)")
    t.check(host.stop() == 0, "the restarted host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("crash", run)
