#!/usr/bin/env python3
"""The hurl suite with what hurl alone cannot do.

    tests/hurl/run.py [--variable NAME=VALUE]... [--secret NAME=VALUE]...
                      [--label TEXT] [--counts FILE] [--strict] [FILE.hurl ...]

Runs tests/hurl/*.hurl and wrapped/*.hurl with their variables (forged tokens,
a fresh IPv6 /48 of clients); a wrapped file whose `# needs:` is unmet is
skipped: `secret` (SECRET_TOKEN), `forwarded-for` (TRUSTED_PROXY_HOPS=1 or
TRUST_FORWARDED_FOR=true), `accounts` (HURL_READER_USERNAME and _PASSWORD,
HURL_EDITOR_USERNAME and _PASSWORD: a reader's and an editor's logins). Then: no secret or signed token (as hurl prints
it), JWT or unredacted *token* capture in hurl's output, report or bodies; no
book a POST /book made left; --strict: the catalog exactly as before. Inputs:
--variable/--secret base_url, username, password, secret_token, else
HURL_BASE_URL, HURL_USERNAME, HURL_PASSWORD, SECRET_TOKEN; LOGIN_WINDOW_SECONDS
(900). One test per request and check; last line `hurl LABEL: N passed, M failed`.
"""

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE.parent / "faults"))
from lib import forge  # noqa: E402

INPUTS = {"base_url": "HURL_BASE_URL", "username": "HURL_USERNAME",
          "password": "HURL_PASSWORD", "secret_token": "SECRET_TOKEN"}
REQUEST_LINE = re.compile(r"^(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) \S", re.M)
NEEDS_LINE = re.compile(r"^#\s*needs:\s*(.+?)\s*$", re.M)
# A signed JWT: its header is a JSON object (`{"` in base64url is `eyJ`).
JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{16,}")
MIN_SEARCHABLE = 8  # shorter secrets: their text occurs in the reports anyway


def say(text):
    print(text, file=sys.stderr, flush=True)


def api(base_url, method, path, token=None, body=None):
    """The data of an API answer; raises OSError (HTTPError) unless 2xx."""
    headers = {"Content-Type": "application/json", **({"Authorization": token} if token else {})}
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base_url + path, data, headers, method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")["data"]


def secret_forms(value):
    """A value as hurl may print it: as is, escaped in a JSON string, and
    either quoted for a shell (curl commands: $'...' or '...')."""
    forms = []
    for form in (value, json.dumps(value, ensure_ascii=False)[1:-1]):
        for quoted in (form, form.replace("\\", "\\\\").replace("'", "\\'"),
                       form.replace("'", "'\\''")):
            if quoted and quoted not in forms:
                forms.append(quoted)
    return forms


def wrapped_variables(secret):
    """({name: value} of wrapped/'s variables, {name: value} of its secrets)."""
    variables = {"client_prefix": "2001:db8:%x:" % secrets.randbits(16),
                 "login_window_seconds": os.environ.get("LOGIN_WINDOW_SECONDS") or "900"}
    hidden = {"secret_token": secret} if secret else {}
    for name, token in (forge(secret, int(time.time())) if secret else {}).items():
        signatures = [s for s in token.split(".")[2:] if s]
        # Signed with the secret: a secret, and so is each signature on its
        # own (hurl replaces secrets one after another, so one inside
        # another could leave part of it showing).
        (hidden if signatures else variables)[name] = token
        for index, signature in enumerate(signatures):
            hidden[f"{name}_signature{index or ''}"] = signature
    return variables, hidden


