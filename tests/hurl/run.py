#!/usr/bin/env python3
"""Run the hurl suite (tests/hurl/*.hurl) against any running deployment.

    tests/hurl/run.py [--variable NAME=VALUE]... [--secret NAME=VALUE]...
                      [--report-junit FILE] [--report-html DIR]
                      [--label TEXT] [--counts FILE] [--strict] [FILE.hurl ...]

base_url, username, password and (for `# needs: secret` files, forged tokens)
secret_token each come from the first non-empty of: --variable / --secret
(the last one wins); HURL_BASE_URL, HURL_USERNAME, HURL_PASSWORD,
SECRET_TOKEN (set by `make hurl`); HURL_SECRET_<name>, HURL_VARIABLE_<name>.
Other variables reach hurl as given: HURL_VARIABLE_* / HURL_SECRET_* below
the ones computed here (run_id, login_window_seconds, ...), --variable /
--secret above them. hurl's options in the environment (HURL_VERBOSE=1, ...)
pass through. TRUSTED_PROXY_HOPS=1 (or TRUST_FORWARDED_FOR=true) runs the
`# needs: forwarded-for` files; a file whose needs are not given is skipped
and listed. LOGIN_WINDOW_SECONDS: the deployment's (default 900).

The password, the signing secret, the signed forged tokens (and their
signatures alone) and every secret given reach hurl as secrets, with the
escaped forms hurl prints in JSON bodies and curl commands, so it shows ***
instead. One test checks it after the run: no secret, JWT or capture named
*token* other than *** in hurl's output or reports (secrets only in the raw
response bodies of report store/, where issued tokens belong). The reports
asked for are copied out only when it passes. A book left carrying this
run's run_id fails the run and is deleted; --strict (a deployment nobody
else uses) also fails on any other change to the catalog. One test per
request, those a failure stopped counted as failed; the last line is
`hurl LABEL: N passed, M failed` (--counts FILE appends `N M`).
HURL_KEEP=1 keeps the temporary directory (raw bodies: tokens included).
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
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE.parent / "faults"))
from lib import forge  # noqa: E402  (the bad tokens auth_forged.hurl needs)

REQUEST_LINE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|CONNECT|TRACE) \S")
NEEDS_LINE = re.compile(r"^#\s*needs:\s*(.+?)\s*$")
KNOWN_NEEDS = {"secret", "forwarded-for"}
# The settings the runner resolves itself: hurl name, the runner's own
# environment variable, whether it is a secret.
INPUTS = (
    ("base_url", "HURL_BASE_URL", False),
    ("username", "HURL_USERNAME", False),
    ("password", "HURL_PASSWORD", True),
    ("secret_token", "SECRET_TOKEN", True),
)
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
REDACTED = "***"
MIN_SEARCHABLE = 8  # shorter secrets: their text occurs in the reports anyway
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
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            break
        match = NEEDS_LINE.match(line)
        if match:
            needs.update(n.strip() for n in match.group(1).split(",") if n.strip())
    return needs


def count_requests(path):
    return sum(1 for line in Path(path).read_text(encoding="utf-8").splitlines()
               if REQUEST_LINE.match(line))


def api(base_url, method, path, body=None, token=None):
    """The data of an API answer; raises OSError (HTTPError) unless 2xx."""
    headers = {"Content-Type": "application/json", **({"Authorization": token} if token else {})}
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base_url + path, data, headers, method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")["data"]


def list_books(base_url, username, password):
    """A fresh token (the suite may take > 15 min) and every book, by id."""
    token = api(base_url, "POST", "/token", {"username": username, "password": password})["token"]
    return token, {book["id"]: book for book in api(base_url, "GET", "/books", token=token)}


def b64url_json(segment):
    """The JSON a base64url segment encodes, or NOT_JSON."""
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return NOT_JSON


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


def computed_variables(file_root, run_id, secret):
    """The variables the runner computes: {name: (value, is_secret)}; writes
    the body files of the size limit tests into file_root."""
    now = int(time.time())
    values = {}
    for name, token in (forge(secret, now) if secret else {}).items():
        # The segments that are not JSON are signatures, made with the secret.
        signature = [s for s in token.split(".") if s and b64url_json(s) is NOT_JSON]
        values[name] = (token, bool(signature))
        # Each signature on its own too: hurl replaces secrets one after
        # another, so a token inside another one could leave it showing.
        for index, part in enumerate(signature):
            if len(part) >= 16:
                values[f"{name}_signature{index or ''}"] = (part, True)
    plain = {
        "run_id": run_id,
        # An `exp` issued during this run: now + 900 s, give or take the run.
        "exp_min": now + 900,
        "exp_max": now + 900 + 1800,
        # throttle.hurl's clients: the first three groups of an IPv6 address
        # of this run only (2001:db8::/32, the documentation range), so that
        # counts of an earlier run still in their window never meet this one.
        "client_prefix": "2001:db8:%x:" % secrets.randbits(16),
        "login_window_seconds": os.environ.get("LOGIN_WINDOW_SECONDS") or "900",
    }
    # Texts at and over the 1,000-character limit in 1-, 2- and 4-byte UTF-8,
    # each starting with the run id (the leftover check finds its book).
    for name, char, lengths in (("text", "a", (1001,)), ("wide", "\u00e9", (1000, 1001)),
                                ("astral", "\U0001F4DA", (1000, 1001))):
        for length in lengths:
            plain[f"{name}_{length}"] = run_id + char * (length - len(run_id))
    values.update((name, (str(value), False)) for name, value in plain.items())
    # Bodies at and just over the 1 MiB limit.
    for name, title, size in (("at_limit", "At Limit", 1 << 20),
                              ("over_limit", "Over Limit", (1 << 20) + 1)):
        book = '{"title": "%s %s", "author": "Padding", "year": 2024}' % (title, run_id)
        (file_root / f"{name}.json").write_text(book.ljust(size), encoding="ascii")
    return values


class LeakCheck:
    """Looks for secrets and tokens in hurl's output and reports."""

    def __init__(self, secret_values):
        self.too_short = sorted(n for n, v in secret_values.items() if len(v) < MIN_SEARCHABLE)
        self.needles = sorted(
            ((form, f"secret `{name}`" + (" (escaped)" if index else ""))
             for name, value in secret_values.items() if len(value) >= MIN_SEARCHABLE
             for index, form in enumerate(secret_forms(value))),
            key=lambda needle: -len(needle[0]))
        self.findings = {}

    def found(self, place, what):
        places = self.findings.setdefault(what, [])
        if place not in places:
            places.append(place)

    def look(self, place, text, tokens=True):
        for variant in {text, html.unescape(text)}:
            for needle, what in self.needles:
                if needle in variant:
                    self.found(place, what)
            if tokens and jwt_spans(variant):
                self.found(place, "a token (a JWT)")

    def look_at_files(self, place, path, tokens=True):
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            self.look(place, file.read_text(encoding="utf-8", errors="replace"), tokens)

    def look_at_json_report(self, text, results, store):
        """report.json as written (a secret shows there in its JSON-escaped
        form), its captures, and store/: the raw response bodies, where
        issued tokens belong, secrets not."""
        self.look("the JSON report (report.json)", text)
        for result in results:
            for entry in result.get("entries", []):
                for capture in entry.get("captures") or []:
                    name, value = capture.get("name", ""), capture.get("value")
                    if "token" in name.lower() and isinstance(value, str) and value != REDACTED:
                        self.found(f"{os.path.basename(result.get('filename', '?'))}, "
                                   f"line {entry.get('line')}",
                                   f"capture `{name}` unredacted (add `redact`)")
        if store.is_dir():
            self.look_at_files("the JSON report's store/ (response bodies)", store, tokens=False)

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
        output.append(raw.decode("utf-8", errors="replace"))
        sys.stderr.write(leaks.redact(output[-1]))
        sys.stderr.flush()
    return process.wait(), "".join(output)


