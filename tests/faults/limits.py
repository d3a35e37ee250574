#!/usr/bin/env -S python3 -B
"""Body limits, slow and stalled clients and a storm, on a real host's
connections: on spin-lite, half-sent heads and silent connections closed
after HEADER_TIMEOUT (its own guarantee; real Spin has none); on every host,
413 without waiting for a 100 MiB Content-Length,
bodies 1 byte over 1 MiB sent whole by 6 clients at once each reading its
413 (no reset), a chunked body growing past 1 MiB, bodies at 1 byte per 100
ms completing, a storm of 5,000 requests 200 at once (full: 50,000) without a
5xx, 400 clients hanging up mid-answer without a `level=error` line; full
size: a body stalled half way cut off after BODY_TIMEOUT. (Others served
beside stalled clients: stalls.py; 413 at 1 MiB + 1: tests/core.)
"""

import select
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import lib

HEADER_TIMEOUT = 10  # host/src/http/
BODY_TIMEOUT = 30  # host/src/http/


def is_413(raw):
    return lib.status_of(raw) == 413 and b'"message":"Request body too large"' in raw


def head(path, token, extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {token}\r\n"
            f"Content-Type: application/json\r\n{extra}").encode()


def close_times(socks, opened_at, limit):
    """Seconds from `opened_at` until the host closed each socket (None: still open at `limit`)."""
    times = {s: None for s in socks}
    pending = set(socks)
    while pending and time.monotonic() - opened_at < limit:
        for s in select.select(list(pending), [], [], 0.2)[0]:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                times[s] = time.monotonic() - opened_at
                pending.discard(s)
    return [times[s] for s in socks]


def bodies(t, ctx, port, token):
    """413 for a 100 MiB Content-Length, whole bodies over the limit and a chunked one."""
    for path in ("/book", "/token"):
        started = time.monotonic()
        with lib.sent(port, head(path, token, "Content-Length: 104857600\r\n\r\n") + b'{"title":') as s:
            raw = lib.read_answer(s, 10)
        took = time.monotonic() - started
        t.check(is_413(raw) and took < 2,
                f"POST {path} with Content-Length 100 MiB and 9 bytes sent: 413 within 2 s",
                f"{took:.2f}s {raw[:200]!r}")

    # The host refuses a body from its Content-Length, then reads and discards
    # the rest before closing ("lingering close"): closing on unread bytes
    # would reset the connection, and a client still sending would see a
    # broken pipe instead of its 413.
    over = b'{"title": "Over", "author": "Limit", "year": 2024}'.ljust(1024 * 1024 + 1)
    request = head("/book", token, f"Content-Length: {len(over)}\r\nConnection: close\r\n\r\n") + over

    def send_over(_):
        try:
            with lib.sent(port, request) as s:
                return "413" if is_413(lib.read_answer(s, 10)) else "other answer"
        except OSError as error:
            return type(error).__name__

    outcomes = lib.counts(lib.parallel(send_over, range(600 if ctx.full else 300), 6))
    t.check(set(outcomes) == {"413"},
            "bodies one byte over 1 MiB sent whole, 6 clients at once: every one reads 413",
            f"{outcomes}")

    with lib.sent(port, head("/book", token, "Transfer-Encoding: chunked\r\n\r\n")) as s:
        chunk = b"[" + b"1," * 32767 + b"1"  # 64 KiB of JSON-ish bytes
        sent = 0
        try:
            while sent < 4 * 1024 * 1024 and not select.select([s], [], [], 0)[0]:
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
        except OSError:
            pass
        raw = lib.read_answer(s, 10)
    t.check(is_413(raw), "a chunked body growing past 1 MiB: 413", f"sent {sent} bytes; {raw[:200]!r}")


