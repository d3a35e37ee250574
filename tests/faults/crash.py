#!/usr/bin/env -S python3 -B
"""SIGKILL in a burst of creates (8 threads; quick: 1 kill, full: 5): after a
restart on the same state every create answered 201 is there with its
fields; SQLite's `PRAGMA integrity_check` right after the kill.
"""

import threading
import time

import lib

THREADS = 8


def burst(host, token, tag, seconds):
    """Creates books from THREADS threads until `seconds` pass or the host dies:
    (threads, answered 201 {id: book}, other answers, connection errors)."""
    created, others, errors, lock = {}, [], [], threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker(w):
        k = 0
        while time.monotonic() < stop_at:
            book = {"title": f"Crash {tag} w{w} #{k}", "author": f"Kill {w}", "year": k % 3000}
            k += 1
            r = host.call("POST", "/book", book, token, timeout=10)
            with lock:
                if r.status == 201:
                    created[r.data["id"]] = book
                elif r.status:
                    others.append(r)
                else:
                    errors.append(r)
                    if not host.alive():
                        return

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(THREADS)]
    for th in threads:
        th.start()
    return threads, created, others, errors


def run(ctx):
    t = ctx.tally
    rounds = 5 if ctx.full else 1
    host = ctx.host().start()
    verified = 0
    for rnd in range(1, rounds + 1):
        threads, created, others, errors = burst(host, host.token(), lib.random_text(6), 2.0)
        time.sleep(1.0)
        before_kill = len(created)
        host.kill()
        for th in threads:
            th.join(15)
        t.note(f"round {rnd}: SIGKILL after {before_kill} creates answered 201; {len(created)} in "
               f"all, {len(errors)} failed at the connection (in flight at the kill or after it)")
        t.check(before_kill > 0, f"round {rnd}: creates were answered 201 before the kill")
        t.check(not [r for r in others if r.status >= 500], f"round {rnd}: no 5xx before the kill",
                f"{others[:2]}")
        if ctx.store == "sqlite":
            result = host.integrity()
            t.check(result == [("ok",)], f"round {rnd}: SQLite integrity_check after SIGKILL is ok", f"{result}")
        host.start()  # same state, same secret: a restart, as after a crash
        token = host.token()
        reads = {i: host.call("GET", f"/book/{i}", token=token) for i in created}
        wrong = [(i, r) for i, r in reads.items() if r.status != 200 or r.data != dict(created[i], id=i)]
        verified += len(created) - len(wrong)
        t.check(not wrong, f"round {rnd}: all {len(created)} creates answered 201 are there after the "
                "restart, same fields", f"{len(wrong)} missing or changed, e.g. {wrong[:3]}")
        r = host.call("POST", "/book", {"title": "After", "author": "Crash", "year": 1}, token)
        t.check(r.status == 201, f"round {rnd}: the restarted host creates books again", f"{r!r}")
    t.note(f"creates verified after SIGKILL: {verified} over {rounds} kill(s)")
    t.check(host.stop() == 0, "the restarted host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("crash", run)
