#!/usr/bin/env python3
"""End to end: the real host serving the real component over HTTP.

    tests/e2e.py [--store sqlite|postgres] [--host spin-lite|spin]
                 [--wasm F] [--manifest F]

A host of tests/faults/lib.py (a 30-second failed-login window, so that
throttle.hurl's counts lapse soon) serves the plain hurl command as the
README shows it (one test per file), then tests/hurl/run.py --strict (the
host is ours alone: the catalog must end as it began); the host exits 0 on
SIGTERM. Its `accounts` hold a reader and an editor made by scripts/account.sh
(Debian's `argon2`, docs/configuration.md's recipe), whose logins
wrapped/accounts.hurl uses; the editor's password, spaces around it, typed
at a (pseudo-)terminal: it logs in as typed, trimmed it is refused.
PostgreSQL: the cluster in FAULTS_PG_DIR, else a throwaway one. Prints `e2e STORE: N passed, M failed` (and appends
`N M` to $E2E_TALLY when set).
"""

import json
import os
import re
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
    # A reader and an editor for wrapped/accounts.hurl, made as a user makes them.
    accounts = {"reader": ("e2e-reader", "E2e." + lib.random_text(16)),
                "editor": ("e2e-editor", "  E2e." + lib.random_text(16) + " ")}

    def settings(self):
        entries = [lib.account(name, role, pw, terminal=role == "editor")
                   for role, (name, pw) in self.accounts.items()]
        return dict(super().settings(), LOGIN_WINDOW_SECONDS=LOGIN_WINDOW_SECONDS,
                    ACCOUNTS=json.dumps(entries))


def add(t, what, passed, failed):
    """A sub-run's counts joined to the tally."""
    t.passed += passed
    t.failed += failed
    if failed:
        t.failures.append(f"{what}: {failed} failed")


def run(ctx, host_class=E2eHost):
    t = ctx.tally
    host = host_class(ctx).start()
    name, typed = host.accounts["editor"]
    logins = [lib.request(host.port, "POST", "/token", {"username": name, "password": password},
                          headers={"X-Forwarded-For": lib.client(43)}).status
              for password in (typed, typed.strip())]
    t.check(logins == [200, 401], "scripts/account.sh hashes every byte typed at a terminal: the password "
            "with its spaces logs in, trimmed it is refused", f"{logins}")
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


if __name__ == "__main__":
    args = lib.parse_args("end to end")
    details = ([os.path.relpath(args.manifest, lib.ROOT)] if args.manifest else []) \
        + ([Path(args.wasm).name] if args.wasm else [])
    lib.run_modules(args, [("e2e", run)],
                    "e2e" + (f" ({', '.join(details)})" if details else ""))
