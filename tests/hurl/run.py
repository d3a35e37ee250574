#!/usr/bin/env python3
"""Run the hurl suite (tests/hurl/*.hurl) against any running deployment.

    tests/hurl/run.py [--base-url URL] [--variable NAME=VALUE] [--secret NAME=VALUE]
                      [--variables-file FILE] [--secrets-file FILE]
                      [--report-junit FILE] [--report-html DIR]
                      [--verbose | --very-verbose] [--label TEXT] [--counts FILE]
                      [--strict] [FILE.hurl ...]

What the suite needs, by hurl variable name:
  base_url      the deployment, e.g. https://books.example.com
  username      the login name the deployment is configured with
  password      its password (always a secret)
  secret_token  optional: the signing secret (always a secret). Without it the
                files that start with `# needs: secret` (forged tokens) are
                skipped and listed.
Each is taken from the first of these that gives it a non-empty value:
  1. run.py's command line, as hurl takes it: --variable NAME=VALUE or
     --secret NAME=VALUE (the last one given wins; --base-url URL is
     --variable base_url=URL, and both given must agree); then the NAME=VALUE
     lines of --variables-file / --secrets-file FILE (hurl's format);
  2. the runner's environment, which `make hurl` sets from its variables
     BASE_URL, USERNAME, PASSWORD and SECRET_TOKEN:
     HURL_BASE_URL, HURL_USERNAME, HURL_PASSWORD, SECRET_TOKEN;
  3. hurl's own environment variables: HURL_VARIABLE_base_url,
     HURL_VARIABLE_username, HURL_SECRET_password then HURL_VARIABLE_password,
     HURL_SECRET_secret_token then HURL_VARIABLE_secret_token.
Any other variable or secret reaches hurl as given, in hurl's order:
HURL_VARIABLE_* / HURL_SECRET_* below the variables the runner computes
(run_id, login_window_seconds, ...), the command line above them (run_id
excepted). hurl's other environment options (HURL_VERBOSE, ...) pass through.

Other settings (environment):
  TRUSTED_PROXY_HOPS=1  the deployment trusts one proxy in front of it
                  (TRUSTED_PROXY_HOPS=1, or the older TRUST_FORWARDED_FOR=true),
                  so the last X-Forwarded-For entry names the client: files
                  with `# needs: forwarded-for` run; else skipped.
  LOGIN_WINDOW_SECONDS  the deployment's failed-login window (default 900).

A file declares what it needs in its first comment lines:
  # needs: secret
  # needs: forwarded-for        (or both: `# needs: secret, forwarded-for`)

Secrets. The password, the signing secret, every token forged with it
(tests/faults/lib.py's forge; all but the unsigned ones, and their signature
segments on their own) and every secret given reach hurl as secrets
(HURL_SECRET_NAME in its environment, never on a command line), the password
also as hurl writes it escaped in a JSON body and a curl command; and every
token a response carries is captured with `redact` in the .hurl files. hurl
prints *** in their place in its output (--verbose, --very-verbose too) and
its reports. The runner checks it after the run, as one test ("no secret in
hurl's output or reports"): it fails, naming what and where but never
showing it, when hurl's output, the JSON report (report.json), the JUnit or
the HTML report holds a secret (any form above), a token (a JWT: three
base64url segments, the first a JSON header) or a capture named *token*
whose value is not ***; in the JSON report's store/ (the raw response
bodies, where issued tokens belong) it looks for the secrets only. A secret
shorter than 8 characters cannot be looked for (its characters occur
anyway; hurl still hides it): the runner says so. hurl's output is echoed
with what the runner knows of the secrets replaced by ***.

Reports: --report-junit FILE and --report-html DIR (e.g. build/hurl-junit.xml,
build/hurl-html/; `make hurl REPORT_JUNIT=... REPORT_HTML=...`; default none)
are written by hurl into the temporary directory and copied to FILE / DIR
(replacing DIR's index.html and store/) only when the secret check passes.

The suite leaves no books behind: every file deletes the books it creates.
The runner checks it: the catalog is listed before and after the suite, and
a book that appeared during the run and carries this run's id (`run_id`, in
every title the suite writes) is reported as a failure and then deleted.
--strict (for a deployment nobody else uses, like the hosts of tests/e2e.py)
also fails on any other change to the catalog.

One test per request: a request passes when all its asserts pass; requests
a failure stopped before they ran count as failed. The last line is
`hurl LABEL: N passed, M failed`; --counts FILE appends `N M` to FILE.
Exit status 0 only when nothing failed. HURL_KEEP=1 keeps the temporary
directory (variables, hurl's reports; the JSON report's store/ holds the
raw response bodies, issued tokens included).

Standard library only; needs hurl 8.x on PATH.
"""

