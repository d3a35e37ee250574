#!/usr/bin/env -S python3 -B
"""The failed-login limit where only processes show it, as an attacker would
try it: bursts of 100 logins at once (full: 5 rounds), a client-sent
`spin-client-addr` (the host sets it), another host process on the same
database, a restart, replicas on one PostgreSQL. A 401 is a password checked:
no client may get more than 10 per window. Its rules (proxy hops, /64s, the
window, Retry-After) are tests/core/login.rs's. Each check has a client
(IPv6 /64) of its own; LOGIN_MAX_FAILURES=10, a 10 s window, one proxy hop.
"""

import random

import lib

MAX_FAILURES = 10
WINDOW = 10
BURST = 100  # logins at once: far more than the limit (the race showed at 100)
INVALID = "Invalid credentials"
TOO_MANY = "Too many login attempts"


class ThrottledHost(lib.Host):
    hops = "1"

    def settings(self):
        return dict(super().settings(), LOGIN_MAX_FAILURES=str(MAX_FAILURES),
                    LOGIN_WINDOW_SECONDS=str(WINDOW), TRUSTED_PROXY_HOPS=self.hops)


class DirectHost(ThrottledHost):
    """No proxy trusted: the peer address is the client."""
    hops = "0"


def login(host, client, right, headers=None):
    """A login from `client` as the proxy in front reports it."""
    headers = dict(headers or {}, **({"X-Forwarded-For": client} if client else {}))
    return host.login(host.password if right else host.password + "-wrong", headers=headers, timeout=60)


def check_burst(t, name, answers, wrong_checked):
    """Only 401/429 envelopes (200 for right passwords), and `wrong_checked(n401, counts)`."""
    counts = lib.counts(r.status for r in answers)
    bad = [r for r in answers if not (r.is_envelope(401, INVALID) or r.is_envelope(429, TOO_MANY)
                                      or r.is_envelope(200))]
    t.note(f"{name}: {counts}")
    t.check(not bad, f"{name}: every answer is 200, 401 {INVALID!r} or 429 {TOO_MANY!r} (no 5xx)",
            f"{counts}; e.g. {bad[:2]}")
    ok, detail = wrong_checked(counts.get(401, 0), counts)
    t.check(ok, f"{name}: {detail}", f"{counts}")


def exactly_ten(n401, _counts):
    return n401 == MAX_FAILURES, f"exactly {MAX_FAILURES} passwords checked (401), never more"


def run(ctx):
    t = ctx.tally
    host = ThrottledHost(ctx).start()
    rounds = 5 if ctx.full else 1

    # 1. Bursts of wrong logins from one client.
    for k in range(rounds):
        client = lib.client(0x100 + k)
        answers = lib.parallel(lambda _: login(host, client, False), range(BURST), BURST)
        check_burst(t, f"round {k + 1}: {BURST} wrong logins at once from one client", answers, exactly_ten)
    blocked = lib.client(0x100)
    r = login(host, blocked, True)
    t.check(r.is_envelope(429, TOO_MANY), "then the right password from that client: 429", f"{r!r}")

    # 2. The right password anywhere after the 10th failure.
    client = lib.client(0x200)
    for _ in range(MAX_FAILURES):  # the 10th failure (each a 401: tests/core/login.rs)
        login(host, client, False)
    rng = random.Random(0x200)
    right_at = set(rng.sample(range(BURST - MAX_FAILURES), 20))
    answers = lib.parallel(lambda i: login(host, client, i in right_at), range(BURST - MAX_FAILURES), BURST)
    rights = [answers[i] for i in sorted(right_at)]
    t.check(all(r.is_envelope(429, TOO_MANY) for r in rights),
            f"a burst of {BURST - MAX_FAILURES} after them, the right password at 20 random "
            "places: each right one 429", f"{lib.counts(r.status for r in rights)}")
    check_burst(t, "that burst", answers, lambda n401, _c: (n401 == 0, "no password of it checked (no 401)"))

    # 3. Right passwords at once: each success starts the count afresh.
    client = lib.client(0x300)
    answers = lib.parallel(lambda i: login(host, client, i % 4 == 0), range(BURST), BURST)

    def per_success(n401, counts):
        return (n401 <= MAX_FAILURES * (counts.get(200, 0) + 1),
                f"at most {MAX_FAILURES} failures answered 401 per success (plus {MAX_FAILURES})")
    check_burst(t, f"{BURST} logins at once from one client, a quarter right", answers, per_success)

    # 4. A client's own spin-client-addr does not make it another client: the
    # host, not the client, sets it.
    direct = DirectHost(ctx, db_url=ctx.fresh_database()).start()
    answers = [login(direct, None, False, headers={"spin-client-addr": f"198.51.100.{i}:{1000 + i}"}).status
               for i in range(1, MAX_FAILURES + 2)]
    t.check(answers == [401] * MAX_FAILURES + [429],
            "a client that sends its own spin-client-addr is still counted by its peer "
            f"address: {MAX_FAILURES} x 401, then 429", f"{answers}")
    direct.stop()

    # 5. The count lives in the store.
    shared = lib.client(0x700)
    statuses = [login(host, shared, False).status for _ in range(MAX_FAILURES)]
    other = ThrottledHost(ctx, state_dir=host.state_dir, username=host.username,
                          password=host.password, secret=host.secret, db_url=host.pg_url).start()
    r = login(other, shared, True)
    t.check(statuses == [401] * MAX_FAILURES and r.is_envelope(429, TOO_MANY),
            "another host process on the same database sees the count (429)", f"{statuses} {r!r}")
    other.stop()
    host.stop()
    host.start()
    r = login(host, shared, True)
    t.check(r.is_envelope(429, TOO_MANY), "after a restart the client is still blocked", f"{r!r}")

    # 6. Replicas on one PostgreSQL database.
    if ctx.store == "postgres":
        replicas = ctx.replicas(3, ThrottledHost)
        for k in range(rounds):
            client = lib.client(0x800 + k)
            answers = lib.parallel(lambda i: login(replicas[i % 3], client, False), range(BURST), BURST)
            check_burst(t, f"3 replicas on one database, round {k + 1}: {BURST} wrong logins at "
                        "once from one client, spread over them", answers, exactly_ten)
        for replica in replicas:
            replica.stop()


if __name__ == "__main__":
    lib.main("throttle", run)
