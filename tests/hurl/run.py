#!/usr/bin/env python3
"""Run the hurl suite (tests/hurl/*.hurl) against any running deployment.

    tests/hurl/run.py [--base-url URL] [--label TEXT] [--counts FILE]
                      [--strict] [FILE.hurl ...]

Settings (environment; `make hurl` sets them from its variables):
  HURL_BASE_URL   the deployment, e.g. https://books.example.com (or --base-url)
  HURL_USERNAME   the login name the deployment is configured with
  HURL_PASSWORD   its password
  SECRET_TOKEN    optional: the signing secret. Without it the files that
                  start with `# needs: secret` (forged tokens) are skipped
                  and listed.
  TRUSTED_PROXY_HOPS=1  the deployment trusts one proxy in front of it
                  (TRUSTED_PROXY_HOPS=1, or the older TRUST_FORWARDED_FOR=true),
                  so the last X-Forwarded-For entry names the client: files
                  with `# needs: forwarded-for` run; else skipped.

A file declares what it needs in its first comment lines:
  # needs: secret
  # needs: forwarded-for        (or both: `# needs: secret, forwarded-for`)

The suite leaves no books behind: every file deletes the books it creates.
The runner checks it: the catalog is listed before and after the suite, and
a book that appeared during the run and carries this run's id (`run_id`, in
every title the suite writes) is reported as a failure and then deleted.
--strict (for a deployment nobody else uses, like the hosts of tests/e2e.sh)
also fails on any other change to the catalog.

One test per request: a request passes when all its asserts pass; requests
a failure stopped before they ran count as failed. The last line is
`hurl LABEL: N passed, M failed`; --counts FILE appends `N M` to FILE.
Exit status 0 only when nothing failed. HURL_KEEP=1 keeps the temporary
directory (variables, hurl's JSON report).

Standard library only; needs hurl 8.x on PATH.
"""

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUEST_LINE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|CONNECT|TRACE) \S")
NEEDS_LINE = re.compile(r"^#\s*needs:\s*(.+?)\s*$")
KNOWN_NEEDS = {"secret", "forwarded-for"}


def truthy(value):
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def say(text):
    print(text, file=sys.stderr, flush=True)


def needs_of(path):
    """The `# needs:` of a file's leading comment block."""
    needs = set()
    with open(path, encoding="utf-8") as source:
        for line in source:
            line = line.strip()
            if not line:
                continue
            if not line.startswith("#"):
                break
            match = NEEDS_LINE.match(line)
            if match:
                needs.update(n.strip() for n in match.group(1).split(",") if n.strip())
    return needs


def count_requests(path):
    with open(path, encoding="utf-8") as source:
        return sum(1 for line in source if REQUEST_LINE.match(line))


class Api:
    """Just enough of the API to list and delete books around the suite."""

    def __init__(self, base_url, username, password):
        self.base_url = base_url.rstrip("/")
        self.username, self.password = username, password
        self.token = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", self.token)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw or b"null")
            except ValueError:
                return error.code, None

    def login(self):
        self.token = None
        status, envelope = self.call(
            "POST", "/token", {"username": self.username, "password": self.password})
        if status != 200 or not isinstance(envelope, dict):
            raise RuntimeError(f"POST /token answered {status}: {envelope}")
        self.token = envelope["data"]["token"]

    def books(self):
        """Every book, by id (a fresh token: the suite may take > 15 min)."""
        self.login()
        status, envelope = self.call("GET", "/books")
        if status != 200 or not isinstance(envelope, dict) or not isinstance(envelope.get("data"), list):
            raise RuntimeError(f"GET /books answered {status}: {str(envelope)[:200]}")
        return {book["id"]: book for book in envelope["data"]}

    def delete(self, book_id):
        return self.call("DELETE", f"/book/{book_id}")[0]