import argparse
import base64
import html
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
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE.parent / "faults"))
from lib import forge  # noqa: E402  (the bad tokens auth_forged.hurl needs)

REQUEST_LINE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|CONNECT|TRACE) \S")
NEEDS_LINE = re.compile(r"^#\s*needs:\s*(.+?)\s*$")
KNOWN_NEEDS = {"secret", "forwarded-for"}

# The settings the runner resolves itself (see the docstring): hurl name, the
# runner's own environment variable, and whether it is a secret.
INPUTS = (
    ("base_url", "HURL_BASE_URL", False),
    ("username", "HURL_USERNAME", False),
    ("password", "HURL_PASSWORD", True),
    ("secret_token", "SECRET_TOKEN", True),
)
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
REDACTED = "***"
# Shorter secrets are not looked for in the reports: their text occurs anyway.
MIN_SEARCHABLE = 8
# A JWT: three base64url segments, the first a JSON header (checked apart).
# A lookahead, so that candidates may overlap ("x.HEADER.CLAIMS.SIGNATURE").
JWT = re.compile(r"(?<![A-Za-z0-9_-])(?=([A-Za-z0-9_-]{4,})\.([A-Za-z0-9_-]{2,})\.([A-Za-z0-9_-]{16,}))")
NOT_JSON = object()


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


def b64url_json(segment):
    """The JSON a base64url segment encodes, or NOT_JSON."""
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return NOT_JSON


def key_material(token):
    """The segments of a token that are not JSON: signatures, made with the
    signing secret (or a key derived from it). An unsigned token has none."""
    return [s for s in token.split(".") if s and b64url_json(s) is NOT_JSON]


def jwt_spans(text):
    """(start, end) of every JWT in text."""
    spans = []
    for match in JWT.finditer(text):
        header = b64url_json(match.group(1))
        if isinstance(header, dict) and ("alg" in header or "typ" in header):
            end = match.start() + sum(len(g) for g in match.groups()) + 2
            if not spans or match.start() >= spans[-1][1]:
                spans.append((match.start(), end))
    return spans


def secret_forms(value):
    """A value as hurl may print it: as is, escaped in a JSON string (a JSON
    body), and either of those quoted for a shell (curl commands: $'...' or
    '...')."""
    forms = []
    for form in (value, json.dumps(value, ensure_ascii=False)[1:-1]):
        for quoted in (form, form.replace("\\", "\\\\").replace("'", "\\'"),
                       form.replace("'", "'\\''")):
            if quoted and quoted not in forms:
                forms.append(quoted)
    return forms


