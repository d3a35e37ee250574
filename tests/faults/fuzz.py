#!/usr/bin/env python3
"""Schema-driven fuzzing: scripts/fuzz.sh installs schemathesis into build/venv
and runs this. Its own host (PostgreSQL: a fresh database), logged in as the
`POST /token` example of openapi.yaml (admin / password, set explicitly), then
`schemathesis run openapi.yaml --checks all --phases
examples,coverage,fuzzing,stateful` with every check on (quick: -n 50
--max-time 45, which leaves the stateful phase half its time; full: -n 2000
--max-time 600, below the token's 15-minute lifetime; FUZZ_MAX_EXAMPLES /
FUZZ_MAX_TIME / FUZZ_SEED override them). What JSON Schema cannot say
(`1999.0` is no `year`) is handled by st_hooks.py.

One test per junit testcase (each operation, and "Stateful tests"), plus:
every operation tested, the stateful phase ran, at least MIN_CASES cases,
exit status 0, the host up, no trap or panic in its log. Reports:
build/fuzz/STORE/ (junit.xml, schemathesis.log).
"""

import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import lib  # noqa: E402

VENV = lib.ROOT / "build" / "venv"
ST = VENV / "bin" / "schemathesis"
MIN_CASES = 1000  # a sanity floor: a run that did not really fuzz fails


class FuzzHost(lib.Host):
    def settings(self):
        return dict(super().settings(), LOGIN_WINDOW_SECONDS="2")


def run(ctx):
    t = ctx.tally
    quick = not ctx.full
    max_examples = os.environ.get("FUZZ_MAX_EXAMPLES") or ("50" if quick else "2000")
    max_time = os.environ.get("FUZZ_MAX_TIME") or ("45" if quick else "600")
    out_dir = lib.ROOT / "build" / "fuzz" / ctx.store
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    if not ST.exists():
        raise RuntimeError(f"{ST} missing: run scripts/fuzz.sh, which installs it")

    # The failed-login limit keeps its default (10), with a 2-second window:
    # schemathesis's wrong logins then meet 401, 429 and, once a window has
    # ended, 401 again (its example login, admin / password, gets 200 and
    # clears the count). PostgreSQL: a database of its own, so the counts of
    # 127.0.0.1 never reach the hosts of the tests that follow.
    db_url = ctx.fresh_database()
    host = FuzzHost(ctx, username="admin", password="password", db_url=db_url).start()
    token = host.token()
    junit = out_dir / "junit.xml"
    # Statuses the stored state decides, whatever the request's shape: a
    # schema-valid If-Match naming another version is 412 (before the body is
    # judged, so a bad body too), a schema-valid Idempotency-Key already used
    # for another book 422. Only added to schemathesis's defaults.
    config = out_dir / "schemathesis.toml"
    config.write_text(
        '[[operations]]\ninclude-name = ["PUT /book/{id}", "DELETE /book/{id}"]\n'
        '[operations.checks.positive_data_acceptance]\n'
        'expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "429", "5xx"]\n'
        '[operations.checks.negative_data_rejection]\n'
        'expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "412", "415", '
        '"422", "428", "429", "5xx"]\n\n'
        '[[operations]]\ninclude-name = "POST /book"\n'
        '[operations.checks.positive_data_acceptance]\n'
        'expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]\n',
        encoding="utf-8")
    cmd = [str(ST), "--no-color", "--config-file", str(config), "run", str(lib.ROOT / "openapi.yaml"),
           "--url", f"http://127.0.0.1:{host.port}",
           "-H", f"Authorization: {token}",
           "--checks", "all",
           "--phases", "examples,coverage,fuzzing,stateful",
           "--max-examples", max_examples, "--max-time", max_time,
           "--request-timeout", "30",
           "--generation-database", "none",
           "--report", "junit", "--report-junit-path", str(junit)]
    if os.environ.get("FUZZ_SEED"):
        cmd += ["--seed", os.environ["FUZZ_SEED"]]
    env = dict(os.environ)
    env["SCHEMATHESIS_HOOKS"] = "st_hooks"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ beside st_hooks.py
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent) + os.pathsep + env.get("PYTHONPATH", "")
    lib.log(f"fuzz {ctx.store}: schemathesis -n {max_examples} --max-time {max_time} "
            f"against 127.0.0.1:{host.port}")
    started = time.monotonic()
    text_log = out_dir / "schemathesis.log"
    with open(text_log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=out_dir, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        try:
            for line in proc.stdout:
                out.write(line)
                sys.stdout.write(line)
            status = proc.wait(timeout=int(max_time) + 300)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    elapsed = time.monotonic() - started
    text = text_log.read_text(encoding="utf-8", errors="replace")

    m = re.search(r"(\d+) generated(?:, (\d+) found (\d+) unique failures?)?", text)
    generated = int(m.group(1)) if m else 0
    failing = int(m.group(2) or 0) if m else 0
    unique = int(m.group(3) or 0) if m else 0
    operations = []  # (name, ok) per junit testcase: one per API operation, and "Stateful tests"
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            ok = case.find("failure") is None and case.find("error") is None
            operations.append((case.get("name"), ok))
    t.note(f"schemathesis: {generated} cases generated in {elapsed:.0f}s over {len(operations)} operations, "
           f"{failing} failing, {unique} unique failures, exit {status}")
    for name, ok in operations:
        t.check(ok, f"schemathesis: {name}", f"see {junit}")
    names = [name for name, _ in operations]
    api_ops = [n for n in names if n and n.split(" ")[0] in ("GET", "POST", "PUT", "DELETE")]
    # One operation per method line under `paths:` of openapi.yaml.
    documented = len(re.findall(r"(?m)^    (?:get|post|put|delete|patch):\s*$",
                                (lib.ROOT / "openapi.yaml").read_text(encoding="utf-8")))
    t.check(len(api_ops) == documented > 0, f"schemathesis tested all {documented} operations of openapi.yaml",
            f"{names} in {junit}")
    t.check("Stateful tests" in names, "schemathesis ran the stateful phase (API links)", f"{names}")
    t.check(generated >= MIN_CASES, f"schemathesis generated at least {MIN_CASES} cases", f"{generated}")
    t.check(status == 0, "schemathesis exits 0", f"exit status {status}; see {text_log}")
    t.check(host.serves(token), "the host is up and answers after fuzzing")
    traps = [l for l in host.tail(100000).splitlines() if "component failed" in l or "panicked" in l]
    t.check(not traps, "no trapped component or panic in the host log", "; ".join(traps[:3]))
    if ctx.store == "postgres":
        # spin-lite runs with SPIN_LITE_PG_EMPTY_QUERY_ERROR=1 (tests/launch.py):
        # a statement that returned zero rows (a hang on Spin 4.0.0-4.0.2).
        empty = [l for l in host.tail(100000).splitlines() if "pg-empty-query-error:" in l]
        t.check(not empty, "no PostgreSQL query returned zero rows", "; ".join(empty[:3]))
    host.stop()


if __name__ == "__main__":
    lib.main("fuzz", run)
