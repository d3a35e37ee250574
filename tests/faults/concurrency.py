#!/usr/bin/env -S python3 -B
"""Races on a real host and store: creates, updates and deletes all in flight
at once on the same and on different ids (quick: 100 of each; full: 2,000, up
to 200 at once), 16 and 64 keyed creates at once then resent, and parallel
creates as the first requests on empty databases (the schema race).
"""

import time

import lib


def schema_race(ctx):
    """The first requests on an empty database arrive together: the component
    creates its schema on the first "no such table" error, several at once."""
    t = ctx.tally
    # A brand-new (cold) cluster is where the race showed most; fresh
    # databases in the running cluster are cheaper.
    new_clusters = (3 if ctx.full else 1) if ctx.store == "postgres" else 0
    tries = 10 if ctx.full else 4
    # SQLite takes one writer at a time, the others wait out a busy timeout
    # (5 s under Spin, where 200 first creates on a loaded machine outlast it);
    # 50 at once still all meet the migration.
    burst = 200 if ctx.store == "postgres" else 50
    failures = []
    for k in range(tries):
        cluster = ctx.cluster() if k < new_clusters else None
        host = ctx.host(db_url=cluster.url if cluster else ctx.fresh_database()).start()
        # Signed here, not asked of POST /token: a login would be the first
        # request and migrate the database before the creates arrive.
        token = lib.jwt(host.secret.encode(), {"exp": int(time.time()) + 600})
        books = [{"title": f"First {k} {i}", "author": "Race", "year": i} for i in range(burst)]
        answers = lib.parallel(lambda b: host.call("POST", "/book", b, token, timeout=60), books, burst)
        bad = [r for r in answers if r.status != 201]
        if bad:
            errors = [l for l in host.tail(400).splitlines() if l.startswith("error")]
            failures.append(f"database {k + 1}: {len(bad)} of {burst} not 201 ({bad[0]!r}); log: {errors[:2]}")
        host.stop()
        ctx.hosts.remove(host)
        if cluster is not None:
            cluster.close()
    t.check(not failures, f"{burst} parallel creates as the first requests on an empty database "
            f"({tries} fresh databases): all 201", "; ".join(failures))


def writers_at_once(ctx):
    """16, then 64 keyed creates at once, then resent: on SQLite each waits for
    the write lock in the component (docs/operations.md), under either host."""
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    tag = lib.random_text(8)
    for writers in (16, 64):
        books = [{"title": f"Writer {tag} {writers} {i}", "author": "At once", "year": i} for i in range(writers)]
        keys = [f"{tag}-{writers}-{i}" for i in range(writers)]

        def send(i):
            return host.call("POST", "/book", books[i], token, headers={"Idempotency-Key": keys[i]}, timeout=60)
        first = lib.parallel(send, range(writers), writers)
        again = lib.parallel(send, range(writers), writers)
        stored = host.call("GET", f"/books?title={tag}+{writers}&limit=1000", token=token)
        titles = sorted(b["title"] for b in stored.data or [])
        t.check(all(r.status == 201 for r in first) and [r.raw for r in again] == [r.raw for r in first]
                and titles == sorted(b["title"] for b in books),
                f"{writers} keyed creates at once: all 201, no 5xx, each stored once; "
                "resent, the same 201s byte for byte",
                f"{sorted({r.status for r in first + again})}, {len(titles)} stored")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


