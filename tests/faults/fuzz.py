#!/usr/bin/env python3
"""Schema-driven fuzzing (scripts/fuzz.sh installs schemathesis, then runs
this): its own host (admin / password, openapi.yaml's login example), then
`schemathesis run openapi.yaml --checks all` over the phases examples,
coverage, fuzzing, stateful (quick: -n 50 --max-time 45; full: -n 2000
--max-time 600; FUZZ_MAX_EXAMPLES, FUZZ_MAX_TIME, FUZZ_SEED override).
st_hooks.py handles what JSON Schema cannot say. One test per junit case,
plus: every operation tested, the stateful phase ran, at least MIN_CASES
cases, exit 0, the host up, no trap or panic logged. Reports: build/fuzz/STORE/.
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


def run(ctx):
    t = ctx.tally
    max_examples = os.environ.get("FUZZ_MAX_EXAMPLES") or ("2000" if ctx.full else "50")
    max_time = os.environ.get("FUZZ_MAX_TIME") or ("600" if ctx.full else "45")
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
    host = ctx.host(username="admin", password="password", db_url=ctx.fresh_database())
    host.own_settings["LOGIN_WINDOW_SECONDS"] = "2"
    host.start()
    token = host.token()
    junit = out_dir / "junit.xml"
    # Statuses the stored state decides, whatever the request's shape: a
    # schema-valid If-Match naming another version is 412 (before the body is
    # judged, so a bad body too), a schema-valid Idempotency-Key already used
    # for another book 422, a restore of a live book 409. Only added to
    # schemathesis's defaults.
    config = out_dir / "schemathesis.toml"
    config.write_text(
        '[[operations]]\ninclude-name = ["PUT /book/{id}", "DELETE /book/{id}", "POST /book/{id}/restore"]\n'
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
           "--url", host.base_url, "-H", f"Authorization: {token}", "--checks", "all",
           "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", max_examples,
           "--max-time", max_time, "--request-timeout", "30", "--generation-database", "none",
           "--report", "junit", "--report-junit-path", str(junit)]
    if os.environ.get("FUZZ_SEED"):
        cmd += ["--seed", os.environ["FUZZ_SEED"]]
    # PYTHONDONTWRITEBYTECODE: no __pycache__ beside st_hooks.py.
    env = dict(os.environ, SCHEMATHESIS_HOOKS="st_hooks", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(Path(__file__).resolve().parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
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
    generated, failing, unique = (int(g or 0) for g in (m.groups() if m else (0, 0, 0)))
    # (name, ok) per junit testcase: one per API operation, and "Stateful tests".
    operations = [(case.get("name"), case.find("failure") is None and case.find("error") is None)
                  for case in (ET.parse(junit).getroot().iter("testcase") if junit.exists() else [])]
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
    log = host.tail(100000).splitlines()
    traps = [l for l in log if "component failed" in l or "panicked" in l]
    t.check(not traps, "no trapped component or panic in the host log", "; ".join(traps[:3]))
    if ctx.store == "postgres":
        # spin-lite runs with SPIN_LITE_PG_EMPTY_QUERY_ERROR=1 (tests/launch.py):
        # a statement that returned zero rows (a hang on Spin 4.0.0-4.0.2).
        empty = [l for l in log if "pg-empty-query-error:" in l]
        t.check(not empty, "no PostgreSQL query returned zero rows", "; ".join(empty[:3]))
    host.stop()


if __name__ == "__main__":
    lib.main("fuzz", run)