def slow_bodies(port, token, results):
    """5 clients sending a body 1 byte per 100 ms; their answers go to `results`."""
    body = b'{"title":"Slow","author":"Client","year":1999}'

    def client():
        with lib.sent(port, head("/book", token, f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"),
                      30) as s:
            for i in range(len(body)):
                s.sendall(body[i:i + 1])
                time.sleep(0.1)
            results.append(lib.read_answer(s, 10))

    threads = [threading.Thread(target=client) for _ in range(5)]
    for th in threads:
        th.start()
    return threads


def storm(t, ctx, host, token):
    total, concurrency = (50000 if ctx.full else 5000), 200
    ids = list(host.seed(token, [{"title": f"Storm {i}", "author": "S", "year": i} for i in range(20)]))
    bad_login = {"username": "x", "password": "y"}
    client = {"X-Forwarded-For": lib.client(5)}  # wrong logins from a client of their own
    kinds = [(lambda i: ("GET", f"/book/{ids[i % len(ids)]}", None, token, None), {200}),
             (lambda i: ("GET", f"/book/{10**15 + i}", None, token, None), {404}),
             (lambda i: ("POST", "/book", {"title": "Storm", "author": "Storm", "year": 1}, token, None),
              {201}),
             (lambda i: ("GET", "/book/1", None, None, None), {401}),
             (lambda i: ("POST", "/token", bad_login, None, client), {401, 429})]
    deadline = time.monotonic() + (600 if ctx.full else 120)

    def one(i):
        if time.monotonic() > deadline:
            return None
        make, want = kinds[i % len(kinds)]
        method, path, body, auth, headers = make(i)
        r = host.call(method, path, body, auth, headers=headers, timeout=30)
        return r.status, r.status in want, (method, path, r)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = [x for x in pool.map(one, range(total)) if x]
    took, unexpected = time.monotonic() - started, [what for _, ok, what in results if not ok]
    t.note(f"storm: {len(results)} of {total} requests at concurrency {concurrency} in {took:.1f}s "
           f"({len(results) / took:.0f}/s), statuses {lib.counts(status for status, _, _ in results)}")
    t.check(len(results) == total, f"storm: all {total} requests sent within the time bound",
            f"{len(results)} sent")
    t.check(not unexpected, "storm: every answer is the expected one, no 5xx, no dropped connection",
            f"{len(unexpected)}: {unexpected[:2]}")


def hang_ups(t, host, token):
    """Clients that reset their connection after the first bytes of a whole
    list (about 40 KB), or right after sending: a client leaving is not the
    service failing (docs/operations.md, "Levels")."""
    host.seed(token, [{"title": "Hang-up " + "x" * 40, "author": "H", "year": i} for i in range(500)])
    request = lib.head("GET", "/books", {"Authorization": token})

    def one(i):
        with lib.sent(host.port, request) as s:
            if i % 2:
                s.recv(1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(400)))
    time.sleep(1)  # the last answers' lines
    log = host.tail(100000)
    errors = [line for line in log.splitlines() if "level=error" in line]
    left = log.count('msg="client left"')
    t.check(left > 0 and not errors, "400 clients hanging up mid-answer: `client left` lines "
            "(info), no level=error line", f"{left} left; {errors[:2]}")


def run(ctx):
    # PostgreSQL under load is concurrency.py's.
    if not ctx.only_on("sqlite", "bodies and connections are the host's, whatever the store"):
        return
    t = ctx.tally
    host = ctx.host().start()
    token, port = host.token(), host.port
    # Stalled clients first: the rest runs while the host waits them out.
    lite = ctx.host_kind == "spin-lite"
    stalled = [lib.sent(port, b"GET /books HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz", 30)
               for _ in range(200 if ctx.full else 50)] if lite else []
    idle = [lib.sent(port, b"", 30) for _ in range(10)] if lite else []
    limit, watched, opened = HEADER_TIMEOUT + 5, {}, time.monotonic()
    watcher = threading.Thread(target=lambda: watched.update(closed=close_times(stalled + idle, opened, limit)))
    watcher.start()

    bodies(t, ctx, port, token)
    slow = []
    slow_threads = slow_bodies(port, token, slow)
    if not ctx.full:  # the full storm outlasts the wait: after it
        storm(t, ctx, host, token)
    hang_ups(t, host, token)
    for th in slow_threads:
        th.join(20)
    t.check(len(slow) == 5 and all(lib.status_of(r) == 201 for r in slow),
            "slow bodies (1 byte per 100 ms) complete with 201", f"{[r[:40] for r in slow]}")

    watcher.join(limit + 5)
    closed = watched.get("closed") or [None] * (len(stalled) + len(idle))
    heads, nothing = closed[:len(stalled)], closed[len(stalled):]
    if lite:
        t.check(None not in heads, f"the host closes half-sent request heads within {limit} s "
                f"(header read timeout {HEADER_TIMEOUT} s)", f"{heads.count(None)} of {len(heads)} still open")
        t.check(None not in nothing, f"the host closes connections that send nothing within {limit} s",
                f"{nothing.count(None)} of {len(nothing)} still open")
        if None not in closed:
            t.note(f"stalled and idle connections closed {min(closed):.1f}-{max(closed):.1f}s after they "
                   "stalled")
    for s in stalled + idle:
        s.close()
    if ctx.full:
        storm(t, ctx, host, token)
        started = time.monotonic()
        with lib.sent(port, head("/book", token, "Content-Length: 100\r\n\r\n") + b'{"title":', 60) as s:
            raw = lib.read_answer(s, BODY_TIMEOUT + 15)
        took = time.monotonic() - started
        t.check(took < BODY_TIMEOUT + 10, f"a body stalled half way is cut off within {BODY_TIMEOUT + 10} s",
                f"{took:.1f}s, answered {raw[:120]!r}")

    t.check(host.serves(token), "the host is up and serves after all of it")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("limits", run)
