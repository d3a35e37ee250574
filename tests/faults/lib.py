"""Shared plumbing for the fault tests (tests/faults/*.py), scripts/fuzz.sh
and tests/hurl/forge_tokens.py (the one HS256 token forger in Python).

Standard library only. Everything talks to 127.0.0.1 only, every loop is
bounded, and everything a test starts (hosts, a PostgreSQL cluster) is
stopped on exit, also on failure or on SIGINT/SIGTERM.

A test module defines `run(ctx)` and ends with `lib.main("name", run)`; the
runner tests/faults/run.py calls several `run(ctx)` with one context.
"""

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
import string
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
HOST_BIN = Path(os.environ.get("FAULTS_HOST_BIN", ROOT / "target/release/book-host"))
# Real Spin, for `--host spin`: $SPIN, else `spin` on PATH.
SPIN_BIN = os.environ.get("SPIN") or shutil.which("spin")
MANIFEST = ROOT / "spin.toml"


def component_settings(manifest=MANIFEST, component="book-catalog"):
    """The component's settings by their plain environment names: the
    variables the manifest passes to it, upper-cased (tests/deploy.rs checks
    them against the settings of src/settings.rs, and tests/core_login.rs
    that each environment name is its variable's name upper-cased)."""
    with open(manifest, "rb") as f:
        variables = tomllib.load(f)["component"][component]["variables"]
    return tuple(name.upper() for name in variables)


# Under Spin they are set as a Spin user sets them, SPIN_VARIABLE_<NAME>.
SETTINGS = component_settings()
WASM = ROOT / "target/wasm32-wasip2/release/book_catalog.wasm"
PG_CLUSTER = ROOT / "scripts/pg-cluster.sh"

ENVELOPE_KEYS = {"status", "message", "data"}

# The settings every Host sets itself (Host.env); all the others are the
# login protection settings: a host gets their defaults unless a test says
# otherwise (the caller's environment is not passed on).
HOST_SETTINGS = ("SECRET_TOKEN", "DB_URL", "AUTH_USERNAME", "AUTH_PASSWORD")
assert set(HOST_SETTINGS) <= set(SETTINGS), f"{MANIFEST}: {SETTINGS}"
LOGIN_SETTINGS = tuple(name for name in SETTINGS if name not in HOST_SETTINGS)
# Client addresses for tests that make wrong logins: this run's own /48 in
# the IPv6 documentation range; `client(n)` is an address in the n-th /64 of
# it (the service counts an IPv6 client by its /64).
CLIENT_PREFIX = "2001:db8:%x:" % secrets.randbits(16)


def client(n, host=1):
    """Address `host` of this run's n-th /64."""
    return "%s%x::%x" % (CLIENT_PREFIX, n, host)


def random_text(n):
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# --- Tokens ------------------------------------------------------------------
# HS256 tokens made by hand, good and bad (attacks.py, side_by_side.py,
# tests/hurl/forge_tokens.py); the Rust tests have their own in
# tests/support/mod.rs.

HS256_HEADER = {"alg": "HS256", "typ": "JWT"}


def b64url(data):
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def segment(value):
    """A JSON value as a token segment (compact JSON, base64url)."""
    return b64url(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def segment_raw(text):
    """Any text as a token segment, as it is (`{"exp":1e300}`, not JSON...)."""
    return b64url(text.encode("utf-8"))


def sign(key, signing_input, digest=hashlib.sha256):
    """The base64url HMAC of `header.claims` (HMAC-SHA256 unless `digest`)."""
    return b64url(hmac.new(key, signing_input.encode("ascii"), digest).digest())


def jwt(key, claims, header=None, digest=hashlib.sha256, raw_claims=None):
    """`header.claims.signature`, signed with `key` (bytes, empty allowed).
    `header` defaults to {"alg":"HS256","typ":"JWT"}; `raw_claims`, when
    given, is the claims segment's text instead of `claims` as JSON."""
    claims_segment = segment_raw(raw_claims) if raw_claims is not None else segment(claims)
    signing_input = segment(HS256_HEADER if header is None else header) + "." + claims_segment
    return signing_input + "." + sign(key, signing_input, digest)


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
    def message(self):
        return self.json.get("message") if isinstance(self.json, dict) else None

    @property
    def data(self):
        return self.json.get("data") if isinstance(self.json, dict) else None

    def is_envelope(self, status=None, message=None):
        j = self.json
        if not (isinstance(j, dict) and set(j) == ENVELOPE_KEYS and j["status"] == self.status):
            return False
        if status is not None and self.status != status:
            return False
        if message is not None and j["message"] != message:
            return False
        return True

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
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        content = resp.read()
        headers = {name.lower(): value for name, value in resp.getheaders()}
        return Response(resp.status, headers, content, time.monotonic() - started)
    finally:
        conn.close()


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


# --- PostgreSQL --------------------------------------------------------------


def psql(url, sql):
    """Runs `sql` against the database at `url` (the newest psql installed);
    its output, one row a line, fields separated by `|`."""
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: [
        int(x) if x.isdigit() else x for x in p.parent.name.split(".")])[-1]
    out = subprocess.run([str(bindir / "psql"), url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                          "-c", sql], check=True, timeout=60, capture_output=True, text=True)
    return out.stdout.strip()


