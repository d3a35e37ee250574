#!/usr/bin/env python3
"""Three spin-lite processes on one PostgreSQL database (like SpinKube
replicas behind a Service: one secret, one database). Workers run a mixed
load over the three; halfway through one host is SIGKILLed. Each worker only
touches its own books, so the expected catalog is known exactly, except where
the kill cut a request off (its outcome is then either). quick: 6 workers for
4 s; full: 16 for 30 s. With --store sqlite nothing is shared: no check.
"""

import random
import sys
import threading
import time
from collections import Counter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

HOSTS = 3
VICTIM = 1  # the host SIGKILLed halfway


class Worker:
    """One client: its own books, its own view of what must be stored."""

    def __init__(self, number, hosts, token, tag, rng):
        self.number, self.hosts, self.token, self.tag, self.rng = number, hosts, token, tag, rng
        # id -> list of acceptable stored states (a book dict, or None: deleted).
        self.expected = {}
        # ids a cut-off request touched: no longer used by this worker.
        self.settled = set()
        # Titles of creates whose answer was lost: the book may exist.
        self.maybe_created = {}
        self.server_errors = []  # (host index, method, path, status, body)
        self.survivor_failures = []  # connection failures on a host that was alive
        self.unexpected = []  # any other status than the one the model predicts
        self.counts = Counter()
        self.k = 0

    def live_ids(self):
        return [i for i, states in self.expected.items()
                if i not in self.settled and len(states) == 1 and states[0] is not None]

    def pick_host(self):
        self.k += 1
        order = [(self.number + self.k + j) % len(self.hosts) for j in range(len(self.hosts))]
        for index in order:
            if self.hosts[index].alive():
                return index
        return None

    def call(self, method, path, body=None):
        index = self.pick_host()
        if index is None:
            return None, lib.Response(0, {}, b"no host alive", 0.0)
        host = self.hosts[index]
        r = lib.try_request(host.port, method, path, body=body, token=self.token, timeout=30)
        key = f"{method} {path.split('/')[1]}"
        self.counts[key] += 1
        if r.status >= 500:
            self.server_errors.append((index, method, path, r.status, r.raw[:200]))
        if r.status == 0 and index != VICTIM:
            self.survivor_failures.append((index, method, path, r.raw[:200]))
        return index, r

    def step(self):
        ids = self.live_ids()
        roll = self.rng.random()
        if roll < 0.45 or not ids:
            self.create()
        elif roll < 0.65:
            self.update(self.rng.choice(ids))
        elif roll < 0.80:
            self.delete(self.rng.choice(ids))
        elif roll < 0.95:
            self.get(self.rng.choice(ids))
        else:
            self.call("GET", "/books")

    def create(self):
        book = {"title": f"Replica {self.tag} w{self.number} #{self.k}",
                "author": f"Worker {self.number}", "year": self.rng.randint(-3000, 3000)}
        _, r = self.call("POST", "/book", book)
        if r.status == 201 and isinstance(r.data, dict) and r.data.get("id"):
            self.expected[r.data["id"]] = [book]
            if r.data != dict(book, id=r.data["id"]):
                self.unexpected.append(("create echoed other fields", r))
        elif r.status == 0:
            self.maybe_created[book["title"]] = book
        else:
            self.unexpected.append(("create", r))

    def update(self, book_id):
        before = self.expected[book_id][0]
        changes = self.rng.choice([{"year": self.rng.randint(-3000, 3000)},
                                   {"title": before["title"] + " +"},
                                   {"author": f"Worker {self.number} v{self.k}", "year": 1}])
        after = dict(before, **changes)
        _, r = self.call("PUT", f"/book/{book_id}", changes)
        if r.status == 200:
            self.expected[book_id] = [after]
            if r.data != dict(after, id=book_id):
                self.unexpected.append(("update answered other fields", r))
        elif r.status == 0:
            self.expected[book_id] = [before, after]
            self.settled.add(book_id)
        else:
            self.unexpected.append((f"update {book_id}", r))

    def delete(self, book_id):
        before = self.expected[book_id][0]
        _, r = self.call("DELETE", f"/book/{book_id}")
        if r.status == 200:
            self.expected[book_id] = [None]
        elif r.status == 0:
            self.expected[book_id] = [before, None]
            self.settled.add(book_id)
        else:
            self.unexpected.append((f"delete {book_id}", r))

    def get(self, book_id):
        want = self.expected[book_id][0]
        _, r = self.call("GET", f"/book/{book_id}")
        if r.status == 200:
            if r.data != dict(want, id=book_id):
                self.unexpected.append((f"get {book_id} returned other fields", r))
        elif r.status != 0:
            self.unexpected.append((f"get {book_id}", r))


def run(ctx):
    t = ctx.tally
    if not ctx.only_on("postgres", "SQLite replicas would share no database"):
        return
    workers_n, seconds = (16, 30.0) if ctx.full else (6, 4.0)
    url = ctx.pg.fresh_database()
    secret = lib.random_text(48)
    username = "replica-" + lib.random_text(8).lower()
    password = "Replica." + lib.random_text(16)
    hosts = [ctx.host(secret=secret, username=username, password=password, db_url=url).start()
             for _ in range(HOSTS)]

    # Any replica accepts a token another one issued (one secret, no state).
    token = hosts[0].token()
    r = hosts[2].call("GET", "/books", token=token)
    t.check(r.status == 200, "a token issued by one replica is accepted by another", f"{r!r}")
    t.check(all(h.call("GET", "/health").status == 200 for h in hosts),
            "every replica answers GET /health 200 before the load")

    tag = lib.random_text(6)
    seed = random.randrange(1 << 30)
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
    server_errors = [e for w in workers for e in w.server_errors]
    t.check(not server_errors, "no 5xx from any replica", f"{len(server_errors)}, e.g. {server_errors[:3]}")
    failures = [f for w in workers for f in w.survivor_failures]
    t.check(not failures, "the surviving replicas never failed a connection",
            f"{len(failures)}, e.g. {failures[:3]}")
    unexpected = [u for w in workers for u in w.unexpected]
    t.check(not unexpected, "every answer is the one the catalog model predicts",
            f"{len(unexpected)}, e.g. {unexpected[:3]}")
    t.check(all(h.alive() for h in survivors), "the surviving replicas are still up")

    # The catalog as each survivor lists it.
    lists = []
    for h in survivors:
        r = lib.try_request(h.port, "GET", "/books", token=token, timeout=60)
        lists.append(r.data if r.status == 200 and isinstance(r.data, list) else None)
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
    maybe = {title: book for w in workers for title, book in w.maybe_created.items()}
    extra = [(i, b) for i, b in stored.items()
             if i not in expected_ids and maybe.get(b["title"]) != b]
    t.note(f"{len(stored)} books stored; {acknowledged} books whose every request was answered; "
           f"{sum(len(w.settled) for w in workers)} touched by a request the kill cut off; "
           f"{len(maybe)} creates without an answer")
    t.check(not wrong, "every acknowledged create, update and delete is reflected",
            f"{len(wrong)} not, e.g. {wrong[:3]}")
    t.check(not extra, "no book is stored that no worker created", f"{extra[:3]}")
    t.check(all(h.stop() == 0 for h in survivors), "the surviving replicas exit 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("replicas", run)