def computed_variables(file_root, username, password, run_id, secret):
    """The variables the runner computes: {name: (value, is_secret)}; writes
    the body files of the size limit tests into file_root."""
    values = {}
    if secret:
        for name, token in forge(secret, int(time.time())).items():
            signature = key_material(token)
            values[name] = (token, bool(signature))
            # Each signature on its own too: hurl replaces secrets one after
            # another, so a token inside another one could leave it showing.
            for index, part in enumerate(signature):
                if len(part) >= 16:
                    values[f"{name}_signature{index or ''}"] = (part, True)
    now = int(time.time())
    lines = {
        "run_id": run_id,
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
    for name, value in lines.items():
        values[name] = (str(value), name == "password_prefix")
    # Bodies at and just over the 1 MiB limit.
    book = '{"title": "At Limit %s", "author": "Padding", "year": 2024}' % run_id
    (file_root / "at_limit.json").write_text(book.ljust(1024 * 1024), encoding="ascii")
    over = '{"title": "Over Limit %s", "author": "Padding", "year": 2024}' % run_id
    (file_root / "over_limit.json").write_text(over.ljust(1024 * 1024 + 1), encoding="ascii")
    return values


def write_variables(path, variables):
    with open(path, "w", encoding="utf-8") as out:
        os.chmod(path, 0o600)
        for name, value in variables.items():
            out.write(f"{name}={value}\n")


def hurl_secrets(base):
    """What hurl gets as secrets: each one, and each other form of it."""
    result = dict(base)
    for name, value in base.items():
        for index, form in enumerate(secret_forms(value)[1:], 1):
            result[f"{name}_escaped{index}"] = form
    return result


class LeakCheck:
    """Looks for secrets and tokens in hurl's output and reports."""

    def __init__(self, secret_values):
        self.needles = []
        self.too_short = sorted(n for n, v in secret_values.items() if len(v) < MIN_SEARCHABLE)
        for name, value in secret_values.items():
            if len(value) >= MIN_SEARCHABLE:
                for index, form in enumerate(secret_forms(value)):
                    self.needles.append((form, f"secret `{name}`" + (" (escaped)" if index else "")))
        self.needles.sort(key=lambda needle: -len(needle[0]))
        self.findings = {}

    def found(self, place, what):
        self.findings.setdefault(what, [])
        if place not in self.findings[what]:
            self.findings[what].append(place)

    def look(self, place, text, tokens=True):
        for variant in {text, html.unescape(text)}:
            for needle, what in self.needles:
                if needle in variant:
                    self.found(place, what)
            if tokens and jwt_spans(variant):
                self.found(place, "a token (a JWT)")

    def look_at_json_report(self, report_dir):
        place = "the JSON report (report.json)"
        path = report_dir / "report.json"
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        try:
            report = json.loads(text)
        except ValueError:
            self.look(place, text)
            return

        def strings(node):
            if isinstance(node, str):
                yield node
            elif isinstance(node, dict):
                for key, value in node.items():
                    yield key
                    yield from strings(value)
            elif isinstance(node, list):
                for value in node:
                    yield from strings(value)

        self.look(place, "\n".join(strings(report)))
        for result in report if isinstance(report, list) else []:
            for entry in result.get("entries", []):
                for capture in entry.get("captures") or []:
                    name, value = capture.get("name", ""), capture.get("value")
                    if "token" in name.lower() and isinstance(value, str) and value != REDACTED:
                        self.found(f"{os.path.basename(result.get('filename', '?'))}, "
                                   f"line {entry.get('line')}",
                                   f"capture `{name}` unredacted (add `redact`)")
        # The raw response bodies: issued tokens belong there, secrets not.
        store = report_dir / "store"
        if store.is_dir():
            for body in sorted(p for p in store.rglob("*") if p.is_file()):
                self.look("the JSON report's store/ (response bodies)",
                          body.read_text(encoding="utf-8", errors="replace"), tokens=False)

    def look_at_tree(self, place, path):
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            self.look(place, file.read_text(encoding="utf-8", errors="replace"))

    def redact(self, text):
        for needle, _ in self.needles:
            text = text.replace(needle, REDACTED)
        for start, end in reversed(jwt_spans(text)):
            text = text[:start] + REDACTED + text[end:]
        return text


def run_hurl(command, env, leaks):
    """Runs hurl, echoing its output (stdout and stderr) redacted; returns
    (exit status, the output as hurl wrote it)."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env)
    output = []
    for raw in process.stdout:
        line = raw.decode("utf-8", errors="replace")
        output.append(line)
        sys.stderr.write(leaks.redact(line))
        sys.stderr.flush()
    return process.wait(), "".join(output)


def install_reports(junit, html_dir, args):
    """Copies the reports hurl wrote into the temporary directory to where
    --report-junit / --report-html name. Returns a list of problems."""
    problems = []
    if args.report_junit:
        dest = Path(args.report_junit)
        if not junit.is_file():
            problems.append(f"hurl wrote no JUnit report (for {dest})")
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            partial = dest.with_name(dest.name + ".partial")
            shutil.copyfile(junit, partial)
            os.replace(partial, dest)
            say(f"  wrote the JUnit report {dest}")
    if args.report_html:
        dest = Path(args.report_html)
        if not (html_dir / "index.html").is_file():
            problems.append(f"hurl wrote no HTML report (for {dest})")
        else:
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("index.html", "store"):
                old = dest / name
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old)
                elif old.exists() or old.is_symlink():
                    old.unlink()
            shutil.copytree(html_dir, dest, dirs_exist_ok=True)
            say(f"  wrote the HTML report {dest / 'index.html'}")
    return problems


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


def read_assignments(path, secret):
    """hurl's variables / secrets file: NAME=VALUE lines, `#` comments."""
    option = "--secrets-file" if secret else "--variables-file"
    pairs = []
    with open(path, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, value = line.partition("=")
            name = name.strip()
            if not sep or not VARIABLE_NAME.match(name):
                raise ValueError(f"{option} {path}, line {number}: expected NAME=VALUE")
            pairs.append((name, value.strip(), secret, f"{option} {path}"))
    return pairs


def resolve_settings(args):
    """({name: (value, origin)} of INPUTS, {name: (value, is_secret, origin)}
    of the other variables given on the command line, the same from hurl's
    environment). Raises ValueError on a malformed or conflicting setting;
    its text never holds a value."""
    given = []  # (name, value, is_secret, origin), lowest precedence first
    for path in args.variables_files or []:
        given += read_assignments(path, False)
    for path in args.secrets_files or []:
        given += read_assignments(path, True)
    for kind, text in args.assignments or []:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not VARIABLE_NAME.match(name):
            raise ValueError(f"--{kind} expects NAME=VALUE with NAME a variable name")
        given.append((name, value, kind == "secret", f"--{kind}"))
    command_line = {}
    for name, value, is_secret, origin in given:
        command_line[name] = (value, is_secret, origin)
    if args.base_url:
        if command_line.get("base_url", ("",))[0] not in ("", args.base_url):
            raise ValueError("--base-url and --variable base_url= differ")
        command_line["base_url"] = (args.base_url, False, "--base-url")

    environment = {}
    for key, value in os.environ.items():
        for prefix, is_secret in (("HURL_VARIABLE_", False), ("HURL_SECRET_", True)):
            if key.startswith(prefix) and VARIABLE_NAME.match(key[len(prefix):]):
                name = key[len(prefix):]
                # A secret of a name wins over a variable of the same name.
                if is_secret or name not in environment:
                    environment[name] = (value, is_secret, key)

    inputs = {}
    for name, own, _ in INPUTS:
        places = [command_line.pop(name, None), (os.environ.get(own, ""), False, own),
                  environment.pop(name, None)]
        inputs[name] = next(((value, origin) for value, _, origin in filter(None, places) if value),
                            ("", "nowhere (not given)"))
    if "run_id" in command_line:
        raise ValueError("run_id is the runner's own: it cannot be given")
    return inputs, command_line, environment


def main():
    parser = argparse.ArgumentParser(
        description="Run tests/hurl/*.hurl against a running deployment.",
        epilog="base_url, username, password and the optional secret_token come from "
               "--variable/--secret, then HURL_BASE_URL / HURL_USERNAME / HURL_PASSWORD / "
               "SECRET_TOKEN, then HURL_VARIABLE_* / HURL_SECRET_* (see the module docstring).")
    parser.add_argument("--base-url", default="", help="the deployment (as --variable base_url=URL)")
    parser.add_argument("--variable", dest="assignments", action="append", metavar="NAME=VALUE",
                        type=lambda text: ("variable", text),
                        help="a hurl variable (base_url, username, ...); repeatable")
    parser.add_argument("--secret", dest="assignments", action="append", metavar="NAME=VALUE",
                        type=lambda text: ("secret", text),
                        help="a hurl secret (password, secret_token, ...); repeatable")
    parser.add_argument("--variables-file", dest="variables_files", action="append",
                        metavar="FILE", help="hurl variables, NAME=VALUE lines")
    parser.add_argument("--secrets-file", dest="secrets_files", action="append",
                        metavar="FILE", help="hurl secrets, NAME=VALUE lines")
    parser.add_argument("--report-junit", metavar="FILE",
                        help="write hurl's JUnit XML report there (e.g. build/hurl-junit.xml)")
    parser.add_argument("--report-html", metavar="DIR",
                        help="write hurl's HTML report there (e.g. build/hurl-html/)")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true", help="hurl --verbose")
    verbosity.add_argument("--very-verbose", action="store_true", help="hurl --very-verbose")
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

    try:
        inputs, given_other, environment_other = resolve_settings(args)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    base_url = inputs["base_url"][0].rstrip("/")
    username = inputs["username"][0]
    password = inputs["password"][0]
    secret = inputs["secret_token"][0]
    forwarded = (os.environ.get("TRUSTED_PROXY_HOPS", "").strip() == "1"
                 or truthy(os.environ.get("TRUST_FORWARDED_FOR")))
    missing = [name for name, value in (("base_url", base_url), ("username", username),
                                        ("password", password)) if not value]
    if missing or not re.match(r"^https?://", base_url):
        say(f"{label}: set base_url (http:// or https://), username and password "
            f"(missing: {', '.join(missing) or 'a scheme in base_url'}); "
            "e.g. make hurl BASE_URL=http://127.0.0.1:8080 USERNAME=admin PASSWORD=..., "
            "or HURL_VARIABLE_base_url, HURL_VARIABLE_username and HURL_SECRET_password, "
            "or run.py --variable base_url=... --variable username=... --secret password=...")
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
            unmet.append("secret: SECRET_TOKEN (secret_token) not given")
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

        # Every variable hurl gets, in hurl's order: its environment, then
        # what the runner computes, then the command line.
        settings = {name: (value, is_secret) for name, (value, is_secret, _) in environment_other.items()}
        settings.update(computed_variables(tmp, username, password, run_id, secret))
        runner_secrets = {name for name, (_, is_secret) in settings.items() if is_secret}
        for name, (value, is_secret, _) in given_other.items():
            settings[name] = (value, is_secret or name in runner_secrets)
        for name, _, is_secret in INPUTS:
            if name != "base_url" and inputs[name][0]:  # base_url: on hurl's command line
                settings[name] = (inputs[name][0], is_secret)
        # An empty value cannot be a secret (there is nothing to hide).
        secret_values = {n: v for n, (v, s) in settings.items() if s and v}
        variables = {n: v for n, (v, s) in settings.items() if n not in secret_values}
        if any("\n" in v or "\r" in v for v in variables.values()):
            check(False, "variables without line breaks (a variables file holds them)")
            return finish()
        variables_file = tmp / "variables.env"
        write_variables(variables_file, variables)
        hurl_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("HURL_VARIABLE_", "HURL_SECRET_"))}
        for name, value in hurl_secrets(secret_values).items():
            hurl_env["HURL_SECRET_" + name] = value
        leaks = LeakCheck(secret_values)

        report = tmp / "report"
        junit = tmp / "junit.xml"
        html_dir = tmp / "html"
        command = ["hurl", "--test", "--jobs", "1", "--no-color", "--max-time", "60",
                   "--file-root", str(tmp), "--variables-file", str(variables_file),
                   "--variable", f"base_url={base_url}", "--report-json", str(report)]
        if args.report_junit:
            command += ["--report-junit", str(junit)]
        if args.report_html:
            command += ["--report-html", str(html_dir)]
        if args.verbose:
            command.append("--verbose")
        if args.very_verbose:
            command.append("--very-verbose")
        say(f"{label}: {len(run)} files against {base_url} (run id {run_id}); "
            + ", ".join(f"{name} from {origin}" for name, (_, origin) in inputs.items()))
        status, output = run_hurl(command + [str(p) for p in run], hurl_env, leaks)
        # hurl: 0 all passed, 3 runtime error, 4 assert error; anything else
        # is hurl itself failing (usage, parse error).
        ok, bad = tally_report(report / "report.json", [str(p) for p in run])
        passed += ok
        failed += bad
        if status != 0 and bad == 0:
            check(False, "hurl exit status", f"{status}")

        # Secrets and tokens must show nowhere hurl writes.
        leaks.look("hurl's output", output)
        leaks.look_at_json_report(report)
        if args.report_junit and junit.is_file():
            leaks.look_at_tree("the JUnit report", junit)
        if args.report_html and html_dir.is_dir():
            leaks.look_at_tree("the HTML report", html_dir)
        if leaks.too_short:
            say(f"  NOTE not looked for in hurl's output and reports, shorter than "
                f"{MIN_SEARCHABLE} characters (hurl still hides them): {', '.join(leaks.too_short)}")
        for what, places in leaks.findings.items():
            say(f"  LEAK {what} in {'; '.join(places)}")
        if check(not leaks.findings, "no secret in hurl's output or reports",
                 f"{len(leaks.findings)} kind(s) of secret shown (LEAK lines above)"
                 + ("; the reports asked for are not written"
                    if args.report_junit or args.report_html else "")):
            try:
                problems = install_reports(junit, html_dir, args)
            except OSError as error:
                problems = [f"could not write the reports: {error}"]
            for problem in problems:
                check(False, "the reports asked for", problem)

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