class Pg:
    """A pg-cluster.sh cluster: the one named by FAULTS_PG_DIR (left running),
    or our own (removed on exit)."""

    def __init__(self, directory=None, tls=False):
        self.own = directory is None
        if self.own:
            directory = tempfile.mkdtemp(prefix="book-faults-pg.")
            out = subprocess.run([str(PG_CLUSTER), "start", directory] + (["--tls"] if tls else []),
                                 check=True, capture_output=True, text=True, timeout=120)
            self.url = out.stdout.strip().splitlines()[-1]
        else:
            d = Path(directory)
            password = (d / "pwfile").read_text().strip()
            port = (d / "port").read_text().strip()
            self.url = f"postgres://postgres:{password}@127.0.0.1:{port}/books?sslmode=disable"
        self.dir = directory
        u = urlsplit(self.url)
        self.host_port = f"{u.hostname}:{u.port or 5432}"

    def fresh_database(self):
        """Creates an empty database in the cluster; returns its URL."""
        name = "faults_" + random_text(10).lower()
        psql(self.url, f"CREATE DATABASE {name}")
        u = urlsplit(self.url)
        return u._replace(path="/" + name).geturl()

    def pause(self):
        subprocess.run([str(PG_CLUSTER), "pause", self.dir], check=True, timeout=60)

    def resume(self):
        subprocess.run([str(PG_CLUSTER), "resume", self.dir], check=True, timeout=60)

    def close(self):
        if self.own and self.dir:
            subprocess.run([str(PG_CLUSTER), "stop", self.dir], timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.dir = None


# --- The host ----------------------------------------------------------------


class Host:
    """The component served on a free loopback port, with its own state
    directory: by `book-host`, or by real Spin (`spin up`) when the context
    says so (`--host spin`)."""

    def __init__(self, ctx, state_dir=None, secret=True, username=None, password=None, db_url=None,
                 spin=None):
        self.ctx = ctx
        # Served by real Spin (or book-host): the context's choice unless given.
        self.spin = ctx.spin if spin is None else spin
        self.db_url = db_url  # PostgreSQL: another database of the cluster
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="state.", dir=ctx.tmp))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.secret = random_text(48) if secret is True else (secret or None)
        self.username = username or "faults-" + random_text(8).lower()
        self.password = password or "Faults." + random_text(16)
        self.proc = None
        self.port = None
        self.log_path = None
        # More command-line arguments for book-host or `spin up`.
        self.args = []

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SPIN_VARIABLE_")
               and k not in HOST_SETTINGS
               and k not in LOGIN_SETTINGS}
        # Logins from the tests themselves come from 127.0.0.1 and always
        # succeed; a test that makes wrong logins names its own client in
        # X-Forwarded-For (`client(n)`), as the one proxy in front would, so
        # it never blocks the others' logins, also on a PostgreSQL database
        # shared by several hosts.
        env["TRUSTED_PROXY_HOPS"] = "1"
        if self.secret:
            env["SECRET_TOKEN"] = self.secret
        env["AUTH_USERNAME"] = self.username
        env["AUTH_PASSWORD"] = self.password
        if self.ctx.store == "postgres":
            url = self.db_url or self.ctx.pg.url
            u = urlsplit(url)
            env["DB_URL"] = url
            env["SPIN_VARIABLE_DB_HOST"] = f"{u.hostname}:{u.port or 5432}"
            # A query without rows hangs real Spin 4.0.0-4.0.2: the host fails
            # it instead, so a statement that can return zero rows fails here.
            env["BOOK_HOST_PG_EMPTY_QUERY_ERROR"] = "1"
        return env

    def command(self):
        listen = ["--listen", f"127.0.0.1:{self.port}", "--state-dir", str(self.state_dir)]
        if self.spin:
            return [SPIN_BIN, "up", "--from", str(MANIFEST), *listen, *self.args]
        return [str(HOST_BIN), "--from", str(MANIFEST), *listen, *self.args]

    def process_env(self):
        env = self.env()
        if self.spin:
            # Settings as a Spin user sets them; the zero-row check is ours.
            for name in SETTINGS:
                if name in env:
                    env["SPIN_VARIABLE_" + name] = env.pop(name)
            env.pop("BOOK_HOST_PG_EMPTY_QUERY_ERROR", None)
        return env

    def start(self, timeout=60):
        self.port = free_port()
        self.ctx.host_count += 1
        self.log_path = Path(self.ctx.tmp) / f"host-{self.ctx.host_count}.log"
        logfile = open(self.log_path, "ab")
        # Its own process group: `spin up` serves from a child process.
        self.proc = subprocess.Popen(
            self.command(), cwd=self.ctx.tmp, env=self.process_env(), stdout=logfile,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        logfile.close()
        self.ctx.hosts.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"host exited with {self.proc.returncode} before listening; "
                                   f"log: {self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"host did not listen within {timeout}s; log: {self.tail()}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after `timeout`; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.kill_group()
        return self.proc.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.kill_group()

    def kill_group(self):
        """Whatever the host started (Spin's trigger process) goes too."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def rss_kib(self):
        try:
            for line in open(f"/proc/{self.proc.pid}/status", encoding="ascii"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return None

    def tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def token(self):
        r = request(self.port, "POST", "/token", {"username": self.username, "password": self.password})
        if r.status != 200:
            raise RuntimeError(f"login failed: {r!r}")
        return r.data["token"]

    def call(self, method, path, body=None, token=None, **kwargs):
        return request(self.port, method, path, body=body, token=token, **kwargs)


# --- Context and main --------------------------------------------------------


class Context:
    def __init__(self, store, scale, label="faults", pg=None, host="book-host"):
        self.store, self.scale, self.full = store, scale, scale == "full"
        self.spin = host == "spin"
        self.tally = Tally(label if not self.spin else label + " (spin up)", store)
        self.tmp = tempfile.mkdtemp(prefix=f"book-faults-{store}.")
        self.hosts = []
        self.host_count = 0
        self.pg = pg
        self._own_pg = False
        self.extra_clusters = []  # clusters a test started for itself

    def setup_pg(self):
        if self.store == "postgres" and self.pg is None:
            self.pg = Pg(os.environ.get("FAULTS_PG_DIR") or None)
            self._own_pg = True

    def host(self, **kwargs):
        return Host(self, **kwargs)

    def cleanup(self, failed=False):
        for h in self.hosts:
            h.kill()
        self.hosts = []
        for cluster in self.extra_clusters:
            cluster.close()
        self.extra_clusters = []
        if self.pg is not None and self._own_pg:
            self.pg.close()
            self.pg = None
        if self.tmp and os.path.isdir(self.tmp):
            if os.environ.get("FAULTS_KEEP") == "1" or (failed and os.environ.get("FAULTS_KEEP_ON_FAILURE") == "1"):
                log(f"{self.tally.label} {self.store}: kept {self.tmp}")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def parse_args(description, argv=None):
    p = argparse.ArgumentParser(description=description)
    add_arguments(p)
    return p.parse_args(argv)


def add_arguments(p):
    p.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--scale", choices=["quick", "full"],
                   default=os.environ.get("FAULTS_SCALE", "quick") or "quick")
    p.add_argument("--host", choices=["book-host", "spin"], default="book-host",
                   help="serve with book-host, or with real Spin ($SPIN, else spin on PATH)")


def preconditions(ctx):
    for path, hint in ((HOST_BIN, "cargo build --release --locked -p book-host"),
                       (WASM, "cargo build --release --locked --target wasm32-wasip2 -p book-catalog")):
        if not path.exists():
            raise RuntimeError(f"{path} not found ({hint})")
    if ctx.spin:
        require_spin()


def require_spin():
    if not (SPIN_BIN and os.access(SPIN_BIN, os.X_OK)):
        raise RuntimeError("no Spin binary (set SPIN=path, or put spin on PATH)")


def install_signal_handlers():
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_guarded(ctx, name, fn):
    """Runs one test module; an exception counts as one failed test."""
    try:
        fn(ctx)
    except Exception as e:  # noqa: BLE001 - any crash of a test is a failure
        import traceback
        traceback.print_exc()
        ctx.tally.check(False, f"{name}: ran to the end", repr(e))
    finally:
        for h in ctx.hosts:
            if h.alive():
                log(f"{name}: host log tail ({h.log_path}):\n{h.tail(15)}") if ctx.tally.failures else None
            h.kill()
        ctx.hosts = []


def main(name, fn, description=""):
    args = parse_args(description or name)
    install_signal_handlers()
    # Run alone, a module's lines carry its own name ("side by side sqlite:
    # ..."), not run.py's "faults".
    ctx = Context(args.store, args.scale, label=name.replace("_", " "), host=args.host)
    atexit.register(ctx.cleanup)
    try:
        preconditions(ctx)
        ctx.setup_pg()
    except Exception as e:  # noqa: BLE001
        ctx.tally.check(False, f"{name}: setup", repr(e))
        sys.exit(ctx.tally.finish())
    run_guarded(ctx, name, fn)
    code = ctx.tally.finish()
    ctx.cleanup(failed=code != 0)
    sys.exit(code)
