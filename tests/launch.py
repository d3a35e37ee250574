#!/usr/bin/env python3
"""The one way the tests and the benchmark serve the component.

    tests/launch.py --host spin-lite|spin [--store sqlite|postgres] [--pg-url URL]
                    [--wasm FILE] [--manifest FILE] [--port N]
                    [--state-dir DIR] [--env NAME=VALUE]... -- COMMAND...

Serves the component on 127.0.0.1 (spin-lite: $SPIN_LITE or target/release;
spin: $SPIN, build/spin/spin or PATH) until `GET /health` answers 200, runs
COMMAND with BASE_URL, SECRET_TOKEN (--env's, else random), HOST_PID and
STATE_DIR, then SIGTERMs the host; exits with COMMAND's status. SECRET_TOKEN,
DB_URL, DB_HOST reach it as SPIN_VARIABLE_* (the caller's own dropped), other
--env as `-e`. --store postgres without --pg-url: a throwaway cluster. On
spin-lite a PostgreSQL query returning no rows fails (it hangs Spin 4.0.2).
"""

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "spin.toml"
SPIN_LITE = Path(os.environ.get("SPIN_LITE") or ROOT / "target/release/spin-lite")
PG_CLUSTER = ROOT / "scripts/pg-cluster.sh"
SPIN_VARIABLES = ("SECRET_TOKEN", "DB_URL", "DB_HOST")  # the rest is the component's `-e`
HOSTS = ("spin-lite", "spin")


def spin_binary():
    for candidate in (os.environ.get("SPIN"), ROOT / "build/spin/spin", shutil.which("spin")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def host_command(kind):
    if kind == "spin":
        if not spin_binary():
            raise RuntimeError("no Spin binary (set SPIN=path, put spin on PATH, "
                               "or unpack it to build/spin/spin)")
        return [spin_binary(), "up"]
    if not SPIN_LITE.exists():
        raise RuntimeError(f"{SPIN_LITE} not found (make host)")
    return [str(SPIN_LITE)]


def add_host_options(p, host_default=None):
    """The options launch.py and every test runner share."""
    p.add_argument("--host", choices=HOSTS, default=host_default, required=host_default is None)
    p.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--wasm", help="serve this component instead of the manifest's")
    p.add_argument("--manifest", help="serve this manifest instead of spin.toml")


def random_text(n):
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(ok, seconds, step=0.2):
    """Polls `ok()` until it is true: the seconds it took, or None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if ok():
            return time.monotonic() - started
        time.sleep(step)
    return None


def process_tree(pid):
    """`pid` and every process under it (`spin up` serves from a child)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(entry))
        except OSError:
            pass
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    return tree


def status_kib(pids, field="VmRSS"):
    """The sum of a /proc/PID/status field (VmRSS, VmHWM) over `pids`, KiB."""
    total = 0
    for pid in pids:
        try:
            total += next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith(field + ":"))
        except (OSError, StopIteration):
            pass
    return total


def psql(url, sql):
    """`sql` run by the newest psql installed: its rows, one a line, fields split by `|`."""
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: [
        int(x) if x.isdigit() else x for x in p.parent.name.split(".")])[-1]
    out = subprocess.run([str(bindir / "psql"), url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                          "-c", sql], check=True, timeout=60, capture_output=True, text=True)
    return out.stdout.strip()