def write_variables(path, file_root, username, password, run_id, secret):
    if secret:
        env = dict(os.environ, SECRET_TOKEN=secret)
        subprocess.run([sys.executable, str(HERE / "forge_tokens.py"), "--output", str(path)],
                       env=env, check=True)
    now = int(time.time())
    lines = {
        "run_id": run_id,
        "username": username,
        "password": password,
        "username_upper": username.upper(),
        "password_prefix": password[:-1],
        # An `exp` issued during this run: now + 900 s, give or take the run.
        "exp_min": now + 900,
        "exp_max": now + 900 + 1800,
        # tests/hurl/throttle.hurl: client addresses of this run only (an
        # IPv6 prefix in 2001:db8::/32, the documentation range), so counts
        # of an earlier run still in their window never meet this one; and
        # the deployment's LOGIN_WINDOW_SECONDS (default 900).
        # The first three groups of an IPv6 address: a file adds the fourth
        # and the rest, so each of its clients has a /64 of its own.
        "client_prefix": "2001:db8:%x:" % secrets.randbits(16),
        "login_window_seconds": os.environ.get("LOGIN_WINDOW_SECONDS") or "900",
    }
    # Texts of exactly 1,000 and 1,001 characters, ASCII, 2-byte and 4-byte
    # UTF-8: each starts with the run id, so that a book the suite failed to
    # delete is still found (and deleted) by the leftover check.
    for name, char in (("text", "a"), ("wide", "\u00e9"), ("astral", "\U0001F4DA")):
        for length in (1000, 1001):
            lines[f"{name}_{length}"] = run_id + char * (length - len(run_id))
    with open(path, "a", encoding="utf-8") as out:
        os.chmod(path, 0o600)
        for name, value in lines.items():
            out.write(f"{name}={value}\n")
    # Bodies at and just over the 1 MiB limit.
    book = '{"title": "At Limit %s", "author": "Padding", "year": 2024}' % run_id
    (file_root / "at_limit.json").write_text(book.ljust(1024 * 1024), encoding="ascii")
    over = '{"title": "Over Limit %s", "author": "Padding", "year": 2024}' % run_id
    (file_root / "over_limit.json").write_text(over.ljust(1024 * 1024 + 1), encoding="ascii")


def tally_report(report_path, files):
    """(passed, failed) from hurl's JSON report, one test per request."""
    expected = {os.path.realpath(f): count_requests(f) for f in files}
    try:
        with open(report_path, encoding="utf-8") as report_file:
            report = json.load(report_file)
    except (OSError, ValueError) as error:
        say(f"  no hurl report ({error})")
        report = []
    passed = failed = 0
    seen = set()
    for result in report:
        name = os.path.realpath(result["filename"])
        seen.add(name)
        entries = result.get("entries", [])
        ok = sum(1 for entry in entries if all(a.get("success") for a in entry.get("asserts", [])))
        bad = len(entries) - ok
        not_run = max(expected.get(name, len(entries)) - len(entries), 0)
        if not result.get("success", False) and bad == 0 and not_run == 0:
            bad = 1  # failed without a failing request: count the file once
        passed += ok
        failed += bad + not_run
        state = "PASS" if bad + not_run == 0 else "FAIL"
        say(f"  {state} {os.path.basename(name)}: {ok} passed, {bad} failed, {not_run} not run")
    for name, count in expected.items():
        if name not in seen:
            say(f"  FAIL {os.path.basename(name)}: not run ({count} requests)")
            failed += max(count, 1)
    return passed, failed


