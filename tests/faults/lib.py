"""Shared plumbing for the fault tests, scripts/fuzz.sh, tests/e2e.py and
tests/hurl/run.py: the HS256 forger (`jwt`, `forge`), the tally, requests and
a test's host. What a test starts is stopped on exit, also on a signal.
A test module defines `run(ctx)` and ends with `lib.main("name", run)`."""

import argparse
import atexit
import base64
import hashlib
import hmac
import http.client
import json
import os
import secrets
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import launch  # noqa: E402  (the one host launcher)
from launch import ROOT, Pg, free_port, psql, random_text  # noqa: E402, F401

WASM = ROOT / "target/wasm32-wasip2/release/book_catalog.wasm"

# Client addresses for tests that make wrong logins: this run's own /48 in
# the IPv6 documentation range; `client(n, host)` is address `host` in its
# n-th /64 (the service counts an IPv6 client by its /64).
CLIENT_PREFIX = "2001:db8:%x:" % secrets.randbits(16)


def client(n, host=1):
    return "%s%x::%x" % (CLIENT_PREFIX, n, host)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# --- Tokens ------------------------------------------------------------------
# HS256 tokens made by hand, good and bad (the Rust tests' are in tests/support).

HS256_HEADER = {"alg": "HS256", "typ": "JWT"}


