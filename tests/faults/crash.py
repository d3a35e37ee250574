#!/usr/bin/env -S python3 -B
"""SIGKILL in a burst of writes (8 threads, each creating books and updating
its own, made before the burst or in it; quick: 1 kill, full: 5), on SQLite
under `SQLITE_SYNCHRONOUS=normal` and `=full`, each on a host of its own:
after a restart on the same state every create answered 201 and every update
answered 200 is there with its fields (or the update sent after it that the
kill left unanswered); SQLite's `PRAGMA integrity_check` right after the kill.
"""

import threading
import time

import lib

THREADS, OWN = 8, 4  # OWN: books each thread creates before the burst, to update


def burst(host, token, tag, seconds, owned):
    """Writes from THREADS threads until `seconds` pass or the host dies: thread
    w alternately creates a book and updates (PUT, every field) the next of its
    own (`owned[w]`, then its creates). Returns (threads, {id: fields} of the
    last 2xx, {id: [fields sent since, unanswered]}, creates answered 201,
    updates answered 200, other answers, connection errors)."""
    acked, unanswered, others, errors, lock = {}, {}, [], [], threading.Lock()
    done = {"POST": 0, "PUT": 0}
    stop_at = time.monotonic() + seconds

    def worker(w):
        mine, k = list(owned[w]), 0
        while time.monotonic() < stop_at:
            book = {"title": f"Crash {tag} w{w} #{k}", "author": f"Kill {w}", "year": k % 3000}
            book_id = mine[k // 2 % len(mine)] if k % 2 and mine else None
            k += 1
            if book_id is None:
                r = host.call("POST", "/book", book, token, timeout=10)
            else:
                r = host.call("PUT", f"/book/{book_id}", book, token, timeout=10)
            with lock:
                if r.status in (200, 201):
                    book_id = r.data["id"] if r.status == 201 else book_id
                    acked[book_id], unanswered[book_id] = book, []
                    mine += [book_id] * (r.status == 201)
                    done["PUT" if r.status == 200 else "POST"] += 1
                elif r.status:
                    others.append(r)
                else:
                    errors.append(r)
                    if book_id is not None:
                        unanswered.setdefault(book_id, []).append(book)
                    if not host.alive():
                        return

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(THREADS)]
    for th in threads:
        th.start()
    return threads, acked, unanswered, done, others, errors


def kill_rounds(ctx, policy):
    """`rounds` SIGKILLs of a host (SQLite: under `policy`), each restarted on the same state."""
    t = ctx.tally
    label = f"sqlite_synchronous={policy}, " if policy else ""
    host = ctx.host()
    if policy:
        host.own_settings["SQLITE_SYNCHRONOUS"] = policy
    host.start()
    token, verified, landed = host.token(), 0, 0
    rounds = 5 if ctx.full else 1
    for rnd in range(1, rounds + 1):
        name, tag = f"{label}round {rnd}", lib.random_text(6)
        seeds = [{"title": f"Seed {tag} {w} {i}", "author": "Before", "year": i} for w in range(THREADS)
                 for i in range(OWN)]
        made = host.seed(token, seeds)
        owned = [list(made)[w * OWN:(w + 1) * OWN] for w in range(THREADS)]
        t.check(len(made) == len(seeds), f"{name}: {len(seeds)} books to update created", f"{len(made)}")
        threads, acked, unanswered, done, others, errors = burst(host, token, tag, 2.0, owned)
        time.sleep(1.0)
        before_kill = dict(done)
        host.kill()
        for th in threads:
            th.join(15)
        t.note(f"{name}: SIGKILL after {before_kill['POST']} creates answered 201 and {before_kill['PUT']} "
               f"updates answered 200; {done['POST']} and {done['PUT']} in all, {len(errors)} failed at the "
               "connection (in flight at the kill or after it)")
        t.check(before_kill["POST"] > 0 and before_kill["PUT"] > 0,
                f"{name}: creates answered 201 and updates answered 200 before the kill", f"{before_kill}")
        t.check(not [r for r in others if r.status >= 500], f"{name}: no 5xx before the kill", f"{others[:2]}")
        if ctx.store == "sqlite":
            result = host.integrity()
            t.check(result == [("ok",)], f"{name}: SQLite integrity_check after SIGKILL is ok", f"{result}")
        host.start()  # same state, same secret: a restart, as after a crash
        token = host.token()
        expected = {**made, **acked}
        reads = lib.parallel(lambda i: (i, host.call("GET", f"/book/{i}", token=token)), list(expected), 8)
        wrong = [(i, r) for i, r in reads if r.status != 200 or r.data not in
                 [dict(b, id=i) for b in [expected[i]] + unanswered.get(i, [])]]
        landed += sum(r.data != dict(expected[i], id=i) for i, r in reads if (i, r) not in wrong)
        verified += len(expected) - len(wrong)
        t.check(not wrong, f"{name}: all {len(expected)} books created (201) or last updated (200) are there "
                "after the restart, same fields", f"{len(wrong)} missing or changed, e.g. {wrong[:3]}")
        r = host.call("POST", "/book", {"title": "After", "author": "Crash", "year": 1}, token)
        t.check(r.status == 201, f"{name}: the restarted host creates books again", f"{r!r}")
    t.note(f"{label}books verified after SIGKILL: {verified} over {rounds} kill(s), {landed} of them "
           "holding the update the kill left unanswered")
    t.check(host.stop() == 0, f"{label}the restarted host exits 0 on SIGTERM")


def run(ctx):
    for policy in ("normal", "full") if ctx.store == "sqlite" else (None,):
        kill_rounds(ctx, policy)


if __name__ == "__main__":
    lib.main("crash", run)
