#!/usr/bin/env -S python3 -B
"""spin-lite and real Spin, side by side, each on an empty store with the same
secret, credentials and settings, get the same seeded requests (quick: 600;
full: 3,000), valid, invalid and hostile, one pair at a time: status,
envelope (a token's string aside) and COMPARED_HEADERS identical, but
`Retry-After` may differ by one (two clocks). Needs real Spin.
"""

import json
import random
import time

import lib
from lib import jwt  # the one HS256 forger

COMPARED_HEADERS = ("content-type", "allow", "link", "retry-after", "cache-control", "etag")
SEED = 20261123


class Sequence:
    """The seeded requests: each a (method, path, body bytes or None,
    headers with "{token}" standing for the host's own token)."""

    def __init__(self, rng, secret, username, password):
        self.rng, self.secret, self.username, self.password = rng, secret.encode(), username, password
        self.created = self.clients = 0  # books created so far (ids 1..created, same on both)
        self.queued = []  # requests that must follow one another

    def token_header(self):
        now = int(time.time())
        if self.rng.random() < 0.75:
            return {"Authorization": "{token}"}
        return {"Authorization": self.rng.choice([
            "", "   ", "Bearer {token}", "{token}x", "not.a.token", "a.b", "a.b.c.d",
            jwt(self.secret, {"exp": now + 600}, {"alg": "none", "typ": "JWT"}),
            jwt(self.secret, {"exp": now + 600}, {"alg": "HS512", "typ": "JWT"}),
            jwt(self.secret, {"exp": now - 5}), jwt(self.secret, {}),
            jwt(b"another-secret" * 3, {"exp": now + 600}), jwt(self.secret, {"exp": "soon"}),
            "{token}=", "x" * 5000])}

    def book_id(self):
        if self.rng.random() < 0.6 and self.created:
            return str(self.rng.randint(1, self.created))
        return self.rng.choice(["0", "-1", "abc", "1.5", "01", "99999999", "9223372036854775807",
                                "9223372036854775808", "%31", "1/2", "", "%D9%A1"])

    def text(self):
        if self.rng.random() < 0.8:
            return self.rng.choice(["Dune", "Frank Herbert", "Émile Zola", "東京", "a" * 1000,
                                    "%_\\", "tab\tnew\nline", "emoji 📚", "O'Reilly",
                                    '"quoted"'])
        return self.rng.choice(["a" * 1001, "", "   ", "x\u0000y", 42, None, ["list"]])

    def year(self):
        if self.rng.random() < 0.8:
            return self.rng.choice([1965, -44, 0, 2147483647, -2147483648])
        return self.rng.choice([2147483648, 1999.0, 1.5, "1999", None, True])

    def book_body(self, partial):
        body = {}
        for name, value in {"title": self.text, "author": self.text, "year": self.year}.items():
            if (not partial or self.rng.random() < 0.5) and self.rng.random() < 0.9:
                body[name] = value()
        if self.rng.random() < 0.1:
            body["id"] = 777
        if self.rng.random() < 0.05:
            body["extra"] = {"nested": [1, 2]}
        return json.dumps(body).encode()

    def raw_body(self):
        return self.rng.choice([b"", b"{", b"null", b"[]", b'"s"', b"{}", b'{"title":1e400}',
                                b"[" * 10000 + b"]" * 10000, b'{"a":1,"a":2}',
                                b'{"title":"\xff\xfe","author":"x","year":1}',
                                b'{"title":"T","author":"A","year":1} trailing'])

    def query(self):
        params = []
        for _ in range(self.rng.randint(0, 4)):
            name = self.rng.choice(["limit", "after", "title", "author", "year", "page", "LIMIT"])
            value = self.rng.choice(["1", "2", "10", "1000", "1001", "0", "-1", "x", "", "1.5",
                                     "dune", "%25", "a+b", "%C3%89", "%zz", "2147483648", "3"])
            params.append(f"{name}={value}")
        return "?" + "&".join(params) if params or self.rng.random() < 0.5 else ""

    def login(self):
        r = self.rng.random()
        if r < 0.5:
            body = json.dumps({"username": self.username, "password": self.password}).encode()
        elif r < 0.8:
            body = self.rng.choice([b"{}", b"not json", b'{"username":1,"password":2}',
                                    json.dumps({"username": self.username}).encode(),
                                    b'{"username":"u","password":"p","x":[]}'])
        else:
            # A wrong login from a client of its own (one proxy hop), so the
            # real client never nears the limit.
            self.clients += 1
            body = json.dumps({"username": self.username, "password": "wrong"}).encode()
            return ("POST", "/token", body, {"X-Forwarded-For": f"203.0.113.{self.clients % 250}"})
        return ("POST", "/token", body, {"Content-Type": "application/json"})

    def lockout(self):
        """Twelve wrong logins in a row from one client of its own: ten
        answer 401, then 429 with Retry-After; then its right password, 429."""
        self.clients += 1
        client = {"X-Forwarded-For": f"198.51.100.{self.clients % 250}", "Content-Type": "application/json"}
        wrong = json.dumps({"username": self.username, "password": "guess"}).encode()
        right = json.dumps({"username": self.username, "password": self.password}).encode()
        self.queued = [("POST", "/token", wrong, client)] * 11 + [("POST", "/token", right, client)]
        return ("POST", "/token", wrong, client)

    def next(self):
        if self.queued:
            return self.queued.pop(0)
        rng = self.rng
        kind = rng.choices(["create", "get", "put", "delete", "list", "login", "method", "path",
                            "health", "raw", "limit", "lockout"],
                           weights=[14, 14, 10, 6, 14, 10, 6, 8, 4, 8, 1, 0.5])[0]
        if kind == "lockout":
            return self.lockout()
        if kind == "login":
            return self.login()
        if kind == "health":
            return (rng.choice(["GET", "GET", "HEAD", "POST"]), "/health", None, {})
        # Each kind draws its method, path and body, then its token (the seeded order).
        if kind == "create":
            method, path, body = "POST", "/book", self.book_body(False)
        elif kind in ("get", "delete"):
            method, path, body = kind.upper(), "/book/" + self.book_id(), None
        elif kind == "put":
            method, path, body = "PUT", "/book/" + self.book_id(), self.book_body(True)
        elif kind == "list":
            method, path, body = "GET", "/books" + self.query(), None
        elif kind == "method":
            method = rng.choice(["PATCH", "OPTIONS", "PUT", "DELETE", "POST", "GET"])
            path, body = rng.choice(["/token", "/book", "/books", "/book/1", "/health"]), None
        elif kind == "path":
            path = rng.choice(["/", "/tokens", "/book/", "/books/", "/book/1/2", "/BOOK/1",
                               "/book/../token", "//books", "/book/%2e%2e", "/" + "a" * 3000,
                               "/books?limit=1#frag", "/health/", "/book/1?x=1"])
            method, body = rng.choice(["GET", "POST"]), None
        elif kind == "raw":
            method, path = rng.choice(["POST", "PUT"]), rng.choice(["/book", "/book/1", "/token"])
            body = self.raw_body()
        else:  # over the 1 MiB limit
            method, path, body = "POST", rng.choice(["/book", "/token"]), b" " * (1024 * 1024 + 1)
        headers = self.token_header()
        if kind in ("create", "put", "raw", "limit"):
            headers["Content-Type"] = "application/json"
        if kind == "create" and rng.random() < 0.3:  # replays, 422s and bad keys
            headers["Idempotency-Key"] = rng.choice(["k1", "k2", "k3", '"q"', "", "a b", "x" * 256])
        elif kind in ("put", "delete") and rng.random() < 0.3:
            tag = f'{path.rsplit("/", 1)[1]}.{rng.randint(1, 3)}'
            headers["If-Match"] = rng.choice([f'"{tag}"', f'"{tag}"', "*", f'W/"{tag}"', tag, f'"0.1", "{tag}"'])
        return (method, path, body, headers)

    def learn(self, request, answer):
        """The highest id a create answered (on both: same answers; a keyed
        create may answer an earlier book)."""
        if request[0] == "POST" and request[1] == "/book" and answer["status"] == 201:
            self.created = max(self.created, answer["body"]["data"]["id"])


