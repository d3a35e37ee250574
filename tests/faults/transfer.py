#!/usr/bin/env -S python3 -B
"""Imports (docs/api.md, "Import and export") at size, under what only
processes show: an import of 100,000 books cut off mid-body stores nothing
(and the next one, on the same connection, everything once); one with a bad
row at 99,999 stores nothing; two imports of 100,000 and single writers at
once lose nothing and duplicate nothing. Printed, not asserted: the time of
a 100,000-book import alone, the others' p99 meanwhile, the host's RSS.
"""

import os
import threading
import time

import lib

BOOKS = 100_000
# This run's books: the legs of one store share its database.
RUN = os.urandom(4).hex()


def csv_body(tag, bad_row=None):
    """BOOKS books as CSV (about 3.5 MB); the row `bad_row` with a bad year."""
    lines = ["title,author,year"]
    for k in range(BOOKS):
        year = "19x9" if k + 2 == bad_row else str(1000 + k % 1000)
        lines.append(f"Imp {RUN} {tag} {k:06d},Author {k % 97},{year}")
    return ("\r\n".join(lines) + "\r\n").encode()


def post(host, token, body, timeout=120):
    return host.call("POST", "/books", token=token, raw=body, timeout=timeout,
                     headers={"Content-Type": "text/csv"})


def stored(host, tag):
    """(books, distinct titles) of an import's tag, read from the store."""
    rows = host.rows(f"SELECT count(*), count(DISTINCT title) FROM books WHERE title LIKE 'Imp {RUN} {tag} %'")
    return tuple(int(v) for v in rows[0])


def imported(r):
    ok = r.is_envelope(201, "Books imported successfully") and r.data["imported"] == BOOKS
    ids = r.data["ids"] if ok else []
    return ok and len(set(ids)) == BOOKS and ids == sorted(ids)


def p99(seconds):
    ordered = sorted(seconds)
    return ordered[int(len(ordered) * 0.99)] if ordered else 0.0


def run(ctx):
    t = ctx.tally
    host = ctx.host().start()
    token = host.token()
    # Of the whole tree: spin up serves from a child.
    rss = lambda: lib.launch.status_kib(lib.launch.process_tree(host.proc.pid))  # noqa: E731
    before = rss()

    # Cut off: the head declares the whole body, half of it is sent, the
    # connection closed.
    body = csv_body("cut")
    head = lib.head("POST", "/books", {"Authorization": token, "Content-Type": "text/csv",
                                        "Content-Length": len(body)})
    s = lib.sent(host.port, head + body[:len(body) // 2], 30)
    time.sleep(1)
    s.close()
    time.sleep(2)
    t.check(stored(host, "cut") == (0, 0), "an import of 100,000 books cut off mid-body stores nothing",
            stored(host, "cut"))

    started = time.monotonic()
    r = post(host, token, body)
    alone = time.monotonic() - started
    t.check(imported(r) and stored(host, "cut") == (BOOKS, BOOKS),
            "then the same import whole: 201, every book once", f"{r!r} {stored(host, 'cut')}")

    r = post(host, token, csv_body("bad", bad_row=99_999))
    refused = r.is_envelope(400, "Invalid input") and r.data == {
        "row": 99_999, "field": "year", "reason": "not an integer within 32 bits"}
    t.check(refused and stored(host, "bad") == (0, 0),
            "a bad row at 99,999: 400 naming it, nothing stored", f"{r!r} {stored(host, 'bad')}")

    # Two imports and single writers (each a POST and a read of it) at once.
    bodies = {tag: csv_body(tag) for tag in ("one", "two")}
    answers, latencies, singles, done = {}, [], [], threading.Event()

    def writer(w):
        k = 0
        while not done.is_set():
            book = {"title": f"Single {RUN} {w} {k}", "author": "Writer", "year": 2000}
            r = host.call("POST", "/book", book, token)
            latencies.append(r.elapsed)
            singles.append((book, r))
            if r.status == 201:
                latencies.append(host.call("GET", f"/book/{r.data['id']}", token=token).elapsed)
            k += 1

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    importers = [threading.Thread(target=lambda tag=tag: answers.update({tag: post(host, token, bodies[tag])}))
                 for tag in bodies]
    for thread in writers + importers:
        thread.start()
    for thread in importers:
        thread.join()
    done.set()
    for thread in writers:
        thread.join()
    ids = [set(answers[tag].data["ids"]) if imported(answers[tag]) else set() for tag in bodies]
    created = [(book, r.data["id"]) for book, r in singles if r.status == 201]
    kept = {int(i): title for i, title in host.rows(f"SELECT id, title FROM books WHERE title LIKE 'Single {RUN} %'")}
    t.check(all(imported(answers[tag]) and stored(host, tag) == (BOOKS, BOOKS) for tag in bodies)
            and not ids[0] & ids[1],
            "two imports of 100,000 at once: both 201, every book once, no id twice",
            f"{[(answers[tag], stored(host, tag)) for tag in bodies]}")
    t.check(len(created) == len(singles) and kept == {i: book["title"] for book, i in created}
            and not set(kept) & (ids[0] | ids[1]),
            f"{len(singles)} single POSTs meanwhile: each 201 and stored once, none lost",
            lib.counts(r.status for _, r in singles))
    t.note(f"100,000 books (3.5 MB CSV) imported alone in {alone:.2f}s; two at once "
           f"{max(answers[tag].elapsed for tag in bodies):.2f}s; the single writers' and readers' "
           f"p99 meanwhile {p99(latencies) * 1000:.0f} ms over {len(latencies)} requests; "
           f"the host's RSS {before} KiB before, {rss()} KiB after")


if __name__ == "__main__":
    lib.main("transfer", run)
