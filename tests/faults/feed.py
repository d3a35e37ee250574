#!/usr/bin/env -S python3 -B
"""The change feed under load: PostgreSQL, two replicas on one database;
SQLite, one host. Writers (quick: 12 for 20 s; full: 16 for 60 s) on books of
their own: creates, keyed creates replayed on the other host, updates and
deletes with If-Match, restores, and a stale If-Match and a live book's
restore that append nothing. Followers on each host long-poll from the last
cursor: each sees every acknowledged write once, each book's in order, and
nothing unacknowledged (a plain `seq > N` on PostgreSQL loses some). A mirror
listed halfway and followed from Changes-Cursor equals the final list;
histories; `wait` waits when idle and wakes for another host's write (its
latency a note: bench/ holds the target).
"""

import json
import random
import re
import threading
import time
import uuid
from collections import Counter, defaultdict
from urllib.parse import quote

import lib

FIELDS = {"cursor", "op", "id", "book", "account", "at"}
AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def sig(change):
    """What a change says: op, id and the book after it."""
    return change["op"], change["id"], json.dumps(change["book"], sort_keys=True)


def changes_path(after, limit, wait):
    return f"/changes?limit={limit}&wait={wait}" + (f"&after={quote(after, safe='')}" if after else "")


class Writer:
    """One client on books of its own: what each acknowledged write appended."""

    def __init__(self, number, hosts, token, tag, rng):
        self.number, self.hosts, self.token, self.tag, self.rng = number, hosts, token, tag, rng
        self.books = {}  # id -> [book, ETag, deleted?]; dropped when an answer was lost
        self.acks, self.lost, self.unexpected, self.k = [], set(), [], 0

    def call(self, method, path, body=None, other=False, **kwargs):
        self.k += 1
        host = self.hosts[(self.number + self.k * other) % len(self.hosts)]
        return host.call(method, path, body, self.token, timeout=30, **kwargs)

    def expect(self, r, status, op, book_id, book):  # False unless `status`, and `book` if given
        if r.status == 0:
            self.lost.add((op, book_id))
            self.books.pop(book_id, None)
        elif r.status != status or (book is not None and r.data != book):
            self.unexpected.append((op, book_id, r))
        elif op:
            self.acks.append((op, book_id, json.dumps(r.data if op != "delete" else None, sort_keys=True)))
        return r.status == status

    def create(self, keyed):
        body = {"title": f"Feed {self.tag} w{self.number} #{self.k}", "author": f"W{self.number}",
                "year": self.rng.randint(-3000, 3000)}
        key = {"Idempotency-Key": str(uuid.uuid4())} if keyed else {}
        r = self.call("POST", "/book", body, headers=key)
        if keyed:  # the replay, on the other host: the same answer, no second change
            again = self.call("POST", "/book", body, other=True, headers=key)
            if again.status == 0 or (r.status and again.raw != r.raw):
                self.unexpected.append(("replay", r, again))
            r = again if r.status == 0 else r
        if r.status == 0:
            self.lost.add(("create", body["title"]))
        elif r.status == 201 and r.data == dict(body, id=r.data.get("id")):
            self.acks.append(("create", r.data["id"], json.dumps(r.data, sort_keys=True)))
            self.books[r.data["id"]] = [r.data, r.headers.get("etag"), False]
        else:
            self.unexpected.append(("create", r))

    def step(self):
        live, gone = ([i for i, b in self.books.items() if b[2] == deleted] for deleted in (False, True))
        roll = self.rng.random()
        if roll < 0.3 or not live:
            return self.create(keyed=roll < 0.1)
        book_id = self.rng.choice(gone if roll > 0.8 and gone else live)
        book, etag, deleted = self.books[book_id]
        if deleted:
            r = self.call("POST", f"/book/{book_id}/restore", other=True)
            if self.expect(r, 200, "restore", book_id, book):
                self.books[book_id] = [book, r.headers.get("etag"), False]
        elif roll < 0.6:
            changes = {"title": f"{book['title'][:60]} u{self.k}", "year": self.rng.randint(-3000, 3000)}
            after, r = dict(book, **changes), self.call("PUT", f"/book/{book_id}", changes, headers={"If-Match": etag})
            if self.expect(r, 200, "update", book_id, after):
                self.books[book_id] = [after, r.headers.get("etag"), False]
                stale = self.call("PUT", f"/book/{book_id}", {"year": 0}, headers={"If-Match": etag})
                self.expect(stale, 412, None, book_id, None)
        elif roll < 0.75:
            if self.expect(self.call("DELETE", f"/book/{book_id}", headers={"If-Match": etag}),
                           200, "delete", book_id, None):
                self.books[book_id][2] = True
        else:  # a live book is not restored
            self.expect(self.call("POST", f"/book/{book_id}/restore"), 409, None, book_id, None)