def answer(host, token, request):
    method, path, body, headers = request
    headers = {k: v.replace("{token}", token) for k, v in headers.items()}
    r = host.call(method, path, raw=body, headers=headers, timeout=60)
    envelope = r.json
    if isinstance(envelope, dict) and isinstance(envelope.get("data"), dict) \
            and isinstance(envelope["data"].get("token"), str):
        envelope = dict(envelope, data=dict(envelope["data"], token="<token>"))
    return {"status": r.status, "body": envelope if envelope is not None else r.raw[:200],
            "headers": {name: r.headers.get(name) for name in COMPARED_HEADERS}}


def same(a, b):
    def alike(name, x, y):  # Retry-After: whole seconds read on two clocks
        if name == "retry-after" and x and y and x.isdigit() and y.isdigit():
            return abs(int(x) - int(y)) <= 1
        return x == y
    return a["status"] == b["status"] and a["body"] == b["body"] and all(
        alike(name, a["headers"][name], b["headers"][name]) for name in COMPARED_HEADERS)


def run(ctx, seed=SEED):
    t = ctx.tally
    lib.launch.host_command("spin")  # an error that says how to get Spin

    spin_lite = lib.Host(ctx, kind="spin-lite", db_url=ctx.fresh_database()).start()
    spin_up = lib.Host(ctx, kind="spin", db_url=ctx.fresh_database(), secret=spin_lite.secret,
                       username=spin_lite.username, password=spin_lite.password).start()
    tokens = [spin_lite.token(), spin_up.token()]
    sequence = Sequence(random.Random(seed), spin_lite.secret, spin_lite.username, spin_lite.password)
    count = 3000 if ctx.full else 600
    differences, statuses = [], []
    for i in range(count):
        request = sequence.next()
        a = answer(spin_lite, tokens[0], request)
        b = answer(spin_up, tokens[1], request)
        statuses.append(a["status"])
        if not same(a, b):
            differences.append((i, request[:2], a, b))
        sequence.learn(request, b)
    t.note(f"seed {seed}: {count} requests, spin-lite's statuses {lib.counts(statuses)}")
    detail = "\n".join(f"#{i} {req}: spin-lite {a} / spin {b}" for i, req, a, b in differences[:5])
    t.check(not differences,
            f"{count} seeded requests (valid, invalid, hostile; every endpoint): spin-lite and "
            f"spin up answer alike", f"{len(differences)} differ:\n{detail}")
    t.check(len(set(statuses)) >= 8, "the sequence reached at least 8 kinds of answer", f"{lib.counts(statuses)}")
    for host in (spin_lite, spin_up):
        host.stop()


if __name__ == "__main__":
    lib.main("side_by_side", run)
