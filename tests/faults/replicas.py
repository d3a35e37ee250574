#!/usr/bin/env -S python3 -B
"""Three spin-lite processes on one PostgreSQL database (SpinKube replicas:
one secret, one database) under a mixed load, one SIGKILLed halfway. Each
worker touches only its own books, so the catalog is known exactly but where
the kill cut a request off (then either outcome). quick: 6 workers for 4 s;
full: 16 for 30 s. SQLite replicas share nothing: no check.
"""

import random
import threading
import time
from collections import Counter

import lib

HOSTS = 3
VICTIM = 1  # the host SIGKILLed halfway


class Worker:
    """One client: its own books, and what each may be stored as."""

    def __init__(self, number, hosts, token, tag, rng):
        self.number, self.hosts, self.token, self.tag, self.rng = number, hosts, token, tag, rng
        self.expected = {}  # id -> acceptable stored states (a book, or None: deleted)
        self.cut = set()  # ids a request the kill cut off touched: left alone since
        self.unanswered = {}  # title -> book of a create whose answer was lost
        self.server_errors, self.survivor_failures, self.unexpected = [], [], []
        self.counts, self.k = Counter(), 0

    def call(self, method, path, body=None):
        """The request on the next live host in this worker's rotation; a
        dropped connection is status 0."""
        self.k += 1
        order = [(self.number + self.k + j) % len(self.hosts) for j in range(len(self.hosts))]
        index = next((i for i in order if self.hosts[i].alive()), None)
        if index is None:
            return lib.Response(0, {}, b"no host alive", 0.0)
        r = self.hosts[index].call(method, path, body, self.token, timeout=30)
        self.counts[f"{method} {path.split('/')[1]}"] += 1
        if r.status >= 500:
            self.server_errors.append((index, method, path, r.status, r.raw[:200]))
        if r.status == 0 and index != VICTIM:
            self.survivor_failures.append((index, method, path, r.raw[:200]))
        return r

    def step(self):
        ids = [i for i, states in self.expected.items()
               if i not in self.cut and states[0] is not None and len(states) == 1]
        roll = self.rng.random()
        if roll < 0.45 or not ids:
            book = {"title": f"Replica {self.tag} w{self.number} #{self.k}",
                    "author": f"Worker {self.number}", "year": self.rng.randint(-3000, 3000)}
            r = self.call("POST", "/book", book)
            if r.status == 0:
                self.unanswered[book["title"]] = book
            elif r.status == 201 and isinstance(r.data, dict) and r.data == dict(book, id=r.data.get("id")):
                self.expected[r.data["id"]] = [book]
            else:
                self.unexpected.append(("create", r))
            return
        book_id = self.rng.choice(ids)
        before = self.expected[book_id][0]
        if roll < 0.65:
            changes = self.rng.choice([{"year": self.rng.randint(-3000, 3000)},
                                       {"title": before["title"] + " +"},
                                       {"author": f"Worker {self.number} v{self.k}", "year": 1}])
            after, r = dict(before, **changes), self.call("PUT", f"/book/{book_id}", changes)
            ok = r.status == 200 and r.data == dict(after, id=book_id)
        elif roll < 0.80:
            after, r = None, self.call("DELETE", f"/book/{book_id}")
            ok = r.status == 200
        else:
            after = before
            r = self.call("GET", f"/book/{book_id}" if roll < 0.95 else "/books")
            ok = r.status == 200 and (roll >= 0.95 or r.data == dict(before, id=book_id))
        if r.status == 0:  # cut off: either outcome may be stored
            self.expected[book_id] = [before, after]
            self.cut.add(book_id)
        elif ok:
            self.expected[book_id] = [after]
        else:
            self.unexpected.append((f"{book_id}", r))


def run(ctx):
    t = ctx.tally
    if not ctx.only_on("postgres", "SQLite replicas would share no database"):
        return
    workers_n, seconds = (16, 30.0) if ctx.full else (6, 4.0)
    hosts = ctx.replicas(HOSTS)

    # Any replica accepts a token another one issued (one secret, no state).
    token = hosts[0].token()
    r = hosts[2].call("GET", "/books", token=token)
    t.check(r.status == 200, "a token issued by one replica is accepted by another", f"{r!r}")

    tag, seed = lib.random_text(6), random.randrange(1 << 30)
    t.note(f"{HOSTS} hosts, {workers_n} workers for {seconds:.0f} s, host {VICTIM} SIGKILLed at "
           f"{seconds / 2:.0f} s (seed {seed})")
    workers = [Worker(w, hosts, token, tag, random.Random(seed + w)) for w in range(workers_n)]
    stop_at = time.monotonic() + seconds

    def drive(worker):
        while time.monotonic() < stop_at:
            worker.step()

    threads = [threading.Thread(target=drive, args=(w,)) for w in workers]
    for th in threads:
        th.start()
    time.sleep(seconds / 2)
    hosts[VICTIM].kill()
    killed_at = time.monotonic()
    for th in threads:
        th.join(seconds + 120)
    t.check(not any(th.is_alive() for th in threads), "every worker finished")

    survivors = [h for i, h in enumerate(hosts) if i != VICTIM]
    totals = sum((w.counts for w in workers), Counter())
    t.note(f"requests: {dict(sorted(totals.items()))}; load went on "
           f"{max(stop_at - killed_at, 0):.1f} s after the kill")
    for kind, what in (("server_errors", "no 5xx from any replica"),
                       ("survivor_failures", "the surviving replicas never failed a connection"),
                       ("unexpected", "every answer is the one the catalog model predicts")):
        found = [x for w in workers for x in getattr(w, kind)]
        t.check(not found, what, f"{len(found)}, e.g. {found[:3]}")
    t.check(all(h.alive() for h in survivors), "the surviving replicas are still up")

    # The catalog as each survivor lists it.
    lists = [r.data if r.status == 200 and isinstance(r.data, list) else None
             for r in (h.call("GET", "/books", token=token, timeout=60) for h in survivors)]
    t.check(all(lst is not None for lst in lists), "the survivors list the books",
            f"{[type(x).__name__ for x in lists]}")
    if any(lst is None for lst in lists):
        return
    t.check(lists[0] == lists[1], "both survivors list identical books",
            f"{len(lists[0])} vs {len(lists[1])} books")
    ids = [b["id"] for b in lists[0]]
    t.check(ids == sorted(set(ids)), "ids are unique and ascending", f"first ids {ids[:10]}")

    stored = {b["id"]: {k: b[k] for k in ("title", "author", "year")} for b in lists[0]}
    wrong, expected_ids = [], set()
    acknowledged = 0
    for w in workers:
        for book_id, states in w.expected.items():
            expected_ids.add(book_id)
            acknowledged += 1 if len(states) == 1 else 0
            if stored.get(book_id) not in states:
                wrong.append((book_id, stored.get(book_id), states))
    maybe = {title: book for w in workers for title, book in w.unanswered.items()}
    extra = [(i, b) for i, b in stored.items() if i not in expected_ids and maybe.get(b["title"]) != b]
    t.note(f"{len(stored)} books stored; {acknowledged} books whose every request was answered; "
           f"{sum(len(w.cut) for w in workers)} touched by a request the kill cut off; "
           f"{len(maybe)} creates without an answer")
    t.check(not wrong, "every acknowledged create, update and delete is reflected",
            f"{len(wrong)} not, e.g. {wrong[:3]}")
    t.check(not extra, "no book is stored that no worker created", f"{extra[:3]}")
    t.check(all(h.stop() == 0 for h in survivors), "the surviving replicas exit 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("replicas", run)
