#!/usr/bin/env -S python3 -B
"""Token attacks that need processes (every token to refuse is
tests/core/tokens.rs's): `jku`/`x5u` naming a listener of ours that must
never be contacted; a 1 MiB Authorization header sent 100 times, refused fast
with the host's memory bounded.
"""

import socket
import time
from collections import Counter

import lib
from lib import b64url, jwt  # the one HS256 forger


def big_header_request(port):
    """GET /books with a 1 MiB Authorization header: the status (0: closed or reset)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(lib.head("GET", "/books", {"Connection": "close", "Authorization": "A" * (1 << 20)}))
            return lib.status_of(lib.read_answer(s, 10))
    except OSError:
        return 0


def run(ctx):
    if not ctx.only_on("sqlite", "tokens and headers are refused whatever the store"):
        return
    t = ctx.tally
    host = ctx.host().start()
    key, good = host.secret.encode(), host.token()
    hits = []
    listener = lib.http_server(lambda request: (hits.append(request.path),
                                                lib.reply(request, 200, b'{"keys":[]}')))
    base = f"http://127.0.0.1:{listener.server_address[1]}"
    header = {"alg": "HS256", "typ": "JWT", "jku": base + "/jwks.json", "x5u": base + "/cert.pem",
              "jwk": {"kty": "oct", "k": b64url(b"attacker")}}
    claims = {"exp": int(time.time()) + 600}
    r = host.call("GET", "/books", token=jwt(key, claims, header))
    t.check(r.is_envelope(200), "jku, x5u and jwk headers on a token of ours: ignored (200)", f"{r!r}")
    r = host.call("GET", "/books", token=jwt(b"attacker", claims, header))
    t.check(r.is_envelope(401, "Invalid token"), "signed with the key its jku/jwk names: 401", f"{r!r}")
    time.sleep(0.5)
    t.check(not hits, "the jku/x5u listener received no request", f"{hits}")
    listener.shutdown()
    listener.server_close()

    # Two rounds of 50. The first may grow the host's buffers and allocator
    # caches once; a leaked header would add 50 MiB in the second, a serving
    # thread's first malloc arena a few (seen once: +6 MiB).
    statuses, slowest, rss = Counter(), 0.0, [host.rss_kib()]
    for _ in range(2):
        for _ in range(50):
            started = time.monotonic()
            statuses[big_header_request(host.port)] += 1
            slowest = max(slowest, time.monotonic() - started)
        rss.append(host.rss_kib())
    t.note(f"1 MiB Authorization header x100: statuses {dict(statuses)}, slowest "
           f"{slowest * 1000:.0f} ms, RSS {rss[0]} -> {rss[1]} -> {rss[2]} KiB")
    t.check(set(statuses) <= {0, 400, 401, 431} and slowest < 5,
            "1 MiB Authorization header: refused (401/431/400 or closed) within 5 s, never 5xx",
            f"{dict(statuses)}, slowest {slowest:.2f}s")
    t.check(None not in rss and rss[1] - rss[0] < 16 * 1024 and rss[2] - rss[1] < 8 * 1024,
            "1 MiB Authorization header: host RSS grows by under 16 MiB over the first 50, "
            "under 8 MiB over the next 50", f"{rss} KiB")
    t.check(host.serves(good), "the host is up and serves after the attacks")
    host.stop()


if __name__ == "__main__":
    lib.main("attacks", run)
