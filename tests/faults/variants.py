#!/usr/bin/env -S python3 -B
"""A store the build or manifest cannot reach, served by a real host: GET
/books and POST /token answer the 500 envelope, /health 503, the host keeps
serving, its log names the cause and never DB_URL's password. Cases: the
PostgreSQL-only build asked for SQLite and the SQLite-only build for
PostgreSQL (`make variants`), `sqlite_databases = []`, a PostgreSQL address
outside allowed_outbound_hosts. Each chooses its store: run on SQLite only.
"""

import re
import tempfile
import time
from pathlib import Path

import lib
from lib import ROOT, launch

VARIANTS = ROOT / "target/variants"
PASSWORD = "S3cretPw"


def unavailable(ctx, name, wasm, manifest, log_says, db_url=None, db_host=None, change=None):
    """Serves `wasm` by a copy of `manifest` (`change` applied) with DB_URL `db_url`."""
    t = ctx.tally
    if not Path(wasm).exists():
        t.check(False, f"{name}: {Path(wasm).relative_to(ROOT)} is built (make variants)")
        return
    copy = launch.manifest_for(wasm, manifest, tempfile.mkdtemp(prefix="manifest.", dir=ctx.tmp))
    if change:
        copy.write_text(change(copy.read_text(encoding="utf-8")), encoding="utf-8")
    host = ctx.host()
    host.store, host.manifest = "sqlite", copy  # DB_URL comes from the case, not from --store
    host.own_settings.update({k: v for k, v in (("DB_URL", db_url), ("DB_HOST", db_host)) if v is not None})
    host.start(healthy=False)
    token = lib.jwt(host.secret.encode("utf-8"), {"exp": int(time.time()) + 600})
    answers = [host.call("GET", "/books", token=token), host.login()]
    t.check(all(r.is_envelope(*lib.ERROR) and r.data is None for r in answers),
            f"{name}: GET /books with a valid token and POST /token answer the 500 envelope",
            f"{answers}")
    health = host.call("GET", "/health")
    t.check(health.is_envelope(*lib.UNAVAILABLE), f"{name}: GET /health answers 503", f"{health!r}")
    again = host.call("GET", "/books", token=token)
    t.check(host.alive() and again.is_envelope(500), f"{name}: the host keeps serving", f"{again!r}")
    time.sleep(0.3)  # let the host's log catch up
    # Spin also writes the component's stdio under the state directory.
    logs = [host.log_path, *sorted((host.state_dir / "logs").glob("*"))]
    text = "\n".join(f.read_text(errors="replace") for f in logs if f.is_file())
    t.check(log_says in text and PASSWORD not in text,
            f"{name}: the host's log says {log_says!r}, and no password from DB_URL", host.tail(10))
    host.stop()


def run(ctx):
    if not ctx.only_on("sqlite", "each case chooses its own store"):
        return
    if ctx.wasi_p2:
        # The single-store builds are WASI 0.3 only; the cases below take the WASI 0.2 build.
        ctx.tally.note("the PostgreSQL-only and SQLite-only builds are WASI 0.3: run under WASI 0.3 hosts")
        wasm, manifest = ctx.wasm or VARIANTS / "book-catalog-p2.wasm", ctx.manifest
    else:
        postgres_only = (VARIANTS / "book-catalog-postgres.wasm", ROOT / "deploy/postgres-only/spin.toml")
        for db_url in ("sqlite://default", ""):
            unavailable(ctx, f"PostgreSQL-only build, DB_URL={db_url!r}", *postgres_only,
                        "this build of the component has no SQLite store", db_url=db_url)
        address = f"127.0.0.1:{lib.free_port()}"  # nothing listens: no request may get that far
        unavailable(ctx, "SQLite-only build, DB_URL=postgres://...", VARIANTS / "book-catalog-sqlite.wasm",
                    launch.MANIFEST, "this build of the component has no PostgreSQL store",
                    db_url=f"postgres://user:{PASSWORD}@{address}/db", db_host=address)
        wasm, manifest = ctx.wasm or lib.WASM, ctx.manifest or launch.MANIFEST
    unavailable(ctx, "sqlite_databases = []", wasm, manifest,
                r'opening SQLite database \"default\": Error::AccessDenied',
                change=lambda text: re.sub(r"(?m)^sqlite_databases\s*=.*$", "sqlite_databases = []", text))
    unavailable(ctx, "PostgreSQL address outside allowed_outbound_hosts", wasm, manifest,
                "address postgres://127.0.0.2:5999 is not permitted",
                db_url=f"postgres://user:{PASSWORD}@127.0.0.2:5999/db", db_host="127.0.0.1:5999")


if __name__ == "__main__":
    lib.main("variants", run)