class BookStore:
    """Puts books straight into a host's database (much faster than the API,
    and out of what the benchmark measures), once the component has created
    its tables (it migrates on first use); runs a statement there."""

    def __init__(self, pg_url, state_dir):
        self.pg_url = pg_url
        self.sqlite = None if pg_url else sqlite3.connect(Path(state_dir) / "sqlite_db.db", timeout=30,
                                                          isolation_level=None)

    def sql(self, statement):
        """The first column of the first row, as text."""
        if self.sqlite:
            row = self.sqlite.execute(statement).fetchone()
            return str(row[0]) if row else ""
        return psql(self.pg_url, statement)

    def max_id(self):
        return int(self.sql("SELECT COALESCE(MAX(id), 0) FROM books"))

    def add(self, count, gap=0):
        """Adds `count` books `gap` ids after the highest (room for writes the
        host still finishes after a run); returns the first id. The id counter
        (AUTOINCREMENT's, the identity sequence) moves past them."""
        first = self.max_id() + 1 + gap
        if self.sqlite:
            rows = ((i, f"Title {i}", f"Author {i % 997}", 1900 + i % 125)
                    for i in range(first, first + count))
            # The triggers that keep the trigram index set aside, and the new
            # books indexed in one go as migration 0007 fills it: a note and
            # a merge a book would take many minutes for millions of books.
            self.sqlite.execute("BEGIN IMMEDIATE")
            triggers = [sql for (sql,) in self.sqlite.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'books'")]
            for sql in triggers:
                self.sqlite.execute("DROP TRIGGER " + sql.split()[2])
            self.sqlite.executemany("INSERT INTO books (id, title, author, year) VALUES (?, ?, ?, ?)", rows)
            if triggers:
                for column, sign, order in (("author", "-", "DESC"), ("title", "", "")):
                    self.sqlite.execute(f"INSERT INTO books_trigrams (rowid, folded) SELECT {sign}id, "
                                        f"lower({column}) FROM books WHERE id >= ? ORDER BY id {order}", (first,))
                self.sqlite.execute("INSERT INTO books_trigrams (books_trigrams) VALUES ('optimize')")
            for sql in triggers:
                self.sqlite.execute(sql)
            self.sqlite.execute("COMMIT")
        else:
            # 400,000 books a statement: each well within psql's minute, through
            # PostgreSQL's trigram indexes, on a loaded machine too.
            for start in range(first, first + count, 400_000):
                end = min(start + 400_000, first + count) - 1
                self.sql(f"INSERT INTO books (id, title, author, year) SELECT g, 'Title ' || g, "
                         f"'Author ' || (g % 997), 1900 + g % 125 FROM generate_series({start}, {end}) g")
            self.sql("SELECT setval(pg_get_serial_sequence('books', 'id'), (SELECT MAX(id) FROM books))")
            # As autovacuum soon would after so many rows: statistics, and
            # the trigram indexes' pending entries merged.
            self.sql("VACUUM ANALYZE books")
        return first

    def ensure(self, n):
        if self.max_id() < n:
            self.add(n - self.max_id())


class Pg:
    """A pg-cluster.sh cluster: `directory`'s (left running) or our own (close
    removes it). `url`: its database `books` as the service's role `books`
    (no superuser, owner of its databases), what a component is given;
    `admin_url`: as the superuser, for the tests' own steps."""

    def __init__(self, directory=None, tls=False):
        self.own = directory is None
        if self.own:
            directory = tempfile.mkdtemp(prefix="book-pg.")
            self.script("start", directory, *(["--tls"] if tls else []))
        self.dir = directory
        self.admin_url, self.url = self.url_of("books", "postgres"), self.url_of("books")

    def url_of(self, database, role="books", password=None):
        """The one place a URL into the cluster is made: `database` as `role`
        (the superuser `postgres` or `books`: pg-cluster.sh's password)."""
        d = Path(self.dir)
        password = password or (d / ("pwfile" if role == "postgres" else f"{role}.pwfile")).read_text().strip()
        return f"postgres://{role}:{password}@127.0.0.1:{(d / 'port').read_text().strip()}/{database}?sslmode=disable"

    @staticmethod
    def script(*args):
        return subprocess.run([str(PG_CLUSTER), *args], check=True, capture_output=True, text=True,
                              timeout=120).stdout.strip()

    def fresh_database(self):
        """An empty database in the cluster that role `books` owns: its URL as `books`."""
        name = "faults_" + random_text(10).lower()
        psql(self.admin_url, f"CREATE DATABASE {name} OWNER books")
        return self.url_of(name)

    def pause(self):
        self.script("pause", self.dir)

    def resume(self):
        self.script("resume", self.dir)

    def pids(self):
        """The postmaster and its children (by /proc)."""
        try:
            master = int((Path(self.dir) / "data/postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        pids = [master]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                    pids.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                pass
        return pids

    def close(self):
        if self.own and self.dir:
            subprocess.run([str(PG_CLUSTER), "stop", self.dir], timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.dir = None


def db_host(url):
    """spin.toml's db_host for a postgres:// URL: host:port, as Spin matches it."""
    u = urlsplit(url)
    host = u.hostname if ":" not in (u.hostname or "") else f"[{u.hostname}]"
    return f"{host}:{u.port or 5432}"


def manifest_for(wasm, manifest, directory):
    """A copy of `manifest` in `directory` whose API component (`book-catalog`)
    is `wasm`; every other component's `source` resolved from `manifest`'s folder."""
    manifest, table, lines, count = Path(manifest), "", [], 0
    for line in manifest.read_text(encoding="utf-8").splitlines(keepends=True):
        table = line.strip() if line.startswith("[") else table
        source = re.fullmatch(r'source\s*=\s*"(.*)"\s*', line)
        if source:
            api = table == "[component.book-catalog]"
            count += api
            line = "source = " + json.dumps(str(Path(wasm).resolve() if api else
                                                (manifest.parent / source[1]).resolve())) + "\n"
        lines.append(line)
    if count != 1:
        raise ValueError(f"{manifest}: expected one `source = ...` line in [component.book-catalog], found {count}")
    copy = Path(directory) / "spin.toml"
    copy.write_text("".join(lines), encoding="utf-8")
    return copy


class Host:
    """The component served by spin-lite or real Spin. `args`: more host options;
    `host_env`: the host process's own environment, never the component's. A
    restart keeps the state directory, and the port only if `port` was given."""

    def __init__(self, kind="spin-lite", store="sqlite", settings=None, pg_url=None, wasm=None,
                 manifest=None, port=None, state_dir=None, workdir=None):
        if kind not in HOSTS:
            raise ValueError(f"host must be one of {HOSTS}, not {kind!r}")
        if store == "postgres" and not pg_url:
            raise ValueError("the PostgreSQL store needs a database URL")
        self.kind, self.store, self.pg_url = kind, store, pg_url
        self.own_settings = dict(settings or {})
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="book-launch."))
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="state.", dir=self.workdir))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.manifest = Path(manifest or MANIFEST).resolve()
        if wasm:
            self.manifest = manifest_for(wasm, self.manifest, tempfile.mkdtemp(dir=self.workdir))
        self.fixed_port, self.port, self.proc, self.log_path = port, None, None, None
        self.args, self.host_env = [], {}

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def settings(self):
        settings = dict(self.own_settings)
        if self.store == "postgres":
            settings.setdefault("DB_URL", self.pg_url)
            settings.setdefault("DB_HOST", db_host(settings["DB_URL"]))
        return settings

    def command_and_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPIN_VARIABLE_")}
        env.update(self.host_env)
        command = host_command(self.kind) + ["--from", str(self.manifest)]
        for name, value in self.settings().items():
            if name in SPIN_VARIABLES:
                env["SPIN_VARIABLE_" + name] = value
            else:
                command += ["-e", f"{name}={value}"]
        if self.kind != "spin" and self.store == "postgres":
            env["SPIN_LITE_PG_EMPTY_QUERY_ERROR"] = "1"
        # `spin up` passes the options it does not know to its trigger: last.
        command += ["--listen", f"127.0.0.1:{self.port}", "--state-dir", str(self.state_dir)]
        return command + self.args, env

    def start(self, timeout=90, healthy=True):
        """Starts the host; waits until GET /health answers 200 (any answer when not `healthy`)."""
        self.port = self.fixed_port or free_port()
        command, env = self.command_and_env()
        self.log_path = self.workdir / f"host-{len(list(self.workdir.glob('host-*.log'))) + 1}.log"
        with open(self.log_path, "ab") as log:
            # Its own process group: `spin up` serves from a child process.
            self.proc = subprocess.Popen(command, cwd=self.workdir, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode} before serving; "
                                   f"its log:\n{self.tail()}")
            status = self.health()
            return status == 200 or bool(status and not healthy)
        if wait_until(ready, timeout, 0.1) is None:
            self.kill()
            raise RuntimeError(f"{self.kind}: GET /health did not answer 200 within {timeout}s; "
                               f"its log:\n{self.tail()}")
        return self

    def health(self):
        """GET /health's status, or None when nothing answers."""
        try:
            with urllib.request.urlopen(self.base_url + "/health", timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after `timeout`: the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return self.proc.returncode

    def kill(self):
        """SIGKILL to the host and whatever it started (Spin's trigger process)
        at once: its process group, then the host itself if it left it."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AttributeError):
            return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1].strip())
    add_host_options(p)
    p.add_argument("--pg-url")
    p.add_argument("--port", type=int)
    p.add_argument("--state-dir")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("a COMMAND to run is required (after --)")
    settings = dict(pair.split("=", 1) for pair in args.env if "=" in pair)
    if len(settings) != len(args.env):
        p.error("--env takes NAME=VALUE")
    settings.setdefault("SECRET_TOKEN", random_text(48))
    workdir = tempfile.mkdtemp(prefix="book-launch.")
    pg = Pg() if args.store == "postgres" and not args.pg_url else None
    host = None
    try:
        host = Host(args.host, args.store, settings, pg_url=args.pg_url or (pg and pg.url),
                    wasm=args.wasm, manifest=args.manifest, port=args.port,
                    state_dir=args.state_dir, workdir=workdir)
        signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
        host.start()
        env = dict(os.environ, BASE_URL=host.base_url, SECRET_TOKEN=settings["SECRET_TOKEN"],
                   HOST_PID=str(host.proc.pid), STATE_DIR=str(host.state_dir))
        status = subprocess.run(command, env=env).returncode
        stopped = host.stop()
        if stopped != 0:
            print(f"launch: {args.host} exited with {stopped} on SIGTERM", file=sys.stderr)
        return status
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
        print(f"launch: {e}", file=sys.stderr)
        return 1
    finally:
        if host is not None:
            host.kill()
        if pg is not None:
            pg.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
