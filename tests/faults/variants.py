#!/usr/bin/env python3
"""A store the component cannot reach answers 500, and the host keeps serving.

Each case serves the component with a store it cannot use and checks that a
book request (GET /books with a valid token, POST /token) gets the 500
envelope, GET /health answers 503 "Service unavailable", the host answers
again afterwards, and no password from DB_URL reaches the host's log:
- a store missing from the build: the PostgreSQL-only build
  (target/variants/, `make variants`) asked for SQLite, and the SQLite-only
  build asked for PostgreSQL; the log names the build that has that store;
- a manifest whose component may open no SQLite database
  (`sqlite_databases = []`);
- a PostgreSQL address the manifest's allowed_outbound_hosts does not admit.
The cases choose their own store, so they are the same on either --store.
"""

import re
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402
from lib import ROOT, launch  # noqa: E402

VARIANTS = ROOT / "target/variants"
POSTGRES_ONLY = (VARIANTS / "book-catalog-postgres.wasm", ROOT / "deploy/postgres-only/spin.toml")
SQLITE_ONLY = (VARIANTS / "book-catalog-sqlite.wasm", ROOT / "spin.toml")
PASSWORD = "S3cretPw"


def serve(ctx, name, manifest, db_url=None, db_host=None):
    """A host of `manifest` (its store chosen by `db_url`), started without
    waiting for a healthy answer."""
    host = ctx.host()
    host.store = "sqlite"  # DB_URL comes from the case, not from --store
    host.manifest = Path(manifest)
    if db_url is not None:
        host.own_settings["DB_URL"] = db_url
    if db_host is not None:
        host.own_settings["DB_HOST"] = db_host
    lib.log(f"variants: {name}: serving {manifest}")
    return host.start(healthy=False)


def copy_of(ctx, wasm, manifest, change=None):
    """`manifest` in a directory of its own with an absolute `source`
    (`wasm`), and `change(text)` applied."""
    copy = launch.manifest_for(wasm, manifest, tempfile.mkdtemp(prefix="manifest.", dir=ctx.tmp))
    if change:
        copy.write_text(change(copy.read_text(encoding="utf-8")), encoding="utf-8")
    return copy


def expect_unavailable(ctx, host, name, log_says=None):
    """The 500 envelope for book requests, 503 on /health, still serving after,
    `log_says` in the host's log and no PASSWORD there."""
    t = ctx.tally
    token = lib.jwt(host.secret.encode("utf-8"), {"exp": int(time.time()) + 600})
    books = lib.try_request(host.port, "GET", "/books", token=token)
    t.check(books.is_envelope(500, "Internal server error") and books.data is None,
            f"{name}: GET /books with a valid token answers the 500 envelope", f"{books!r}")
    login = host.login()
    t.check(login.is_envelope(500, "Internal server error") and login.data is None,
            f"{name}: POST /token answers the 500 envelope", f"{login!r}")
    health = lib.try_request(host.port, "GET", "/health")
    t.check(health.is_envelope(503, "Service unavailable"),
            f"{name}: GET /health answers 503 'Service unavailable'", f"{health!r}")
    again = lib.try_request(host.port, "GET", "/books", token=token)
    t.check(host.alive() and again.is_envelope(500),
            f"{name}: the host keeps serving (answers again)", f"{again!r}")
    time.sleep(0.3)  # let the host's log catch up
    # Spin also writes the component's stdio under the state directory.
    logs = [host.log_path, *sorted((host.state_dir / "logs").glob("*"))]
    text = "\n".join(f.read_text(errors="replace") for f in logs if f.is_file())
    if log_says:
        t.check(log_says in text, f"{name}: the host's log says {log_says!r}", host.tail(10))
    if PASSWORD in host.own_settings.get("DB_URL", ""):
        t.check(PASSWORD not in text, f"{name}: no password from DB_URL in the host's log",
            f"{len(logs)} files read")
    host.stop()


def a_store_missing_from_the_build(ctx):
    t = ctx.tally
    missing = [str(f) for f, _ in (POSTGRES_ONLY, SQLITE_ONLY) if not f.exists()]
    if not t.check(not missing, "the variant builds exist (make variants)", ", ".join(missing)):
        return
    manifest = copy_of(ctx, *POSTGRES_ONLY)
    for db_url in ("sqlite://default", ""):
        host = serve(ctx, "PostgreSQL-only build", manifest, db_url=db_url)
        expect_unavailable(ctx, host, f"PostgreSQL-only build, DB_URL={db_url!r}",
                           "this build of the component has no SQLite store")
    port = lib.free_port()  # nothing listens there; the request must not get that far
    address = f"127.0.0.1:{port}"
    host = serve(ctx, "SQLite-only build", copy_of(ctx, *SQLITE_ONLY),
                 db_url=f"postgres://user:{PASSWORD}@{address}/db", db_host=address)
    expect_unavailable(ctx, host, "SQLite-only build, DB_URL=postgres://...",
                       "this build of the component has no PostgreSQL store")


def denied_database_answers_500_and_the_host_keeps_serving(ctx):
    def no_databases(text):
        text, count = re.subn(r"(?m)^sqlite_databases\s*=.*$", "sqlite_databases = []", text)
        if count != 1:
            raise ValueError(f"expected one sqlite_databases line, found {count}")
        return text
    wasm = ctx.wasm or lib.WASM
    host = serve(ctx, "sqlite_databases = []", copy_of(ctx, wasm, launch.MANIFEST, no_databases))
    expect_unavailable(ctx, host, "sqlite_databases = []",
                       r'opening SQLite database \"default\": Error::AccessDenied')


def postgres_address_outside_allowed_hosts(ctx):
    wasm = ctx.wasm or lib.WASM
    host = serve(ctx, "address not allowed", copy_of(ctx, wasm, launch.MANIFEST),
                 db_url=f"postgres://user:{PASSWORD}@127.0.0.2:5999/db", db_host="127.0.0.1:5999")
    expect_unavailable(ctx, host, "PostgreSQL address outside allowed_outbound_hosts",
                       "address postgres://127.0.0.2:5999 is not permitted")


def run(ctx):
    if not ctx.only_on("sqlite", "each case chooses its own store"):
        return
    a_store_missing_from_the_build(ctx)
    denied_database_answers_500_and_the_host_keeps_serving(ctx)
    postgres_address_outside_allowed_hosts(ctx)


if __name__ == "__main__":
    lib.main("variants", run)
