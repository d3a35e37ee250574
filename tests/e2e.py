#!/usr/bin/env python3
"""End to end: the real host serving the real component over HTTP.

    tests/e2e.py [--store sqlite|postgres] [--host spin-lite|spin] [--reuse N]
                 [--wasm F] [--manifest F]

A host of tests/faults/lib.py (a 30-second failed-login window, so that
throttle.hurl's counts lapse soon) serves the plain hurl command as the
README shows it (one test per file), then tests/hurl/run.py --strict (the
host is ours alone: the catalog must end as it began). Then: the built-in
credentials are refused (the host has its own), a restart keeps a book and
a token, the host exits 0 on SIGTERM, SQLite's database is
<state-dir>/sqlite_db.db, and a password configured as an Argon2id hash made
by Debian's `argon2` CLI (docs/configuration.md) logs in. PostgreSQL: the
cluster in FAULTS_PG_DIR, else a throwaway one. Prints `e2e STORE: N passed,
M failed` (and appends `N M` to $E2E_TALLY when set).
"""

import os
import re
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "faults"))
import lib  # noqa: E402

LOGIN_WINDOW_SECONDS = "30"


class E2eHost(lib.Host):
    password_hash = None  # when set, configured instead of the password

    def settings(self):
        settings = dict(super().settings(), LOGIN_WINDOW_SECONDS=LOGIN_WINDOW_SECONDS)
        if self.password_hash:
            del settings["AUTH_PASSWORD"]
            settings["AUTH_PASSWORD_HASH"] = self.password_hash
        return settings


def run(ctx):
    t = ctx.tally
    host = E2eHost(ctx).start()
    # The plain files as a user runs them: hurl alone, one test per file.
    plain = subprocess.run(
        ["hurl", "--test", "--variables-file", "tests/hurl/example.env",
         "--variable", f"base_url={host.base_url}", "--variable", f"username={host.username}",
         "--secret", f"password={host.password}"]
        + sorted(str(f.relative_to(lib.ROOT)) for f in HERE.glob("hurl/*.hurl")),
        cwd=lib.ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    sys.stderr.write(plain.stdout + plain.stderr)
    files = dict(re.findall(r"^(Succeeded|Failed) files:\s+(\d+)", plain.stderr, re.M))
    passed, failed = int(files.get("Succeeded", 0)), int(files.get("Failed", 0))
    failed += plain.returncode != 0 and failed == 0  # hurl itself failing
    t.passed += passed
    t.failed += failed
    if failed:
        t.failures.append(f"plain hurl: {failed} files failed")
    lib.log(f"{t.label} {ctx.store}: plain hurl: {passed} files passed, {failed} failed")
    r = host.call("POST", "/token", {"username": "admin", "password": "password"})
    t.check(r.is_envelope(401, "Invalid credentials"),
            "the built-in credentials are refused once the host sets its own", f"{r!r}")
    # The plain and wrapped files with the runner's checks; its tally joins ours.
    with tempfile.NamedTemporaryFile("r", dir=ctx.tmp, suffix=".counts") as counts:
        env = dict(os.environ, HURL_BASE_URL=host.base_url, HURL_USERNAME=host.username,
                   HURL_PASSWORD=host.password, SECRET_TOKEN=host.secret,
                   TRUSTED_PROXY_HOPS="1", LOGIN_WINDOW_SECONDS=LOGIN_WINDOW_SECONDS)
        subprocess.run([sys.executable, str(HERE / "hurl/run.py"), "--strict", "--counts",
                        counts.name, "--label", f"{ctx.tally.label} {ctx.store}"],
                       env=env, stdout=sys.stderr, timeout=3600)
        passed, failed = (int(n) for n in (counts.read().split() or ["0", "1"]))
    ctx.tally.passed += passed
    ctx.tally.failed += failed
    if failed:
        ctx.tally.failures.append(f"hurl: {failed} failed")
    lib.log(f"{ctx.tally.label} {ctx.store}: hurl: {passed} passed, {failed} failed")

    book = {"title": "Restart \u2713 " + lib.random_text(8), "author": "Persistence \u00e9",
            "year": 1851}
    old_token = host.token()
    created = host.call("POST", "/book", book, old_token)
    t.check(created.is_envelope(201, "Book created successfully"),
            "restart: a book created before it", f"{created!r}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM (after the suite)")
    if ctx.store == "sqlite":
        db = host.state_dir / "sqlite_db.db"
        t.check(db.is_file() and db.stat().st_size > 0,
                "the default SQLite database is <state-dir>/sqlite_db.db",
                f"files: {sorted(p.name for p in host.state_dir.iterdir())}")

    try:
        # The PHC string docs/configuration.md makes with Debian's argon2 CLI.
        host.password_hash = subprocess.run(
            ["argon2", secrets.token_hex(16), "-id", "-t", "2", "-k", "19456", "-p", "1", "-e"],
            input=host.password, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        t.check(False, "Debian's argon2 CLI makes a hash (scripts/ensure-tools.sh argon2)", repr(e))
    host.start()
    if host.password_hash:
        r = host.call("POST", "/token", {"username": host.username, "password": host.password})
        t.check(r.is_envelope(200, "Token generated successfully"),
                "the password configured as a hash from Debian's argon2 CLI logs in", f"{r!r}")
    if created.status == 201:
        book_id = created.data["id"]
        expected = dict(book, id=book_id)
        answers = [host.call("GET", f"/book/{book_id}", token=token)
                   for token in (old_token, host.token())]
        listed = host.call("GET", "/books", token=old_token)
        t.check(all(r.is_envelope(200, "Book retrieved successfully") and r.data == expected
                    for r in answers)
                and listed.is_envelope(200) and expected in listed.data,
                f"a book survives a restart (id {book_id}, same fields; the old token still valid)",
                f"{answers} {listed!r}")
        deleted = host.call("DELETE", f"/book/{book_id}", token=old_token)
        t.check(deleted.is_envelope(200, "Book deleted successfully"),
                "restart: the book is deleted afterwards", f"{deleted!r}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM (after the restart)")


if __name__ == "__main__":
    args = lib.parse_args("end to end")
    details = ([f"reuse {args.reuse}"] if args.reuse != 1 else []) \
        + ([os.path.relpath(args.manifest, lib.ROOT)] if args.manifest else []) \
        + ([Path(args.wasm).name] if args.wasm else [])
    lib.run_modules(args, [("e2e", run)], "e2e" + (f" ({', '.join(details)})" if details else ""))