def run(ctx):
    schema_race(ctx)
    writers_at_once(ctx)
    t = ctx.tally
    n = 2000 if ctx.full else 100  # over spin-lite's 32 instance slots
    workers = 200
    host = ctx.host().start()
    token = host.token()
    tag = lib.random_text(8)

    def call(method, path, body=None):
        return host.call(method, path, body, token, timeout=60)

    # 1. Creates.
    books = [{"title": f"Conc {tag} #{i}", "author": f"Author {i} \u00e9", "year": 1900 + i % 120}
             for i in range(n)]
    started = time.monotonic()
    created = lib.parallel(lambda b: call("POST", "/book", b), books, workers)
    t.note(f"{n} parallel creates (up to {workers} in flight) in {time.monotonic() - started:.1f}s")
    ok = [(b, r) for b, r in zip(books, created) if r.is_envelope(201, "Book created successfully")]
    t.check(len(ok) == n, f"{n} parallel creates: all answered 201 (no 5xx, no dropped connection)",
            f"{n - len(ok)} not; e.g. {[r for r in created if r.status != 201][:2]}")
    ids = [r.data["id"] for _, r in ok]
    t.check(len(set(ids)) == len(ids), "created ids are distinct", f"{len(ids) - len(set(ids))} duplicates")
    reads = lib.parallel(lambda i: call("GET", f"/book/{i}"), ids, 50)
    want = {r.data["id"]: dict(b, id=r.data["id"]) for b, r in ok}
    wrong = [(i, r) for i, r in zip(ids, reads) if r.status != 200 or r.data != want[i]]
    t.check(not wrong, "every created book is readable afterwards with its fields", f"{wrong[:2]}")
    listing = call("GET", "/books")
    listed = {b["id"]: b for b in (listing.data or [])} if listing.status == 200 else {}
    t.check(all(listed.get(i) == want[i] for i in ids), "GET /books lists every created book")

    # 2. Concurrent PUTs to one id: the final state is one of the 200-answered PUTs.
    target = ids[0]
    puts = [{"title": f"Put {tag} {k}", "author": f"Writer {k}", "year": 2000 + k % 20} for k in range(n)]
    answers = lib.parallel(lambda b: call("PUT", f"/book/{target}", b), puts, workers)
    accepted = [dict(b, id=target) for b, r in zip(puts, answers) if r.status == 200]
    t.check(len(accepted) == n, f"{n} concurrent PUTs to one id: all answered 200 (no 5xx)",
            f"{n - len(accepted)} not, e.g. {[r for r in answers if r.status != 200][:2]}")
    final = call("GET", f"/book/{target}")
    t.check(final.status == 200 and final.data in accepted,
            "after concurrent PUTs the book equals one of the PUTs answered 200", f"{final!r}")

    # 3. Concurrent partial PUTs to one id, each changing one field: no torn record.
    partial = ([{"title": f"T{k}"} for k in range(n // 4)] + [{"author": f"A{k}"} for k in range(n // 4)]
               + [{"year": k} for k in range(n // 4)])
    answers = lib.parallel(lambda b: call("PUT", f"/book/{target}", b), partial, workers)
    t.check(all(r.status == 200 for r in answers), f"{len(partial)} concurrent partial PUTs: all 200",
            f"{[r for r in answers if r.status != 200][:2]}")
    final = call("GET", f"/book/{target}").data or {}
    t.check(all(final.get(f) in {b[f] for b in partial if f in b} for f in ("title", "author", "year")),
            "after concurrent partial PUTs each field holds a value some PUT answered 200 wrote", f"{final}")

    # 4. PUTs on different ids at once: each book ends with its own update.
    others = ids[1:]
    updates = {i: {"title": f"Own {tag} {i}", "author": "Own", "year": i % 2000} for i in others}
    answers = lib.parallel(lambda i: call("PUT", f"/book/{i}", updates[i]), others, workers)
    t.check(all(r.status == 200 for r in answers), f"{len(others)} concurrent PUTs on different ids: all 200")
    reads = lib.parallel(lambda i: call("GET", f"/book/{i}"), others, 50)
    t.check(all(r.status == 200 and r.data == dict(updates[i], id=i) for i, r in zip(others, reads)),
            "each book holds its own update afterwards")

    # 5. N concurrent DELETEs of one id: exactly one 200, the rest 404.
    answers = lib.parallel(lambda _: call("DELETE", f"/book/{target}"), range(n), workers)
    statuses = sorted(r.status for r in answers)
    t.check(statuses.count(200) == 1 and statuses.count(404) == n - 1,
            f"{n} concurrent DELETEs of one id: exactly one 200, {n - 1} 404",
            f"200: {statuses.count(200)}, 404: {statuses.count(404)}, other: "
            f"{[s for s in statuses if s not in (200, 404)][:5]}")
    t.check(call("GET", f"/book/{target}").status == 404, "the deleted book is gone (404)")

    # 6. DELETE and PUT racing on the same ids, and DELETEs of different ids.
    racing = others[: n // 2]
    ops = [("DELETE", i) for i in racing] + [("PUT", i) for i in racing]
    answers = lib.parallel(lambda op: call(op[0], f"/book/{op[1]}",
                                       {"year": 1} if op[0] == "PUT" else None), ops, workers)
    bad = [r for r in answers if r.status >= 500 or r.status == 0]
    t.check(not bad, f"{len(ops)} racing DELETEs and PUTs: no 5xx", f"{bad[:2]}")
    deletes = dict(zip(racing, answers[: len(racing)]))
    t.check(all(r.status == 200 for r in deletes.values()),
            "each DELETE racing a PUT answered 200 (one DELETE per id)")
    reads = lib.parallel(lambda i: call("GET", f"/book/{i}"), racing, 50)
    t.check(all(r.status == 404 for r in reads), "every book whose DELETE answered 200 is gone")
    rest = others[n // 2:]
    answers = lib.parallel(lambda i: call("DELETE", f"/book/{i}"), rest, workers)
    t.check(all(r.status == 200 for r in answers), f"{len(rest)} concurrent DELETEs of different ids: all 200")
    listing = call("GET", "/books")
    left = {b["id"] for b in listing.data or []} & set(ids)
    t.check(listing.status == 200 and not left, "GET /books no longer lists any of them", f"{sorted(left)[:5]}")
    t.check(host.alive(), "the host is still up")
    host.stop()


if __name__ == "__main__":
    lib.main("concurrency", run)