def main():
    parser = argparse.ArgumentParser(
        description="Run tests/hurl/*.hurl against a running deployment.",
        epilog="Credentials come from HURL_USERNAME / HURL_PASSWORD, the optional signing "
               "secret from SECRET_TOKEN (see the module docstring).")
    parser.add_argument("--base-url", default=os.environ.get("HURL_BASE_URL", ""))
    parser.add_argument("--label", default="")
    parser.add_argument("--counts", help="append `N M` (passed, failed) to this file")
    parser.add_argument("--strict", action="store_true",
                        help="the deployment is ours alone: the catalog must be exactly as before")
    parser.add_argument("files", nargs="*", help="hurl files (default: tests/hurl/*.hurl)")
    args = parser.parse_args()

    label = "hurl" + (f" {args.label}" if args.label else "")
    passed = failed = 0

    def finish():
        print(f"{label}: {passed} passed, {failed} failed", flush=True)
        if args.counts:
            with open(args.counts, "a", encoding="utf-8") as out:
                out.write(f"{passed} {failed}\n")
        return 0 if failed == 0 else 1

    def check(ok, name, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            say(f"  PASS {name}")
        else:
            failed += 1
            say(f"  FAIL {name}" + (f" -- {detail}" if detail else ""))
        return ok

    base_url = args.base_url.rstrip("/")
    username = os.environ.get("HURL_USERNAME", "")
    password = os.environ.get("HURL_PASSWORD", "")
    secret = os.environ.get("SECRET_TOKEN", "")
    forwarded = (os.environ.get("TRUSTED_PROXY_HOPS", "").strip() == "1"
                 or truthy(os.environ.get("TRUST_FORWARDED_FOR")))
    missing = [name for name, value in (("BASE_URL", base_url), ("USERNAME", username),
                                        ("PASSWORD", password)) if not value]
    if missing or not re.match(r"^https?://", base_url):
        say(f"{label}: set BASE_URL (http:// or https://), USERNAME and PASSWORD "
            f"(missing: {', '.join(missing) or 'a scheme in BASE_URL'}); "
            "e.g. make hurl BASE_URL=http://127.0.0.1:8080 USERNAME=admin PASSWORD=...")
        failed += 1
        return finish()
    if shutil.which("hurl") is None:
        say(f"{label}: hurl is not installed (https://hurl.dev; scripts/ensure-tools.sh hurl)")
        failed += 1
        return finish()

    files = [Path(f) for f in args.files] or sorted(HERE.glob("*.hurl"))
    run, skipped = [], []
    for path in files:
        needs = needs_of(path)
        unknown = needs - KNOWN_NEEDS
        if unknown:
            check(False, f"{path.name}: known `# needs:`", f"unknown {sorted(unknown)}")
            continue
        unmet = []
        if "secret" in needs and not secret:
            unmet.append("secret: SECRET_TOKEN not given")
        if "forwarded-for" in needs and not forwarded:
            unmet.append("forwarded-for: TRUSTED_PROXY_HOPS=1 not given")
        if unmet:
            skipped.append((path, unmet))
        else:
            run.append(path)
    for path, unmet in skipped:
        say(f"  SKIP {path.name} ({count_requests(path)} requests; needs {'; '.join(unmet)})")
    if not run:
        check(False, "at least one hurl file to run")
        return finish()

    tmp = Path(tempfile.mkdtemp(prefix="book-hurl."))
    try:
        api = Api(base_url, username, password)
        try:
            before = api.books()
        except (OSError, RuntimeError, KeyError, TypeError, ValueError) as error:
            check(False, f"log in and list the books at {base_url} before the suite", repr(error))
            return finish()
        run_id = "run%d%s" % (time.time(), os.urandom(3).hex())
        variables = tmp / "variables.env"
        write_variables(variables, tmp, username, password, run_id, secret)
        report = tmp / "report"
        say(f"{label}: {len(run)} files against {base_url} (run id {run_id})")
        status = subprocess.run(
            ["hurl", "--test", "--jobs", "1", "--no-color", "--max-time", "60",
             "--file-root", str(tmp), "--variables-file", str(variables),
             "--variable", f"base_url={base_url}", "--report-json", str(report)]
            + [str(p) for p in run],
            stdin=subprocess.DEVNULL).returncode
        # hurl: 0 all passed, 3 runtime error, 4 assert error; anything else
        # is hurl itself failing (usage, parse error).
        ok, bad = tally_report(report / "report.json", [str(p) for p in run])
        passed += ok
        failed += bad
        if status != 0 and bad == 0:
            check(False, "hurl exit status", f"{status}")

        try:
            after = api.books()
        except (OSError, RuntimeError, KeyError, TypeError, ValueError) as error:
            check(False, "log in and list the books after the suite", repr(error))
            return finish()
        ours = {i: b for i, b in after.items() if i not in before
                and run_id in (str(b.get("title")) + str(b.get("author")))}
        check(not ours, "the suite leaves no books behind",
              f"{len(ours)} left, e.g. {list(ours.values())[:3]}; deleting them")
        for book_id in ours:
            api.delete(book_id)
        if args.strict:
            appeared = sorted(set(after) - set(before) - set(ours))
            changed = sorted(i for i, b in before.items() if after.get(i) != b)
            check(not appeared and not changed, "the catalog is exactly as before the suite",
                  f"appeared {appeared[:5]}, changed or deleted {changed[:5]}")
        if skipped:
            say(f"{label}: skipped {len(skipped)} file(s): "
                + ", ".join(f"{p.name} ({'; '.join(u)})" for p, u in skipped))
        return finish()
    finally:
        if truthy(os.environ.get("HURL_KEEP")):
            say(f"{label}: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