def install_reports(reports):
    """Copies the reports hurl wrote into the temporary directory to where
    --report-junit / --report-html name. Returns a list of problems."""
    problems = []
    for kind, (dest, made) in reports.items():
        if not made.exists():
            problems.append(f"hurl wrote no {kind} report (for {dest})")
        elif made.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(made, dest)
        else:  # an HTML report: index.html and store/ replaced, the rest kept
            dest.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest / "store", ignore_errors=True)
            (dest / "index.html").unlink(missing_ok=True)
            shutil.copytree(made, dest, dirs_exist_ok=True)
        if made.exists():
            say(f"  wrote the {kind} report {dest}")
    return problems


def read_report(path):
    """hurl's JSON report: (its text, its results)."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    try:
        return text, json.loads(text)
    except ValueError as error:
        say(f"  no hurl report ({error})")
        return text, []


def tally_report(results, files):
    """(passed, failed) from hurl's JSON report, one test per request."""
    expected = {os.path.realpath(f): count_requests(f) for f in files}
    passed = failed = 0
    for result in results:
        name = os.path.realpath(result["filename"])
        entries = result.get("entries", [])
        ok = sum(1 for entry in entries if all(a.get("success") for a in entry.get("asserts", [])))
        bad = len(entries) - ok
        not_run = max(expected.pop(name, len(entries)) - len(entries), 0)
        if not result.get("success", False) and bad == 0 and not_run == 0:
            bad = 1  # failed without a failing request: count the file once
        passed += ok
        failed += bad + not_run
        state = "PASS" if bad + not_run == 0 else "FAIL"
        say(f"  {state} {os.path.basename(name)}: {ok} passed, {bad} failed, {not_run} not run")
    for name, count in expected.items():  # the files hurl never reported
        say(f"  FAIL {os.path.basename(name)}: not run ({count} requests)")
        failed += max(count, 1)
    return passed, failed


