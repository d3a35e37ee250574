#!/usr/bin/env -S python3 -B
"""The whole list of a catalog too big for one buffered result.

2,000,000 books (143.6 MB of JSON, past the 128 MiB Spin refuses to
buffer of one query result) seeded straight into the host's store, then
`GET /books`: 200, well-formed JSON, every id once in ascending order, read
and parsed as it arrives; the serving process and its children grow by at
most 64 MiB over their RSS before the list (peak: VmHWM, reset first).
Then a list read slowly: after its first bytes the client pauses (the
component blocks on the full socket), the `books` table is renamed away
and reading resumes: the body ends without its closing `]}`, what arrived
is not well-formed JSON, the log says why; with the table back the service
answers again. Either store, either host.
"""

import codecs
import http.client
import json
import socket
import time
from contextlib import closing
from pathlib import Path

import lib

BOOKS = 2_000_000
SPIN_BUFFERED_LIMIT = 128 * 1024 * 1024  # Spin's MAX_HOST_BUFFERED_BYTES
GROWTH_BOUND_KIB = 64 * 1024
CUT_LINE = "reason=\"the list was cut short: "


class Listing:
    """`GET /books` read and parsed as it arrives, keeping no book: its
    status, how many books, whether their ids rose, the body's size and last
    bytes, how the connection failed (`cut`), whether it was well-formed JSON
    (else `rest`: where the parse stopped). `pause` is called once, after
    the first bytes, with a small receive window."""

    def __init__(self, port, token, pause=None):
        sock = socket.socket()
        if pause:  # a client that stops reading soon stops the host
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.settimeout(120)
        sock.connect(("127.0.0.1", port))
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.sock = sock
        started = time.monotonic()
        self.count = self.size = self.last_id = 0
        self.ascending, self.cut, self.end = True, None, b""
        utf8 = codecs.getincrementaldecoder("utf-8")()
        text, state = "", "head"
        with closing(conn):
            conn.request("GET", "/books", headers={"Authorization": token})
            answer = conn.getresponse()
            self.status = answer.status
            while state != "invalid":
                try:
                    piece = answer.read1(1 << 20)
                except http.client.IncompleteRead as e:
                    piece, self.cut = e.partial, "an incomplete chunked body"
                except OSError as e:
                    piece, self.cut = b"", repr(e)
                self.size += len(piece)
                self.end = (self.end + piece)[-40:]
                try:
                    text, state = self.parse(text + utf8.decode(piece, final=not piece), state)
                except ValueError as e:
                    text, state = str(e), "invalid"
                if pause and self.size:
                    pause()
                    pause = None
                if not piece or self.cut:
                    break
        self.took = time.monotonic() - started
        self.well_formed = state == "done" and not text
        self.rest = f"{state}: {text[:60]!r}"

    def parse(self, text, state):
        """Consumes what `text` holds whole; returns the rest and the state."""
        decode = json.JSONDecoder().raw_decode
        pos = 0
        if state == "head":
            start = text.find('"data":[')
            if start < 0:
                return text, state
            head = json.loads(text[:start] + '"data":[]}')
            if head.get("status") != 200:
                raise ValueError(f"envelope {head!r}")
            pos, state = start + len('"data":['), "first"
        while state in ("first", "books") and pos < len(text):
            if text[pos] == "]":
                pos, state = pos + 1, "close"
                break
            if state == "books":
                if text[pos] != ",":
                    raise ValueError(f"{text[pos:pos + 20]!r} between books")
                pos += 1
            try:
                book, after = decode(text, pos)
            except ValueError:
                if len(text) - pos > 100_000:  # no book is that long: not a piece missing
                    raise
                return text[pos - (state == "books"):], state
            pos, state = after, "books"
            self.ascending = self.ascending and book["id"] > self.last_id
            self.count, self.last_id = self.count + 1, book["id"]
        if state == "close" and pos < len(text):
            if text[pos:] != "}":
                raise ValueError(f"{text[pos:pos + 20]!r} after the books")
            pos, state = len(text), "done"
        return text[pos:], state


def run(ctx):
    t = ctx.tally
    db_url = ctx.fresh_database()
    host = ctx.host(db_url=db_url).start()
    token = host.token()  # the first statement migrates the store
    store = lib.launch.BookStore(db_url, host.state_dir)
    started = time.monotonic()
    store.add(BOOKS)
    t.note(f"{BOOKS:,} books seeded in {time.monotonic() - started:.1f} s")

    pids = lib.launch.process_tree(host.proc.pid)
    before = lib.launch.status_kib(pids)
    for pid in pids:  # VmHWM from here on
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    whole = Listing(host.port, token)
    peak = lib.launch.status_kib(pids, "VmHWM")
    t.note(f"GET /books: {whole.status}, {whole.count:,} books, {whole.size / 1e6:.1f} MB in "
           f"{whole.took:.2f} s; RSS of {len(pids)} processes {before // 1024} MiB before, peak {peak // 1024} MiB")
    t.check(whole.status == 200 and whole.well_formed and not whole.cut and whole.size > SPIN_BUFFERED_LIMIT,
            f"GET /books of {BOOKS:,} books, past Spin's 128 MiB of one result: 200, well-formed JSON",
            f"{whole.status}, {whole.size:,} bytes, cut {whole.cut}, ends {whole.end!r}, {whole.rest}")
    t.check(whole.ascending and whole.count == BOOKS and whole.last_id == BOOKS,
            "... every seeded book once, in ascending id order",
            f"{whole.count:,} books, ascending {whole.ascending}, last id {whole.last_id}")
    t.check(peak - before <= GROWTH_BOUND_KIB,
            f"... the serving processes grow by at most {GROWTH_BOUND_KIB // 1024} MiB",
            f"{before} KiB before, peak {peak} KiB")

    broken = []

    def break_store():
        time.sleep(1)  # the host's buffers and the socket fill; the component waits
        broken.append(store.sql("ALTER TABLE books RENAME TO books_away"))

    cut = Listing(host.port, token, pause=break_store)
    t.note(f"cut list: {cut.count:,} books, {cut.size / 1e6:.1f} MB, then {cut.cut}")
    t.check(cut.status == 200 and cut.cut and 0 < cut.count < BOOKS and not cut.end.endswith(b"]}")
            and not cut.well_formed,
            "the books table gone after the first page: the connection is cut, no closing `]}`, "
            "what arrived not well-formed JSON",
            f"{cut.status}, {cut.count:,} books, cut {cut.cut}, ends {cut.end!r}, {cut.rest}")
    lib.wait_until(lambda: CUT_LINE in host.tail(1000), 10, step=0.1)
    reason = next((line for line in host.tail(1000).splitlines() if CUT_LINE in line), None)
    t.check(reason is not None and "books" in reason, "... and the log says why", f"{host.tail(10)}")
    t.note(f"the log: {reason}")
    if broken:
        store.sql("ALTER TABLE books_away RENAME TO books")
    r = lib.request(host.port, "GET", f"/books?after={BOOKS - 1}", token=token)
    t.check(r.status == 200 and [b["id"] for b in r.data or []] == [BOOKS],
            "with the table back the service answers again", f"{r!r}")
    if db_url:  # its few hundred MB out of a cluster the next tests share
        host.kill()
        lib.psql(ctx.pg.admin_url, f"DROP DATABASE {db_url.rsplit('/', 1)[1].split('?')[0]} WITH (FORCE)")


if __name__ == "__main__":
    lib.main("big_catalog", run)