def tally(results, files):
    """(passed, failed), one test per request, from hurl's JSON report."""
    expected = {os.path.realpath(f): len(REQUEST_LINE.findall(Path(f).read_text("utf-8"))) for f in files}
    passed = failed = 0
    for result in results:
        name = os.path.realpath(result["filename"])
        entries = result.get("entries", [])
        ok = sum(all(a.get("success") for a in e.get("asserts", [])) for e in entries)
        not_run = max(expected.pop(name, len(entries)) - len(entries), 0)
        bad = len(entries) - ok
        bad += not result.get("success", False) and bad + not_run == 0  # failed, no failing request
        passed, failed = passed + ok, failed + bad + not_run
        say(f"  {'FAIL' if bad + not_run else 'PASS'} {os.path.basename(name)}: "
            f"{ok} passed, {bad} failed, {not_run} not run")
    for name, count in expected.items():  # the files hurl never reported
        say(f"  FAIL {os.path.basename(name)}: not run ({count} requests)")
        failed += max(count, 1)
    return passed, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for kind in ("variable", "secret"):
        parser.add_argument(f"--{kind}", dest="given", action="append", default=[],
                            metavar="NAME=VALUE", help=f"{', '.join(INPUTS)}; repeatable")
    parser.add_argument("--label", default="")
    parser.add_argument("--counts", help="append `N M` (passed, failed) to this file")
    parser.add_argument("--strict", action="store_true",
                        help="the deployment is ours alone: the catalog must be exactly as before")
    parser.add_argument("files", nargs="*", help="default: tests/hurl/*.hurl tests/hurl/wrapped/*.hurl")
    args = parser.parse_args()
    given = dict(text.partition("=")[::2] for text in args.given)
    if set(given) - set(INPUTS):
        parser.error(f"--variable / --secret take only {', '.join(INPUTS)}")
    base_url, username, password, secret = (
        given.get(name) or os.environ.get(env, "") for name, env in INPUTS.items())
    base_url = base_url.rstrip("/")
    label = "hurl" + (f" {args.label}" if args.label else "")
    counts = [0, 0]

    def check(ok, name, detail=""):
        counts[not ok] += 1
        say(f"  {'PASS' if ok else 'FAIL'} {name}" + (f" -- {detail}" if detail and not ok else ""))
        return ok

    def finish():
        print(f"{label}: {counts[0]} passed, {counts[1]} failed", flush=True)
        if args.counts:
            with open(args.counts, "a", encoding="utf-8") as out:
                out.write(f"{counts[0]} {counts[1]}\n")
        return 0 if counts[1] == 0 else 1

    def catalog(when):
        try:
            token = api(base_url, "POST", "/token", body={"username": username, "password": password})["token"]
            return token, {book["id"]: book for book in api(base_url, "GET", "/books", token)}
        except (OSError, KeyError, TypeError, ValueError) as error:
            check(False, f"log in and list the books at {base_url} {when} the suite", repr(error))
            return None, None

    if not (re.match(r"^https?://", base_url) and username and password):
        check(False, "base_url (http:// or https://), username and password given", "run.py --help")
        return finish()
    trust = os.environ.get("TRUST_FORWARDED_FOR", "").strip().lower()
    met = {"secret": bool(secret),
           "forwarded-for": os.environ.get("TRUSTED_PROXY_HOPS", "").strip() == "1"
           or trust in ("1", "true", "yes", "on"),
           "accounts": all(os.environ.get(f"HURL_{role}_{part}") for role in ("READER", "EDITOR")
                           for part in ("USERNAME", "PASSWORD"))}
    files = [Path(f) for f in args.files] or (sorted(HERE.glob("*.hurl")) + sorted(HERE.glob("wrapped/*.hurl")))
    run = []
    for path in files:
        needs = {n.strip() for m in NEEDS_LINE.findall(path.read_text("utf-8"))
                 for n in m.split(",") if n.strip()}
        if needs - set(met):
            check(False, f"{path.name}: known `# needs:`", f"unknown {sorted(needs - set(met))}")
        elif all(met[n] for n in needs):
            run.append(path)
        else:
            say(f"  SKIP {path.name} (needs {', '.join(n for n in needs if not met[n])})")

    _, before = catalog("before")
    if before is None:
        return finish()
    variables, hidden = wrapped_variables(secret)
    hidden["password"] = password
    if met["accounts"]:
        for role in ("reader", "editor"):
            variables[f"{role}_username"] = os.environ[f"HURL_{role.upper()}_USERNAME"]
            hidden[f"{role}_password"] = os.environ[f"HURL_{role.upper()}_PASSWORD"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HURL_VARIABLE_", "HURL_SECRET_"))}
    for name, value in hidden.items():
        for index, form in enumerate(secret_forms(value)):
            env[f"HURL_SECRET_{name}" + (f"_escaped{index}" if index else "")] = form
    needles = sorted(((form, name) for name, value in hidden.items()
                      if len(value) >= MIN_SEARCHABLE for form in secret_forms(value)),
                     key=lambda n: -len(n[0]))
    command = ["hurl", "--test", "--jobs", "1", "--no-color", "--max-time", "60",
               "--variables-file", str(HERE / "example.env")]
    for name, value in dict(variables, base_url=base_url, username=username).items():
        command += ["--variable", f"{name}={value}"]
    say(f"{label}: {len(run)} files against {base_url}")
    with tempfile.TemporaryDirectory(prefix="book-hurl.") as tmp:
        report = Path(tmp) / "report"
        command += ["--report-json", str(report)]
        try:
            process = subprocess.Popen(command + [str(p) for p in run], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        except OSError as error:
            check(False, "hurl runs (https://hurl.dev; scripts/ensure-tools.sh hurl)", repr(error))
            return finish()
        output = []
        for raw in process.stdout:  # echoed with every secret and JWT as ***
            line = raw.decode("utf-8", errors="replace")
            output.append(line)
            for needle, _ in needles:
                line = line.replace(needle, "***")
            sys.stderr.write(JWT.sub("***", line))
        status = process.wait()
        try:
            results = json.loads(text := (report / "report.json").read_text("utf-8", errors="replace"))
        except (OSError, ValueError) as error:
            say(f"  no hurl report ({error!r})")
            text, results = "", []
        passed, failed = tally(results, run)
        counts[:] = counts[0] + passed, counts[1] + failed
        if status != 0 and failed == 0:
            check(False, "hurl exit status", str(status))  # hurl itself failing

        # Secrets and tokens show nowhere hurl writes.
        leaks = {}
        places = [("hurl's output", "".join(output), True), ("the JSON report", text, True)]
        places += [("store/ (response bodies)", f.read_text("utf-8", errors="replace"), False)
                   for f in sorted((report / "store").glob("*")) if f.is_file()]
        for place, content, tokens in places:
            for needle, name in needles:
                if needle in content:
                    leaks.setdefault(f"secret `{name}`", set()).add(place)
            if tokens and JWT.search(content):
                leaks.setdefault("a token (a JWT)", set()).add(place)
        created = set()
        for result in results:
            for entry in result.get("entries", []):
                for capture in entry.get("captures") or []:
                    name, value = capture["name"], capture.get("value")
                    if "token" in name.lower() and value not in ("***", None):
                        leaks.setdefault(f"capture `{name}` unredacted (add `redact`)", set()).add(
                            f"{Path(result['filename']).name}, line {entry['line']}")
                for call in entry.get("calls", []):
                    request, response = call["request"], call["response"]
                    if (request["method"], request["url"].split("?")[0], response["status"]) == \
                            ("POST", base_url + "/book", 201):
                        body = json.loads((report / response["body"]).read_text("utf-8"))
                        created.add(body["data"]["id"])
        for what, where in leaks.items():
            say(f"  LEAK {what} in {'; '.join(sorted(where))}")
        check(not leaks, "no secret in hurl's output or JSON report", f"{len(leaks)} kind(s) shown")

    token, after = catalog("after")
    if after is None:
        return finish()
    left = sorted(created & set(after))
    check(not left, f"the suite leaves none of the {len(created)} books it created",
          f"{len(left)} left, e.g. {[after[i] for i in left[:3]]}; deleting them")
    for book_id in left:
        try:
            api(base_url, "DELETE", f"/book/{book_id}", token)
        except OSError as error:
            say(f"  could not delete book {book_id}: {error!r}")
    if args.strict:
        appeared = sorted(set(after) - set(before) - set(left))
        changed = sorted(i for i, b in before.items() if after.get(i) != b)
        check(not appeared and not changed, "the catalog is exactly as before the suite",
              f"appeared {appeared[:5]}, changed or deleted {changed[:5]}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
