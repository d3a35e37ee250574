#!/usr/bin/env python3
"""The failed-login limit under concurrency, across instances and restarts.

    tests/faults/throttle.py --store sqlite|postgres [--scale quick|full]

A host with LOGIN_MAX_FAILURES=10 (the default, set explicitly), a 10-second
window (LOGIN_WINDOW_SECONDS) and TRUST_FORWARDED_FOR=true, a fresh instance
per request (so every count goes through the store); each check uses its own
client address (X-Forwarded-For):

* 200 wrong logins at once from one client address (X-Forwarded-For): at
  most 10 answer 401 "Invalid credentials" (exactly 10: nothing else counts
  for that address), every other one 429 "Too many login attempts" with a
  Retry-After between 1 and the window; no 5xx. full: 5 rounds, 1,000 logins.
* then the right credentials from that address: 429; from another: 200.
* the count lives in the store: a second host process on the same database
  sees it (429), and so does the first after a restart.
* the window ends: after Retry-After seconds the right credentials work
  again (200), and the count starts over (10 x 401, then 429).
* 200 concurrent logins mixing right and wrong credentials from one
  address: only 200, 401 and 429, and at most 10 failures answered 401 per
  success (each success clears the count) plus 10.
"""

import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402

MAX_FAILURES = 10
WINDOW = 10
CONCURRENCY = 200
INVALID = "Invalid credentials"
TOO_MANY = "Too many login attempts"


class ThrottledHost(lib.Host):
    def env(self):
        env = super().env()
        env.update(LOGIN_MAX_FAILURES=str(MAX_FAILURES), LOGIN_WINDOW_SECONDS=str(WINDOW),
                   TRUST_FORWARDED_FOR="true")
        for name in ("AUTH_PASSWORD_HASH", "SECRET_TOKEN_PREVIOUS"):
            env.pop(name, None)
        return env


def login(host, client, right):
    password = host.password if right else host.password + "-wrong"
    return lib.try_request(host.port, "POST", "/token",
                           body={"username": host.username, "password": password},
                           headers={"X-Forwarded-For": client}, timeout=60)


def retry_after(r):
    value = {k.lower(): v for k, v in r.headers.items()}.get("retry-after", "")
    return int(value) if value.isdigit() else None


def summary(answers):
    counts = {}
    for r in answers:
        counts[r.status] = counts.get(r.status, 0) + 1
    return dict(sorted(counts.items()))


def run(ctx):
    t = ctx.tally
    tag = lib.random_text(4).encode().hex()[:4]  # this run's addresses
    host = ThrottledHost(ctx).start()
    rounds = 5 if ctx.full else 1

    # 1. Wrong logins at once from one address.
    for k in range(rounds):
        client = f"2001:db8:{k + 1:x}::{tag}"
        answers = lib.parallel(lambda _: login(host, client, False), range(CONCURRENCY), CONCURRENCY)
        counts = summary(answers)
        unauthorized = [r for r in answers if r.status == 401]
        limited = [r for r in answers if r.status == 429]
        bad = [r for r in answers
               if not (r.is_envelope(401, INVALID) or r.is_envelope(429, TOO_MANY))]
        t.note(f"round {k + 1}: {CONCURRENCY} parallel wrong logins from one address: {counts}")
        t.check(not bad, f"round {k + 1}: every answer is 401 {INVALID!r} or 429 {TOO_MANY!r} (no 5xx)",
                f"{counts}; e.g. {bad[:2]}")
        t.check(len(unauthorized) == MAX_FAILURES,
                f"round {k + 1}: exactly {MAX_FAILURES} of {CONCURRENCY} parallel wrong logins answer "
                f"401, never more", f"{len(unauthorized)} answered 401")
        waits = [retry_after(r) for r in limited]
        t.check(all(w is not None and 1 <= w <= WINDOW for w in waits)
                and not any(retry_after(r) is not None for r in unauthorized),
                f"round {k + 1}: every 429 carries Retry-After in 1..{WINDOW} (and no 401 does)",
                f"{sorted(set(waits))[:5]}")
    blocked = f"2001:db8:1::{tag}"
    r = login(host, blocked, True)
    t.check(r.is_envelope(429, TOO_MANY), "the right credentials from the blocked address: 429", f"{r!r}")
    r = login(host, f"2001:db8:ff::{tag}", True)
    t.check(r.is_envelope(200), "the right credentials from another address: 200", f"{r!r}")

    # 2. The count lives in the store: another host process on the same
    # database sees it, and so does this one after a restart.
    shared = f"2001:db8:5::{tag}"
    statuses = [login(host, shared, False).status for _ in range(MAX_FAILURES)]
    db_url = None if ctx.store == "sqlite" else ctx.pg.url
    other = ThrottledHost(ctx, state_dir=host.state_dir, username=host.username,
                          password=host.password, secret=host.secret, db_url=db_url).start()
    r = login(other, shared, True)
    t.check(statuses == [401] * MAX_FAILURES and r.is_envelope(429, TOO_MANY),
            "another host process on the same database sees the count (429)", f"{statuses} {r!r}")
    t.check(other.stop() == 0, "the second host exits 0 on SIGTERM")
    host.stop()
    host.start()
    r = login(host, shared, True)
    t.check(r.is_envelope(429, TOO_MANY), "after a restart the address is still blocked", f"{r!r}")

    # 3. The window ends: Retry-After later, the right credentials work again
    # and the count starts over.
    wait = retry_after(r) or 0
    t.check(1 <= wait <= WINDOW, f"Retry-After is in 1..{WINDOW}", f"{wait}")
    time.sleep(wait + 0.5)
    r = login(host, shared, True)
    t.check(r.is_envelope(200), "after Retry-After seconds the right credentials work again", f"{r!r}")
    fresh = [login(host, shared, False).status for _ in range(MAX_FAILURES + 1)]
    t.check(fresh == [401] * MAX_FAILURES + [429],
            f"the count starts over: {MAX_FAILURES} x 401, then 429", f"{fresh}")

    # 4. Right and wrong logins mixed, at once, from one address.
    mixed = f"2001:db8:6::{tag}"
    answers = lib.parallel(lambda i: login(host, mixed, i % 4 == 0), range(CONCURRENCY), CONCURRENCY)
    counts = summary(answers)
    bad = [r for r in answers if r.status not in (200, 401, 429) or not r.is_envelope()]
    t.note(f"{CONCURRENCY} parallel logins from one address, a quarter right: {counts}")
    t.check(not bad, "mixed right and wrong logins at once: only 200, 401 and 429, no 5xx",
            f"{counts}; e.g. {bad[:2]}")
    t.check(counts.get(401, 0) <= MAX_FAILURES * (counts.get(200, 0) + 1),
            f"mixed logins: at most {MAX_FAILURES} failures answered 401 per success (plus "
            f"{MAX_FAILURES})", f"{counts}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM")


if __name__ == "__main__":
    lib.main("throttle", run)
