#!/usr/bin/env python3
"""Token attacks that need a real process (every token to refuse is
tests/core/tokens.rs's): `jku`/`x5u` headers pointing at a listener on
127.0.0.1 that must never be contacted, and a 1 MiB Authorization header
sent 100 times, refused fast with the host's memory bounded.
"""

import http.server
import socket
import sys
import threading
import time
from collections import Counter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402
from lib import b64url, jwt  # noqa: E402  (the one HS256 forger)


class Listener(http.server.ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that records every request it gets."""

    def __init__(self):
        self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self.server.hits.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"keys":[]}')

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def big_header_request(port):
    """GET /books with a 1 MiB Authorization header; the answer's status
    (0: the connection was closed or reset)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /books HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      b"Authorization: " + b"A" * (1024 * 1024) + b"\r\n\r\n")
            return lib.status_of(lib.read_answer(s, 10))
    except OSError:
        return 0


def run(ctx):
    if not ctx.only_on("sqlite", "tokens and headers are refused whatever the store"):
        return
    t = ctx.tally
    host = ctx.host().start()
    key, good = host.secret.encode(), host.token()
    listener = Listener()
    base = f"http://127.0.0.1:{listener.server_address[1]}"
    header = {"alg": "HS256", "typ": "JWT", "jku": base + "/jwks.json", "x5u": base + "/cert.pem",
              "jwk": {"kty": "oct", "k": b64url(b"attacker")}}
    claims = {"exp": int(time.time()) + 600}
    r = lib.try_request(host.port, "GET", "/books", token=jwt(key, claims, header))
    t.check(r.is_envelope(200), "jku, x5u and jwk headers on a token of ours: ignored (200)", f"{r!r}")
    r = lib.try_request(host.port, "GET", "/books", token=jwt(b"attacker", claims, header))
    t.check(r.is_envelope(401, "Invalid token"), "signed with the key its jku/jwk names: 401",
            f"{r!r}")
    time.sleep(0.5)
    t.check(not listener.hits, "the jku/x5u listener received no request", f"{listener.hits}")
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
