"""Shared plumbing of the fault tests, scripts/fuzz.sh, tests/e2e.py and
tests/hurl/run.py: the HS256 forger, the tally, requests, small servers and a
test's host. What a test starts is stopped on exit, also on a signal. A test
module defines `run(ctx)` and ends with `lib.main("name", run)`."""

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
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import launch  # noqa: E402  (the one host launcher)
from launch import ROOT, Pg, free_port, psql, random_text, wait_until  # noqa: E402, F401

WASM = ROOT / "target/wasm32-wasip2/release/book_catalog.wasm"
ERROR = (500, "Internal server error")
# Headless Chromium as root on a machine with no network but loopback.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
UNAVAILABLE = (503, "Service unavailable")

# Wrong logins come from this run's own /48 of the IPv6 documentation range:
# `client(n, host)` is address `host` of its n-th /64 (the service counts a /64).
CLIENT_PREFIX = "2001:db8:%x:" % secrets.randbits(16)


def client(n, host=1):
    return "%s%x::%x" % (CLIENT_PREFIX, n, host)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwt(key, claims, header=None):
    """An HS256 token made by hand (the Rust tests' are in tests/core), signed with `key` (bytes)."""
    signing_input = ".".join(b64url(json.dumps(part, separators=(",", ":")).encode("utf-8"))
                             for part in ({"alg": "HS256", "typ": "JWT"} if header is None else header, claims))
    return signing_input + "." + b64url(hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest())


def forge(secret, now):
    """tests/hurl/wrapped/auth_forged.hurl's tokens: a good one with a fractional
    `exp` (RFC 7519 allows it), another key's, an expired one."""
    key = secret.encode("utf-8")
    return {"future_fraction_token": jwt(key, {"exp": now + 600.5}),
            "wrong_key_token": jwt(b"not-the-secret-" + key[::-1], {"exp": now + 600}),
            "expired_token": jwt(key, {"exp": now - 120})}


class Tally:
    """Named checks: each `check` is one test; a `note` is a figure, not a test."""

    def __init__(self, label, store):
        self.label, self.store = label, store
        self.passed = self.failed = 0
        self.failures = []
        self.prefix = ""  # the module name, set by run_modules

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
        print(f"{self.label} {self.store}: NOTE {self.prefix}{text}", flush=True)

    def finish(self):
        print(f"{self.label} {self.store}: {self.passed} passed, {self.failed} failed", flush=True)
        if os.environ.get("E2E_TALLY"):
            with open(os.environ["E2E_TALLY"], "a", encoding="utf-8") as out:
                out.write(f"{self.passed} {self.failed}\n")
        return 0 if self.failed == 0 else 1


class Response:
    """An answer; `headers` by lower-case name; status 0: no answer (`raw` says why)."""

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
    """One request on a fresh connection, `body` as JSON, `raw` as is; a
    connection problem is a Response with status 0."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h, data, started = dict(headers or {}), raw, time.monotonic()
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        h.setdefault("Content-Type", "application/json")
    if token is not None:
        h["Authorization"] = token
    try:
        try:
            conn.request(method, path, body=data, headers=h)
        except (BrokenPipeError, ConnectionResetError):
            if conn.sock is None:  # closed before any answer (a host killed mid-request)
                raise
            # else answered (413) and closed before the whole body was sent: still readable
        resp = conn.getresponse()
        content = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, content,
                        time.monotonic() - started)
    except (OSError, http.client.HTTPException) as e:
        return Response(0, {}, repr(e).encode(), time.monotonic() - started)
    finally:
        conn.close()


def head(method, path, headers, end=True):
    """A raw HTTP/1.1 request head (without its blank line unless `end`)."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}" + "\r\n" * end).encode()


def sent(port, data, timeout=10):
    """A connection that sent `data` (a request, or a part of one) and has read nothing."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    return s


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
    """A raw HTTP answer: read until the server closes or a whole Content-Length body is in."""
    sock.settimeout(timeout)
    data, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except OSError:  # a timeout or a reset
            break
        if not chunk:
            break
        data += chunk
        head_, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            for line in head_.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and len(body) >= int(value):
                    return data
    return data


def parallel(fn, items, workers):
    """fn(item) for every item, `workers` at a time, all released at once."""
    start = threading.Event()

    def wrapped(item):
        start.wait(10)
        return fn(item)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(wrapped, item) for item in items]
        start.set()
        return [f.result() for f in futures]


def http_server(handle, address="127.0.0.1", port=0):
    """A quiet HTTP server in a thread of its own; `handle(request)` answers each GET and POST."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            handle(self)
        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def reply(handler, status, body=b"", content_type="application/json"):
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def account(username, role, password, terminal=False):
    """An `accounts` entry as a user makes one: scripts/account.sh (Debian's
    argon2), the password piped, or typed at a terminal (a pseudo-terminal)."""
    command = [str(ROOT / "scripts/account.sh"), username, role]
    if not terminal:
        return json.loads(subprocess.run(command, input=password, capture_output=True, text=True,
                                         timeout=60, check=True).stdout)
    screen, typing = os.openpty()
    with os.fdopen(screen, "r+b", buffering=0) as tty, subprocess.Popen(
            command, stdin=typing, stdout=subprocess.PIPE, stderr=typing, start_new_session=True) as made:
        os.close(typing)  # the script's alone: its end ends the reads (EIO)
        shown = b""
        while b":" not in shown:  # its prompt; then the password, not echoed
            shown += tty.read(100)
        tty.write(password.encode() + b"\n")
        out = made.communicate(timeout=60)[0]
    if made.returncode:
        raise subprocess.CalledProcessError(made.returncode, command, out)
    return json.loads(out)


