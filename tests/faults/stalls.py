#!/usr/bin/env -S python3 -B
"""Clients stalled while sending must not hold what others need: more
stalled bodies and heads (quick: 40 each; full: 200) than the host's 32
instance slots, and meanwhile GET /health and a login each answer within 1 s,
every time; once they go, the host serves on.
"""

import time

import lib

ANSWER_WITHIN = 1.0
# A request stalled in its head, and one stalled after a byte of its body.
STALLED = (b"POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",
           lib.head("POST", "/token", {"Content-Type": "application/json", "Content-Length": 100}) + b"{")


def run(ctx):
    if not ctx.only_on("sqlite", "slots and connections are the host's, whatever the store"):
        return
    t = ctx.tally
    host = ctx.host().start()
    count = 200 if ctx.full else 40
    stalled = []
    try:
        stalled += [lib.sent(host.port, data) for _ in range(count) for data in STALLED]
        time.sleep(0.5)  # let the host take them all in
        answers = [host.call("GET", "/health", timeout=10) for _ in range(10)]
        slowest = max(r.elapsed for r in answers)
        t.check(all(r.is_envelope(200, "Service healthy") for r in answers),
                f"with {count} stalled bodies and {count} stalled heads, GET /health answers 200 "
                "every time", f"{answers[:3]}")
        t.check(slowest < ANSWER_WITHIN, f"... each in under {ANSWER_WITHIN:.0f} s (slowest "
                f"{slowest * 1000:.0f} ms)", f"{[round(r.elapsed, 3) for r in answers]}")
        r = host.login()
        t.check(r.is_envelope(200) and r.elapsed < ANSWER_WITHIN,
                f"... and so does a login ({r.elapsed * 1000:.0f} ms)", f"{r!r}")
    finally:
        for s in stalled:
            s.close()
    r = host.call("GET", "/health", timeout=10)
    t.check(r.is_envelope(200), "once the stalled clients are gone the host serves on", f"{r!r}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("stalls", run)