class Follower:
    """GET /changes from the last cursor until `done` and caught up."""

    def __init__(self, host, token, limit, after=None):
        self.host, self.token, self.limit, self.after = host, token, limit, after
        self.seen, self.errors, self.calls = [], [], 0

    def run(self, done, wait=3):
        while True:
            finished = done.is_set()
            r = self.host.call("GET", changes_path(self.after, self.limit, wait), token=self.token, timeout=60)
            self.calls += 1
            if r.status != 200 or not isinstance(r.data, list) or len(r.data) > self.limit:
                self.errors.append(r)
                time.sleep(0.2)
            if len(self.errors) > 20 or r.data == [] and finished:
                return
            if r.status != 200:
                continue
            self.seen += r.data
            self.after = r.data[-1]["cursor"] if r.data else self.after


def apply(mirror, changes):
    for c in changes:
        if c["op"] == "delete":
            mirror.pop(c["id"], None)
        else:
            mirror[c["id"]] = c["book"]
    return mirror


def run(ctx):
    t = ctx.tally
    hosts = ctx.replicas(2 if ctx.store == "postgres" else 1)
    token, username = hosts[0].token(), hosts[0].username
    writers_n, seconds = (16, 60.0) if ctx.full else (12, 20.0)
    tag, seed = lib.random_text(6), random.randrange(1 << 30)
    t.note(f"{len(hosts)} host(s), {writers_n} writers for {seconds:.0f} s, 4 followers (seed {seed})")
    writers = [Writer(w, hosts, token, tag, random.Random(seed + w)) for w in range(writers_n)]
    followers = [Follower(hosts[i % len(hosts)], token, limit) for i, limit in enumerate((1000, 100, 7, 1000))]
    done, stop_at, mirror = threading.Event(), time.monotonic() + seconds, {}

    def write(w):
        while time.monotonic() < stop_at:
            w.step()

    def mirror_mid_run():
        time.sleep(seconds / 2)
        listed = hosts[-1].call("GET", "/books", token=token, timeout=60)
        mirror.update(listed=listed, follower=Follower(hosts[-1], token, 500, listed.headers.get("changes-cursor")))
        mirror["follower"].run(done)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    threads += [threading.Thread(target=f.run, args=(done,)) for f in followers]
    threads.append(threading.Thread(target=mirror_mid_run))
    for th in threads:
        th.start()
    for th in threads[:len(writers)]:
        th.join(seconds + 120)
    done.set()  # the followers end once they have caught up
    for th in threads:
        th.join(60)
    t.check(not any(th.is_alive() for th in threads), "every writer and follower finished")

    acks, lost = [a for w in writers for a in w.acks], set().union(*(w.lost for w in writers))
    unexpected = [u for w in writers for u in w.unexpected]
    t.note(f"acknowledged writes: {dict(Counter(a[0] for a in acks))}; answers lost: {len(lost)}; "
           f"GET /changes per follower: {[f.calls for f in followers]}")
    t.check(not unexpected, "every write answered as the catalog model predicts (412 and 409 included)",
            f"{len(unexpected)}, e.g. {unexpected[:3]}")
    errors = [r for f in followers + [mirror["follower"]] for r in f.errors]
    t.check(len(acks) > 500 and not errors, "hundreds of writes acknowledged; every GET /changes answered 200 "
            "with at most `limit` changes", f"{len(acks)} acknowledged; {errors[:3]}")

    by_book, lost_ids = defaultdict(list), {i for op, i in lost if op != "create"}
    for a in acks:
        by_book[a[1]].append(a)

    def subsequence(part, whole):
        rest = iter(whole)
        return all(x in rest for x in part)
    for n, f in enumerate(followers):
        seen = defaultdict(list)
        for c in f.seen:
            seen[c["id"]].append(sig(c))
        # A book's changes are exactly its acknowledged writes, in order; one
        # a lost answer touched holds them in order among the lost ones.
        wrong = [(i, f"{len(by_book[i])} written, {len(got)} seen") for i, got in seen.items() if i in by_book and (
            got != by_book[i] if i not in lost_ids else not subsequence(by_book[i], got))]
        missing = [i for i in by_book if i not in seen]
        unknown = [got for i, got in seen.items() if i not in by_book and not (
            got[0][0] == "create" and ("create", json.loads(got[0][2])["title"]) in lost)]
        same = [c["cursor"] for c in f.seen] == [c["cursor"] for c in followers[0].seen]
        t.check(f.seen and same and not wrong and not missing and not unknown,
                f"follower {n} (limit {f.limit}, on host {hosts.index(f.host)}) saw each acknowledged write "
                "exactly once, each book's in order, nothing unacknowledged, as follower 0 did",
                f"{len(wrong)} books' changes wrong (e.g. {wrong[:2]}), {len(missing)} books unseen "
                f"(e.g. {missing[:3]}), {len(unknown)} books nobody wrote (e.g. {unknown[:2]}); same: {same}")
    malformed = [c for c in followers[0].seen if set(c) != FIELDS or not isinstance(c["cursor"], str)
                 or c["account"] != username or not AT.match(str(c["at"]))
                 or (c["book"] is None) != (c["op"] == "delete")]
    t.check(followers[0].seen and not malformed, "each change has its fields, the writer's account and a UTC time",
            f"{malformed[:2]}")

    final = hosts[0].call("GET", "/books", token=token, timeout=60)
    catalog = {b["id"]: b for b in final.data or []}
    t.check(final.status == 200 and catalog and apply({}, followers[0].seen) == catalog,
            "the feed replayed from its start equals the final GET /books", f"{len(catalog)} books")
    listed, follower = mirror["listed"], mirror["follower"]
    t.check(listed.status == 200 and "changes-cursor" in listed.headers
            and apply({b["id"]: b for b in listed.data or []}, follower.seen) == catalog,
            "a mirror listed halfway and followed from its Changes-Cursor equals the final GET /books",
            f"{len(listed.data or [])} listed, {len(follower.seen)} changes followed")

    sample = [i for i, seq in by_book.items() if len(seq) >= 3 and i not in lost_ids][:6]
    histories = {i: hosts[-1].call("GET", f"/book/{i}/history", token=token) for i in sample}
    wrong = [(i, r) for i, r in histories.items() if r.status != 200 or [sig(c) for c in r.data] != by_book[i]]
    t.check(sample and not wrong, f"the history of {len(sample)} books is what was acknowledged, oldest first",
            f"{wrong[:2]}")

    head = followers[0].after
    for n, h in enumerate(hosts):
        r = h.call("GET", changes_path(head, 100, 2), token=token)
        t.check(r.status == 200 and r.data == [] and 1.5 <= r.elapsed < 4,
                f"on an idle catalog, wait=2 on host {n} answers [] after 2 s", f"{r!r}")
    latencies, failed = [], []
    for k in range(15):  # the write at each phase of the waiting request's polls
        made, r, seconds_ = lib.woken(hosts[0].port, hosts[-1].port, token, head, 0.2 + k % 10 * 0.04)
        if made.status == 201 and r and r.status == 200 and [sig(c) for c in r.data] == [
                ("create", made.data["id"], json.dumps(made.data, sort_keys=True))]:
            latencies.append(seconds_)
            head = r.data[-1]["cursor"]
        else:
            failed.append((made, r))
    ok = sorted(latencies) or [0]
    t.check(not failed, f"a follower waiting on host 0 wakes with each of 15 creates on host {len(hosts) - 1}",
            f"{failed[:2]}")
    t.note(f"from the write's request to the waiting follower's answer: p50 {ok[len(ok) // 2] * 1000:.0f} ms, "
           f"max (p99) {ok[-1] * 1000:.0f} ms")
    t.check(all(h.stop() == 0 for h in hosts), "the hosts exit 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("feed", run)