def old_schema(store, upto):
    """SQL that makes a database as the release at migration `upto` left it:
    its files, each recorded in schema_migrations."""
    files = sorted((ROOT / "migrations" / store).glob("*.sql"))[:upto]
    return "CREATE TABLE schema_migrations (version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL);" + "".join(
        f"{f.read_text()};INSERT INTO schema_migrations VALUES ({int(f.name[:4])}, '{f.stem}');" for f in files)


def use_venv():
    """build/venv's packages (scripts/ensure-tools.sh installs them) importable here."""
    v = sys.version_info
    sys.path.insert(0, str(ROOT / f"build/venv/lib/python{v.major}.{v.minor}/site-packages"))


class Host(launch.Host):
    """launch.Host on the context's host and store, with a random secret and
    credentials of its own. TRUSTED_PROXY_HOPS=1: a test making wrong logins
    names its own `client(n)`, never blocking 127.0.0.1 on a shared database."""

    def __init__(self, ctx, state_dir=None, secret=True, username=None, password=None, db_url=None,
                 kind=None):
        kind = kind or ctx.host_kind
        super().__init__(kind, ctx.store, pg_url=(db_url or ctx.pg.url) if ctx.store == "postgres" else None,
                         wasm=ctx.wasm, manifest=ctx.manifest,
                         state_dir=state_dir, workdir=ctx.tmp)
        self.secret = random_text(48) if secret is True else (secret or None)
        self.username = username or "faults-" + random_text(8).lower()
        self.password = password or "Faults." + random_text(16)
        ctx.hosts.append(self)  # killed when its test module ends

    def settings(self):
        settings = dict(super().settings(), TRUSTED_PROXY_HOPS="1", AUTH_USERNAME=self.username,
                        AUTH_PASSWORD=self.password)
        if self.secret:
            settings["SECRET_TOKEN"] = self.secret
        return settings

    def rows(self, sql):
        """`sql`'s rows, read from this host's store directly (values as text)."""
        if self.store == "postgres":
            out = psql(self.pg_url, sql)
            return [tuple(line.split("|")) for line in out.splitlines()] if out else []
        with closing(sqlite3.connect(f"file:{self.state_dir / 'sqlite_db.db'}?mode=ro", uri=True,
                                     timeout=5)) as con:
            return [tuple(str(v) for v in row) for row in con.execute(sql)]

    def integrity(self):
        """SQLite's `PRAGMA integrity_check` of this host's database: [("ok",)] when sound."""
        try:
            return self.rows("PRAGMA integrity_check")
        except sqlite3.Error as e:
            return [(repr(e),)]

    def rss_kib(self):
        return launch.status_kib([self.proc.pid]) or None

    def login(self, password=None, **kwargs):
        """POST /token as this host's user, with its password unless given."""
        body = {"username": self.username, "password": self.password if password is None else password}
        return request(self.port, "POST", "/token", body=body, **kwargs)

    def token(self):
        r = self.login()
        if r.status != 200:
            raise RuntimeError(f"login failed: {r!r}")
        return r.data["token"]

    def call(self, method, path, body=None, token=None, **kwargs):
        return request(self.port, method, path, body=body, token=token, **kwargs)

    def seed(self, token, books):
        """POSTs each book: {id: book} of those answered 201."""
        made = {}
        for book in books:
            r = self.call("POST", "/book", book, token)
            if r.status == 201:
                made[r.data["id"]] = book
        return made

    def serves(self, token):
        """Up, and GET /books answers 200."""
        return self.alive() and self.call("GET", "/books", token=token).status == 200


class Context:
    """One run: the host and store under test, the tally, and what to stop."""

    def __init__(self, args, label="faults"):
        self.store, self.full = args.store, args.scale == "full"
        self.host_kind, self.wasm, self.manifest = args.host, args.wasm, args.manifest
        # The WASI 0.2 build (a fresh instance per request), by its manifest or file name.
        self.wasi_p2 = "wasi-p2" in str(args.manifest or "") or str(args.wasm or "").endswith("-p2.wasm")
        self.tally = Tally(label + (" (spin up)" if args.host == "spin" else ""), self.store)
        self.tmp = tempfile.mkdtemp(prefix=f"book-faults-{self.store}.")
        self.hosts, self.pg, self.extra_clusters = [], None, []

    def host(self, **kwargs):
        return Host(self, **kwargs)

    def replicas(self, n, host_class=Host, **kwargs):
        """`n` hosts started on one fresh database, with one secret and one user."""
        first = host_class(self, db_url=self.fresh_database(), **kwargs).start()
        return [first] + [host_class(self, secret=first.secret, username=first.username,
                                     password=first.password, db_url=first.pg_url, **kwargs).start()
                          for _ in range(n - 1)]

    def cluster(self, tls=False):
        """A PostgreSQL cluster of the test's own, removed at the end."""
        self.extra_clusters.append(Pg(tls=tls))
        return self.extra_clusters[-1]

    def only_on(self, store, reason):
        """Whether this run is on `store`; when not, a note says why the module does nothing."""
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
        for cluster in self.extra_clusters + [self.pg] * (self.pg is not None):
            cluster.close()
        self.extra_clusters, self.pg = [], None
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
        before, started = (ctx.tally.passed, ctx.tally.failed), time.monotonic()
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