def resolve_settings(assignments):
    """({name: (value, origin)} of INPUTS, {name: (value, is_secret, origin)}
    of the other variables given on the command line, the same of hurl's
    environment). Raises ValueError (never holding a value) on a malformed
    assignment."""
    command_line = {}
    for kind, text in assignments:
        name, sep, value = text.partition("=")
        if not sep or not VARIABLE_NAME.match(name.strip()):
            raise ValueError(f"--{kind} expects NAME=VALUE with NAME a variable name")
        command_line[name.strip()] = (value, kind == "secret", f"--{kind}")
    if "run_id" in command_line:
        raise ValueError("run_id is the runner's own: it cannot be given")
    environment = {}
    for key, value in os.environ.items():
        for prefix, is_secret in (("HURL_VARIABLE_", False), ("HURL_SECRET_", True)):
            name = key[len(prefix):]
            # A secret of a name wins over a variable of the same name.
            if key.startswith(prefix) and VARIABLE_NAME.match(name) and (
                    is_secret or name not in environment):
                environment[name] = (value, is_secret, key)
    inputs = {}
    for name, own, _ in INPUTS:
        places = [command_line.pop(name, None), (os.environ.get(own, ""), False, own),
                  environment.pop(name, None)]
        inputs[name] = next(((value, origin) for value, _, origin in filter(None, places) if value),
                            ("", "nowhere (not given)"))
    return inputs, command_line, environment


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for kind in ("variable", "secret"):
        parser.add_argument(f"--{kind}", dest="assignments", action="append", default=[],
                            metavar="NAME=VALUE", type=lambda text, kind=kind: (kind, text),
                            help=f"a hurl {kind} (base_url, username, password, ...); repeatable")
    parser.add_argument("--report-junit", metavar="FILE", help="hurl's JUnit XML report")
    parser.add_argument("--report-html", metavar="DIR", help="hurl's HTML report")
    parser.add_argument("--label", default="")
    parser.add_argument("--counts", help="append `N M` (passed, failed) to this file")
    parser.add_argument("--strict", action="store_true",
                        help="the deployment is ours alone: the catalog must be exactly as before")
    parser.add_argument("files", nargs="*", help="hurl files (default: tests/hurl/*.hurl)")
    args = parser.parse_args()

    label = "hurl" + (f" {args.label}" if args.label else "")
    passed = failed = 0
    skipped = []

    def finish():
        for path, unmet in skipped:
            say(f"  SKIP {path.name} ({count_requests(path)} requests; needs {'; '.join(unmet)})")
        print(f"{label}: {passed} passed, {failed} failed", flush=True)
        if args.counts:
            with open(args.counts, "a", encoding="utf-8") as out:
                out.write(f"{passed} {failed}\n")
        return 0 if failed == 0 else 1

    def check(ok, name, detail=""):
        nonlocal passed, failed
        passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
        say(f"  {'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if detail and not ok else ""))
        return ok

    def catalog(when):
        try:
            return list_books(base_url, username, password)
        except (OSError, KeyError, TypeError, ValueError) as error:
            check(False, f"log in and list the books at {base_url} {when} the suite", repr(error))
            return None, None

    try:
        inputs, given_other, environment_other = resolve_settings(args.assignments)
    except ValueError as error:
        parser.error(str(error))
    base_url = inputs["base_url"][0].rstrip("/")
    username, password, secret = (inputs[name][0]
                                  for name in ("username", "password", "secret_token"))
    forwarded = (os.environ.get("TRUSTED_PROXY_HOPS", "").strip() == "1"
                 or truthy(os.environ.get("TRUST_FORWARDED_FOR")))
    missing = [name for name, value in (("base_url", base_url), ("username", username),
                                        ("password", password)) if not value]
    if missing or not re.match(r"^https?://", base_url):
        check(False, "base_url (http:// or https://), username and password given",
              f"missing: {', '.join(missing) or 'a scheme in base_url'} (run.py --help)")
        return finish()
    if shutil.which("hurl") is None:
        check(False, "hurl installed", "https://hurl.dev; scripts/ensure-tools.sh hurl")
        return finish()

    run = []
    for path in [Path(f) for f in args.files] or sorted(HERE.glob("*.hurl")):
        needs = needs_of(path)
        unmet = [text for need, met, text in (
            ("secret", secret, "secret: SECRET_TOKEN (secret_token) not given"),
            ("forwarded-for", forwarded, "forwarded-for: TRUSTED_PROXY_HOPS=1 not given"),
        ) if need in needs and not met]
        if needs - KNOWN_NEEDS:
            check(False, f"{path.name}: known `# needs:`", f"unknown {sorted(needs - KNOWN_NEEDS)}")
        elif unmet:
            skipped.append((path, unmet))
        else:
            run.append(path)
    if not run:
        check(False, "at least one hurl file to run")
        return finish()

    tmp = Path(tempfile.mkdtemp(prefix="book-hurl."))
    try:
        _, before = catalog("before")
        if before is None:
            return finish()
        run_id = "run%d%s" % (time.time(), os.urandom(3).hex())

        # Every variable hurl gets, in hurl's order: its environment, then
        # what the runner computes, then the command line.
        settings = {name: (value, is_secret)
                    for name, (value, is_secret, _) in environment_other.items()}
        settings.update(computed_variables(tmp, run_id, secret))
        for name, (value, is_secret, _) in given_other.items():
            settings[name] = (value, is_secret or settings.get(name, ("", False))[1])
        for name, _, is_secret in INPUTS:
            if inputs[name][0]:
                settings[name] = (base_url if name == "base_url" else inputs[name][0], is_secret)
        # An empty value cannot be a secret (there is nothing to hide).
        secret_values = {n: v for n, (v, s) in settings.items() if s and v}
        variables = {n: v for n, (v, s) in settings.items() if n not in secret_values}
        # All of them in hurl's environment: no file to write, any character.
        hurl_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("HURL_VARIABLE_", "HURL_SECRET_"))}
        hurl_env.update(("HURL_VARIABLE_" + name, value) for name, value in variables.items())
        for name, value in secret_values.items():
            for index, form in enumerate(secret_forms(value)):
                hurl_env[f"HURL_SECRET_{name}" + (f"_escaped{index}" if index else "")] = form
        leaks = LeakCheck(secret_values)

        reports = {kind: (Path(dest), tmp / name) for kind, dest, name in (
            ("JUnit", args.report_junit, "junit.xml"), ("HTML", args.report_html, "html")) if dest}
        command = ["hurl", "--test", "--jobs", "1", "--no-color", "--max-time", "60",
                   "--file-root", str(tmp), "--report-json", str(tmp / "report")]
        for kind, (_, made) in reports.items():
            command += [f"--report-{kind.lower()}", str(made)]
        say(f"{label}: {len(run)} files against {base_url} (run id {run_id}); "
            + ", ".join(f"{name} from {origin}" for name, (_, origin) in inputs.items()))
        status, output = run_hurl(command + [str(p) for p in run], hurl_env, leaks)
        text, results = read_report(tmp / "report" / "report.json")
        ok, bad = tally_report(results, [str(p) for p in run])
        passed += ok
        failed += bad
        if status != 0 and bad == 0:  # hurl itself failing (usage, parse error)
            check(False, "hurl exit status", f"{status}")

        # Secrets and tokens must show nowhere hurl writes.
        leaks.look("hurl's output", output)
        leaks.look_at_json_report(text, results, tmp / "report" / "store")
        for kind, (_, made) in reports.items():
            if made.exists():
                leaks.look_at_files(f"the {kind} report", made)
        if leaks.too_short:
            say(f"  NOTE not looked for in hurl's output and reports, shorter than "
                f"{MIN_SEARCHABLE} characters (hurl still hides them): {', '.join(leaks.too_short)}")
        for what, places in leaks.findings.items():
            say(f"  LEAK {what} in {'; '.join(places)}")
        if check(not leaks.findings, "no secret in hurl's output or reports",
                 f"{len(leaks.findings)} kind(s) of secret shown (LEAK lines above)"
                 + ("; the reports asked for are not written" if reports else "")):
            try:
                problems = install_reports(reports)
            except OSError as error:
                problems = [f"could not write the reports: {error}"]
            for problem in problems:
                check(False, "the reports asked for", problem)

        token, after = catalog("after")
        if after is None:
            return finish()
        ours = {i: b for i, b in after.items() if i not in before
                and run_id in (str(b.get("title")) + str(b.get("author")))}
        check(not ours, "the suite leaves no books behind",
              f"{len(ours)} left, e.g. {list(ours.values())[:3]}; deleting them")
        for book_id in ours:
            try:
                api(base_url, "DELETE", f"/book/{book_id}", token=token)
            except OSError as error:
                say(f"  could not delete book {book_id}: {error!r}")
        if args.strict:
            appeared = sorted(set(after) - set(before) - set(ours))
            changed = sorted(i for i, b in before.items() if after.get(i) != b)
            check(not appeared and not changed, "the catalog is exactly as before the suite",
                  f"appeared {appeared[:5]}, changed or deleted {changed[:5]}")
        return finish()
    finally:
        if truthy(os.environ.get("HURL_KEEP")):
            say(f"{label}: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
