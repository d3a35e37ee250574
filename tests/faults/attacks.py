#!/usr/bin/env python3
"""Token attacks over HTTP against the real host (standard library only).

Forged tokens beyond those of tests/hurl/wrapped/auth_forged.hurl (alg None/NONE,
ES256 and HS384 headers over an HMAC-SHA256 signature, kid/jku/x5u headers
pointing at a local listener that must never be contacted, exp edge cases,
malformed segments and bytes), a 1 MiB Authorization
header repeated 50 times (host stays up, RSS bounded), and a host started
without SECRET_TOKEN (POST /token -> 500, every token -> 401, also one
signed with the empty key). Every check is one test.
"""

import http.server
import socket
import sys
import threading
import time
from collections import Counter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402
from lib import b64url, jwt, segment  # noqa: E402  (the one HS256 forger)

INVALID = "Invalid token"


class Listener:
    """A tiny HTTP server on 127.0.0.1 that counts every request it gets."""

    def __init__(self):
        self.hits = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.hits.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"keys":[]}')

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def raw_auth_request(port, auth_bytes, timeout=30):
    """GET /books with an Authorization header given as raw bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET /books HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: "
                  + auth_bytes + b"\r\n\r\n")
        return lib.read_answer(s, timeout)


def run(ctx):
    t = ctx.tally
    host = ctx.host().start()
    key = host.secret.encode()
    good = host.token()
    now = int(time.time())
    future = now + 600
    listener = Listener()
    jku = f"http://127.0.0.1:{listener.port}/jwks.json"
    x5u = f"http://127.0.0.1:{listener.port}/cert.pem"
    hs = {"alg": "HS256", "typ": "JWT"}
    valid_claims = {"exp": future}
    attacks = 0

    def expect(token, status, message, name, headers=None):
        nonlocal attacks
        attacks += 1
        r = lib.try_request(host.port, "GET", "/books", token=token, headers=headers)
        t.check(r.is_envelope(status, message), name, f"{r!r}")

    def refused(token, name):
        expect(token, 401, INVALID, f"refused: {name}")

    def accepted(token, name):
        expect(token, 200, "Books retrieved successfully", f"accepted: {name}")

    accepted(good, "the token from POST /token")
    # Beyond the tokens tests/hurl/wrapped/auth_forged.hurl sends (lib.forge: alg
    # none, HS384, HS512, RS256, hs256, no alg, exp string/null/missing,
    # claims an array, padding, two or four segments, fractional exp):
    # alg none in other spellings, with an empty and with a real signature.
    for alg in ("None", "NONE", "nOnE"):
        unsigned = segment({"alg": alg, "typ": "JWT"}) + "." + segment(valid_claims) + "."
        refused(unsigned, f"alg {alg}, empty signature")
        refused(jwt(key, valid_claims, {"alg": alg, "typ": "JWT"}), f"alg {alg}, HMAC-SHA256 signature")
    refused(segment({"alg": "none"}) + "." + segment(valid_claims), "alg none, two segments")
    refused(jwt(key, valid_claims, {"alg": "HS384", "typ": "JWT"}), "HS384 header, SHA-256 signature")
    refused(jwt(key, valid_claims, {"alg": "ES256", "typ": "JWT"}), "ES256 header, HMAC-SHA256 signature")
    refused(jwt(key, valid_claims, {"alg": ["HS256"]}), "alg as an array")
    refused(jwt(key, valid_claims, dict(hs, crit=["exp"])), "crit header")
    # kid / jku / x5u: ignored, never fetched.
    accepted(jwt(key, valid_claims, dict(hs, kid="../../../../etc/passwd")), "kid path traversal (ignored)")
    accepted(jwt(key, valid_claims, dict(hs, kid="' OR 1=1 --")), "kid SQL (ignored)")
    accepted(jwt(key, valid_claims, dict(hs, jku=jku)), "jku to a local listener (ignored)")
    accepted(jwt(key, valid_claims, dict(hs, x5u=x5u)), "x5u to a local listener (ignored)")
    accepted(jwt(key, valid_claims, dict(hs, jku=jku, x5u=x5u, kid="k1",
                                         jwk={"kty": "oct", "k": b64url(b"attacker")})),
             "jku + x5u + kid + embedded jwk (ignored)")
    refused(jwt(b"attacker", valid_claims, dict(hs, jku=jku, x5u=x5u,
                                                jwk={"kty": "oct", "k": b64url(b"attacker")})),
            "signed with the key of an embedded jwk / jku")
    time.sleep(0.5)
    t.check(not listener.hits, "the jku/x5u listener received zero requests", f"{listener.hits}")
    listener.close()
    # exp edge cases.
    refused(jwt(key, {"exp": int(time.time())}, hs), "exp exactly now")
    refused(jwt(key, {"exp": int(time.time()) - 1}, hs), "exp one second ago")
    accepted(jwt(key, None, hs, raw_claims='{"exp":1e300}'), "exp 1e300 (signed, far future)")
    refused(jwt(key, None, hs, raw_claims='{"exp":1e999}'), "exp 1e999 (overflows a double)")
    refused(jwt(key, {"exp": -1}, hs), "exp negative")
    refused(jwt(key, {"exp": -1e300}, hs), "exp -1e300")
    refused(jwt(key, {"exp": True}, hs), "exp true")
    refused(jwt(key, {"exp": [future]}, hs), "exp as an array")
    refused(jwt(key, None, hs, raw_claims="null"), "claims null")
    refused(jwt(key, None, hs, raw_claims='{"exp":%d,"exp":1}' % future), "duplicate exp, last one expired")
    # Malformed segments (each otherwise correct and signed).
    h, c, s = good.split(".")
    refused(f"{h}=.{c}.{s}", "padding on the header")
    refused(f"{h}.{c}==.{s}", "padding on the claims")
    refused(f"{h} .{c}.{s}", "space inside the token")
    refused(f"{h}.{c[:5]} {c[5:]}.{s}", "space inside a segment")
    refused(f"{h}.{c}\t.{s}", "tab inside the token")
    refused(f"{h}.{c}.{s[:-2]}+/", "'+' and '/' (standard base64 alphabet)")
    refused(f"{h}.{c}.{s[:-1]}*", "'*' in the signature")
    refused(f"{h}..{s}", "empty claims segment")
    refused(f".{c}.{s}", "empty header segment")
    refused(f"{h}.{c}.", "empty signature segment")
    refused(f"{h}.{c}.{s[:-1]}", "signature truncated by one character")
    refused("Bearer " + good, "Bearer prefix")
    refused(good + good, "token twice, concatenated")
    accepted(f"  {good}  ", "surrounding spaces (trimmed, documented)")
    for label, raw in (("byte 0xff", b"\xff"), ("NUL byte", b"\x00"), ("UTF-8 e-acute", "\u00e9".encode())):
        attacks += 1
        resp = raw_auth_request(host.port, good.encode()[:10] + raw + good.encode()[10:])
        st = lib.status_of(resp)
        body_ok = b'"message":"Invalid token"' in resp
        t.check(st == 400 or (st == 401 and body_ok),
                f"refused: {label} inside the token (401 Invalid token, or 400 from HTTP parsing)",
                f"{resp[:200]!r}")
    # 1 MiB Authorization header, in two rounds of 50. The first round may
    # grow the host's buffers and allocator caches once; the second, another
    # 50 MiB sent, must not grow it further: memory stays bounded.
    big = ("A" * (1024 * 1024)).encode()
    statuses, worst, rss = Counter(), 0.0, [host.rss_kib()]
    for round_ in range(2):
        for i in range(50):
            attacks += 1
            started = time.monotonic()
            try:
                resp = raw_auth_request(host.port, big, timeout=10)
                st = lib.status_of(resp)
            except OSError as e:
                st = f"connection error {type(e).__name__}"
            worst = max(worst, time.monotonic() - started)
            statuses[st] += 1
            if round_ == 0 and i == 0:
                first = resp[:300] if isinstance(st, int) else st
        rss.append(host.rss_kib())
    t.note(f"1 MiB Authorization header x100: answers {dict(statuses)}, slowest {worst * 1000:.0f} ms, "
           f"RSS {rss[0]} -> {rss[1]} -> {rss[2]} KiB; first answer {first!r}")
    t.check(set(statuses) <= {401, 431, 400} or all(isinstance(k, str) for k in statuses),
            "1 MiB Authorization header: refused (401/431/400 or connection closed), never 5xx",
            f"{dict(statuses)}")
    t.check(worst < 5, "1 MiB Authorization header: answered within 5 s each", f"slowest {worst:.2f}s")
    t.check(None not in rss and rss[1] - rss[0] < 16 * 1024,
            "1 MiB Authorization header, first 50: host RSS grows by less than 16 MiB", f"{rss} KiB")
    # A leaked header would add 50 MiB here; a serving thread's malloc arena
    # first used in this round can add a few (seen once: +6 MiB).
    t.check(None not in rss and rss[2] - rss[1] < 8 * 1024,
            "1 MiB Authorization header, next 50: host RSS grows by less than 8 MiB", f"{rss} KiB")
    t.check(host.serves(good), "the host is up and serves after the attacks")
    host.stop()

    # A host without SECRET_TOKEN.
    bare = ctx.host(secret=None).start()
    r = bare.login()
    t.check(r.is_envelope(500, "Could not generate token"), "no secret: POST /token -> 500 Could not generate token",
            f"{r!r}")
    r = bare.login("wrong")
    t.check(r.is_envelope(401, "Invalid credentials"), "no secret: wrong credentials -> 401 Invalid credentials",
            f"{r!r}")
    for name, token in (("signed with the empty key", jwt(b"", valid_claims, hs)),
                        ("signed with the empty key, 1e300 exp", jwt(b"", {"exp": 1e300}, hs)),
                        ("alg none", segment({"alg": "none"}) + "." + segment(valid_claims) + "."),
                        ("a token of another host", good)):
        attacks += 1
        r = lib.try_request(bare.port, "GET", "/books", token=token)
        t.check(r.is_envelope(401, INVALID), f"no secret: {name} -> 401 Invalid token", f"{r!r}")
    r = lib.try_request(bare.port, "POST", "/book", body={"title": "x", "author": "y", "year": 1},
                        token=jwt(b"", valid_claims, hs))
    t.check(r.is_envelope(401, INVALID), "no secret: POST /book with an empty-key token -> 401", f"{r!r}")
    bare.stop()
    t.note(f"token attacks tried: {attacks}")


if __name__ == "__main__":
    lib.main("attacks", run)
