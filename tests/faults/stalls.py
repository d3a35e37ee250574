#!/usr/bin/env python3
"""Clients that stall while sending a request must not hold what others need.

A host with its default 32 instance slots. Stalled clients connect and stop:
some after a `POST /token` head and one byte of a 100-byte body, some in the
middle of a request head. While they hold their connections, another client's
`GET /health` and login must each answer in under a second, every time. More
stalled clients than there are slots (quick: 40 bodies and 40 heads; full:
200 of each), so a host that gave each stalled request a slot could not.
Then the stalled clients go away and the host still serves.
"""

import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

ANSWER_WITHIN = 1.0


def stall(port, head_only):
    """A connection that sends part of a request and then nothing."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if head_only:
        s.sendall(b"POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
    else:
        s.sendall(b"POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    return s


def run(ctx):
    if not ctx.only_on("sqlite", "slots and connections are the host's, whatever the store"):
        return
    t = ctx.tally
    host = ctx.host().start()
    count = 200 if ctx.full else 40
    stalled = []
    try:
        for i in range(count):
            stalled.append(stall(host.port, head_only=False))
            stalled.append(stall(host.port, head_only=True))
        time.sleep(0.5)  # let the host take them all in
        t.note(f"{count} stalled bodies and {count} stalled heads connected")
        answers = [lib.try_request(host.port, "GET", "/health", timeout=10) for _ in range(10)]
        slowest = max(r.elapsed for r in answers)
        t.check(all(r.is_envelope(200, "Service healthy") for r in answers),
                f"with {count} stalled bodies and {count} stalled heads, GET /health answers 200 "
                "every time", f"{answers[:3]}")
        t.check(slowest < ANSWER_WITHIN,
                f"... each in under {ANSWER_WITHIN:.0f} s (slowest {slowest * 1000:.0f} ms)",
                f"{[round(r.elapsed, 3) for r in answers]}")
        t.note(f"GET /health beside the stalled clients: slowest of 10 in {slowest * 1000:.1f} ms")
        r = host.login()
        t.check(r.is_envelope(200) and r.elapsed < ANSWER_WITHIN,
                f"... and so does a login ({r.elapsed * 1000:.0f} ms)", f"{r!r}")
    finally:
        for s in stalled:
            s.close()
    r = lib.try_request(host.port, "GET", "/health", timeout=10)
    t.check(r.is_envelope(200), "once the stalled clients are gone the host serves on", f"{r!r}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("stalls", run)