def b64url(data):
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def segment(value):
    """A JSON value as a token segment (compact JSON, base64url)."""
    return b64url(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def jwt(key, claims, header=None):
    """`header.claims.signature`, HMAC-SHA256-signed with `key` (bytes);
    `header` defaults to {"alg":"HS256","typ":"JWT"}."""
    signing_input = segment(HS256_HEADER if header is None else header) + "." + segment(claims)
    return signing_input + "." + b64url(hmac.new(key, signing_input.encode("ascii"),
                                                 hashlib.sha256).digest())


def forge(secret, now):
    """The tokens tests/hurl/wrapped/auth_forged.hurl needs, by hurl variable
    name: one good token with a fractional `exp` (a NumericDate may carry one,
    RFC 7519 section 2), one signed with another key and one expired (every
    other token to refuse is tests/core/tokens.rs's)."""
    key = secret.encode("utf-8")
    return {"future_fraction_token": jwt(key, {"exp": now + 600.5}),
            "wrong_key_token": jwt(b"not-the-secret-" + key[::-1], {"exp": now + 600}),
            "expired_token": jwt(key, {"exp": now - 120})}


# --- Results -----------------------------------------------------------------


class Tally:
    """Named checks: each `check` is one test."""

    def __init__(self, label, store):
        self.label, self.store = label, store
        self.passed = self.failed = 0
        self.failures = []
        self.prefix = ""  # the module name, set by run.py

    def check(self, ok, name, detail=""):
        name = self.prefix + name
        if ok:
            self.passed += 1
            print(f"{self.label} {self.store}: PASS {name}", flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            extra = f" -- {detail}" if detail else ""
            print(f"{self.label} {self.store}: FAIL {name}{extra}", file=sys.stderr, flush=True)
        return ok

    def note(self, text):
        """A figure worth recording (not a test)."""
        print(f"{self.label} {self.store}: NOTE {self.prefix}{text}", flush=True)

    def finish(self):
        print(f"{self.label} {self.store}: {self.passed} passed, {self.failed} failed", flush=True)
        tally_file = os.environ.get("E2E_TALLY")
        if tally_file:
            with open(tally_file, "a", encoding="utf-8") as out:
                out.write(f"{self.passed} {self.failed}\n")
        return 0 if self.failed == 0 else 1


# --- HTTP --------------------------------------------------------------------


class Response:
    """An answer; `headers` by lower-case name."""

    def __init__(self, status, headers, raw, elapsed):
        self.status, self.headers, self.raw, self.elapsed = status, headers, raw, elapsed
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    @property
    def data(self):
        return self.json.get("data") if isinstance(self.json, dict) else None

    def is_envelope(self, status=None, message=None):
        j = self.json
        return (isinstance(j, dict) and set(j) == {"status", "message", "data"}
                and j["status"] == self.status and status in (None, self.status)
                and message in (None, j["message"]))

    def __repr__(self):
        return f"<{self.status} {self.raw[:200]!r} in {self.elapsed:.3f}s>"


def request(port, method, path, body=None, token=None, headers=None, timeout=30, raw=None):
    """One request on a fresh connection. `body` is JSON-encoded; `raw` is sent
    as is. Raises OSError / http.client errors on connection problems."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            h.setdefault("Content-Type", "application/json")
        if token is not None:
            h["Authorization"] = token
        started = time.monotonic()
        try:
            conn.request(method, path, body=data, headers=h)
        except (BrokenPipeError, ConnectionResetError):
            # A host may answer (413) and close before the whole body is
            # sent: its answer is still there to read.
            pass
        resp = conn.getresponse()
        content = resp.read()
        headers = {name.lower(): value for name, value in resp.getheaders()}
        return Response(resp.status, headers, content, time.monotonic() - started)
    finally:
        conn.close()


def counts(values):
    """{value: how many times}, sorted by value."""
    return dict(sorted(Counter(values).items()))


def status_of(raw):
    """The status of a raw HTTP answer (bytes); 0 if it is none."""
    try:
        return int(raw.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def read_answer(sock, timeout):
    """A raw HTTP answer: read until the server closes or a whole
    Content-Length body is in."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except OSError:  # a timeout or a reset
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and len(body) >= int(value):
                    return data
    return data


def sqlite_integrity(db):
    """`PRAGMA integrity_check` of a SQLite file, read-only: [("ok",)] when sound."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
            return con.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.Error as e:
        return [(repr(e),)]


def parallel(fn, items, workers):
    """Runs fn(item) for every item, `workers` at a time, all released at once."""
    start = threading.Event()

    def wrapped(item):
        start.wait(10)
        return fn(item)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(wrapped, item) for item in items]
        start.set()
        return [f.result() for f in futures]


def try_request(*args, **kwargs):
    """Like request, but a connection problem becomes a Response with status 0."""
    started = time.monotonic()
    try:
        return request(*args, **kwargs)
    except (OSError, http.client.HTTPException) as e:
        return Response(0, {}, repr(e).encode(), time.monotonic() - started)


# --- The host ----------------------------------------------------------------


class Host(launch.Host):
    """launch.Host on the context's host and store, with a random secret and
    credentials of its own. TRUSTED_PROXY_HOPS=1: a test making wrong logins
    names its own `client(n)`, never blocking 127.0.0.1 on a shared database."""

    def __init__(self, ctx, state_dir=None, secret=True, username=None, password=None, db_url=None,
                 kind=None):
        pg_url = (db_url or ctx.pg.url) if ctx.store == "postgres" else None
        super().__init__(kind or ctx.host_kind, ctx.store, pg_url=pg_url, wasm=ctx.wasm,
                         manifest=ctx.manifest, reuse=ctx.reuse if (kind or ctx.host_kind) != "spin" else 1,
                         state_dir=state_dir, workdir=ctx.tmp)
        self.secret = random_text(48) if secret is True else (secret or None)
        self.username = username or "faults-" + random_text(8).lower()
        self.password = password or "Faults." + random_text(16)
        ctx.hosts.append(self)  # killed when its test module ends

    def settings(self):
        settings = super().settings()
        settings.update(TRUSTED_PROXY_HOPS="1", AUTH_USERNAME=self.username,
                        AUTH_PASSWORD=self.password)
        if self.secret:
            settings["SECRET_TOKEN"] = self.secret
        return settings

    def rss_kib(self):
        try:
            for line in open(f"/proc/{self.proc.pid}/status", encoding="ascii"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return None

    def login(self, password=None, **kwargs):
        """POST /token as this host's user, with its password unless given."""
        body = {"username": self.username, "password": self.password if password is None else password}
        return try_request(self.port, "POST", "/token", body=body, **kwargs)

    def token(self):
        r = self.login()
        if r.status != 200:
            raise RuntimeError(f"login failed: {r!r}")
        return r.data["token"]

    def call(self, method, path, body=None, token=None, **kwargs):
        return request(self.port, method, path, body=body, token=token, **kwargs)

    def serves(self, token):
        """Up, and GET /books answers 200."""
        return self.alive() and try_request(self.port, "GET", "/books", token=token).status == 200


# --- Context and main --------------------------------------------------------


class Context:
    """One run: the host and store under test, the tally, and what to stop."""

    def __init__(self, args, label="faults"):
        self.store, self.full = args.store, args.scale == "full"
        self.host_kind, self.wasm, self.manifest, self.reuse = args.host, args.wasm, args.manifest, args.reuse
        self.tally = Tally(label + (" (spin up)" if args.host == "spin" else ""), self.store)
        self.tmp = tempfile.mkdtemp(prefix=f"book-faults-{self.store}.")
        self.hosts = []
        self.pg = None
        self.extra_clusters = []  # clusters a test started for itself

    def host(self, **kwargs):
        return Host(self, **kwargs)

    def only_on(self, store, reason):
        """Whether this run is on `store`; when not, a note says why the module
        does nothing here."""
        if self.store != store:
            self.tally.note(f"{store} only ({reason}); skipped")
        return self.store == store

    def fresh_database(self):
        """PostgreSQL: a new empty database; SQLite: None (a state dir is fresh)."""
        return self.pg.fresh_database() if self.store == "postgres" else None

    def cleanup(self, failed=False):
        for h in self.hosts:
            h.kill()
        self.hosts = []
        for cluster in self.extra_clusters:
            cluster.close()
        self.extra_clusters = []
        if self.pg is not None:
            self.pg.close()
            self.pg = None
        if self.tmp and os.path.isdir(self.tmp):
            if os.environ.get("FAULTS_KEEP") == "1" or (failed and os.environ.get("FAULTS_KEEP_ON_FAILURE") == "1"):
                log(f"{self.tally.label} {self.store}: kept {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def parse_args(description, argv=None, more=None):
    """The options every runner takes; `more(parser)` adds a runner's own."""
    p = argparse.ArgumentParser(description=description)
    launch.add_host_options(p, host_default="spin-lite")
    p.add_argument("--scale", choices=["quick", "full"],
                   default=os.environ.get("FAULTS_SCALE", "quick") or "quick")
    if more:
        more(p)
    return p.parse_args(argv)


def require_spin():
    launch.host_command("spin")


def run_modules(args, modules, label):
    """Runs each (name, run) of `modules`, every check one test; prints
    `LABEL STORE: N passed, M failed`; exits 0 only when nothing failed."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _: sys.exit(128 + received))
    ctx = Context(args, label=label)
    atexit.register(ctx.cleanup)
    try:
        launch.host_command(ctx.host_kind)
        if not (ctx.wasm or ctx.manifest or WASM.exists()):
            raise RuntimeError(f"{WASM} not found "
                               "(cargo build --release --locked --target wasm32-wasip2 -p book-catalog)")
        if ctx.store == "postgres":  # Pg.close leaves FAULTS_PG_DIR's cluster running
            ctx.pg = Pg(os.environ.get("FAULTS_PG_DIR") or None)
    except Exception as e:  # noqa: BLE001
        ctx.tally.check(False, "setup", repr(e))
        sys.exit(ctx.tally.finish())
    for name, fn in modules:
        before = (ctx.tally.passed, ctx.tally.failed)
        started = time.monotonic()
        ctx.tally.prefix = f"{name}: " if len(modules) > 1 else ""
        try:
            fn(ctx)
        except Exception as e:  # noqa: BLE001 - a crash of a test module is one failed test
            traceback.print_exc()
            ctx.tally.check(False, f"{name}: ran to the end", repr(e))
        finally:
            for h in ctx.hosts:
                if h.alive() and ctx.tally.failures:
                    log(f"{name}: host log tail ({h.log_path}):\n{h.tail(15)}")
                h.kill()
            ctx.hosts = []
        ctx.tally.prefix = ""
        if len(modules) > 1:
            log(f"{ctx.tally.label} {ctx.store}: {name}: {ctx.tally.passed - before[0]} passed, "
                f"{ctx.tally.failed - before[1]} failed in {time.monotonic() - started:.0f}s")
    code = ctx.tally.finish()
    ctx.cleanup(failed=code != 0)
    sys.exit(code)


def main(name, fn):
    """A module run alone: its lines carry its name, not run.py's "faults"."""
    run_modules(parse_args(name), [(name, fn)], name.replace("_", " "))
