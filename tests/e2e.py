#!/usr/bin/env python3
"""End to end: the real host serving the real component over HTTP.

    tests/e2e.py [--store sqlite|postgres] [--host spin-lite|spin]
                 [--wasm F] [--manifest F] [--argon2-cli]

A host of tests/faults/lib.py (a 30-second failed-login window, so that
throttle.hurl's counts lapse soon) serves the plain hurl command as the
README shows it (one test per file), then tests/hurl/run.py --strict (the
host is ours alone: the catalog must end as it began); the host exits 0 on
SIGTERM. --argon2-cli: then it is restarted with the password configured as
an Argon2id hash made by Debian's `argon2` CLI as docs/configuration.md
shows, and that password logs in (one leg of `make test` runs it: it is the
same on every host and store). PostgreSQL: the cluster in FAULTS_PG_DIR,
else a throwaway one. Prints `e2e STORE: N passed, M failed` (and appends
`N M` to $E2E_TALLY when set).
"""

import json
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
    # A reader and an editor for wrapped/accounts.hurl, made as a user makes them.
    accounts = {role: ("e2e-" + role, "E2e." + lib.random_text(16)) for role in ("reader", "editor")}

    def settings(self):
        entries = [lib.account(name, role, pw) for role, (name, pw) in self.accounts.items()]
        settings = dict(super().settings(), LOGIN_WINDOW_SECONDS=LOGIN_WINDOW_SECONDS,
                        ACCOUNTS=json.dumps(entries))
        if self.password_hash:
            del settings["AUTH_PASSWORD"]
            settings["AUTH_PASSWORD_HASH"] = self.password_hash
        return settings


def add(t, what, passed, failed):
    """A sub-run's counts joined to the tally."""
    t.passed += passed
    t.failed += failed
    if failed:
        t.failures.append(f"{what}: {failed} failed")


def run(ctx, argon2_cli=False):
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
    add(t, "plain hurl files", passed, failed + (plain.returncode != 0 and failed == 0))
    # The plain and wrapped files with the runner's checks.
    with tempfile.NamedTemporaryFile("r", dir=ctx.tmp, suffix=".counts") as counts:
        env = dict(os.environ, HURL_BASE_URL=host.base_url, HURL_USERNAME=host.username,
                   HURL_PASSWORD=host.password, SECRET_TOKEN=host.secret,
                   TRUSTED_PROXY_HOPS="1", LOGIN_WINDOW_SECONDS=LOGIN_WINDOW_SECONDS,
                   **{f"HURL_{role.upper()}_{part}": value for role, account in host.accounts.items()
                      for part, value in zip(("USERNAME", "PASSWORD"), account)})
        subprocess.run([sys.executable, str(HERE / "hurl/run.py"), "--strict", "--counts",
                        counts.name, "--label", f"{t.label} {ctx.store}"],
                       env=env, stdout=sys.stderr, timeout=3600)
        add(t, "hurl", *(int(n) for n in (counts.read().split() or ["0", "1"])))
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM after the suite")
    if not argon2_cli:
        return
    try:
        # The PHC string docs/configuration.md makes with Debian's argon2 CLI.
        host.password_hash = subprocess.run(
            ["argon2", secrets.token_hex(16), "-id", "-t", "2", "-k", "19456", "-p", "1", "-e"],
            input=host.password, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        t.check(False, "Debian's argon2 CLI makes a hash (scripts/ensure-tools.sh argon2)", repr(e))
        return
    host.start()
    r = host.login()
    t.check(r.is_envelope(200, "Token generated successfully"),
            "the password configured as a hash from Debian's argon2 CLI logs in", f"{r!r}")
    t.check(host.stop() == 0, "the host exits 0 on SIGTERM after the restart")


if __name__ == "__main__":
    args = lib.parse_args("end to end", more=lambda p: p.add_argument(
        "--argon2-cli", action="store_true",
        help="also log in with a password hash made by Debian's argon2 CLI"))
    details = ([os.path.relpath(args.manifest, lib.ROOT)] if args.manifest else []) \
        + ([Path(args.wasm).name] if args.wasm else [])
    lib.run_modules(args, [("e2e", lambda ctx: run(ctx, args.argon2_cli))],
                    "e2e" + (f" ({', '.join(details)})" if details else ""))
