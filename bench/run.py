#!/usr/bin/env python3
"""The load benchmark (`make bench`): serves the API in each comparator on
127.0.0.1 (the Spin hosts through tests/launch.py, as the tests do) and
drives it with wrk (bench/wrk.lua). bench/README.md says what each figure
means and lists the knobs. Output: build/bench/runs.jsonl (a line a run) and
build/bench/results.md (the table)."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections import namedtuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import launch  # noqa: E402  (tests/launch.py: the one host launcher)
sys.path.insert(0, str(ROOT / "tests/faults"))
import lib  # noqa: E402  (its request(): headers and time of an answer)

OUT = ROOT / "build/bench"
WASM = os.environ.get("BENCH_WASM")
WASM_B = os.environ.get("BENCH_WASM_B")  # an A/B: each component comparator's "-b" twin serves it
# An A/B: each comparator's "-b" twin has this many accounts and is measured
# with the last one's token (an editor's, the last found).
ACCOUNTS = int(os.environ.get("BENCH_ACCOUNTS", "0"))
DURATION = int(os.environ.get("BENCH_DURATION", "2"))
CONCURRENCY = os.environ.get("BENCH_CONCURRENCY", "1 16 64").split()
SCENARIOS = os.environ.get("BENCH_SCENARIOS", "token get post postkey put putwalk putif delete mix").split()
LISTS = os.environ.get("BENCH_LISTS", "1") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
# Catalog sizes: when set, each server is measured at each size instead (catalog()).
CATALOG = [int(n) for n in os.environ.get("BENCH_CATALOG", "").split()]
TRANSFER = int(os.environ.get("BENCH_TRANSFER", "0"))
# SQLite's durability policies (sqlite_synchronous): each component comparator
# serves SQLite once per policy, named COMPARATOR/POLICY but for normal's.
SYNCHRONOUS = os.environ.get("BENCH_SYNCHRONOUS", "normal full").split()
# BENCH_LITESTREAM=1: each SQLite host has a twin, COMPARATOR/litestream, that
# Litestream replicates as docs/operations.md runs it (deploy/litestream/).
LITESTREAM = os.environ.get("BENCH_LITESTREAM") == "1"
# BENCH_FEED=1: the change feed's figures instead (feed()).
FEED = os.environ.get("BENCH_FEED") == "1"
FOLLOWERS, WAKES = 100, 50
USER, PASSWORD = "bench", "bench-password"
# TRUSTED_PROXY_HOPS=1: the token scenario names a client of its own per login.
SETTINGS = {"AUTH_USERNAME": USER, "AUTH_PASSWORD": PASSWORD, "TRUSTED_PROXY_HOPS": "1"}
BOOKS = 10_000
WRITES = {"get": "`GET /book/{id}` (a read, for reference)", "post": "`POST /book`",
          "postkey": "keyed `POST /book`", "put": "`PUT /book/{id}`",
          "delete": "`DELETE /book/{id}`", "token": "`POST /token`"}

POSTGRES_PID = None  # the throwaway cluster's postmaster: its CPU a request is counted too
LITESTREAM_PIDS = {}  # by the base URL of the host it replicates: its CPU a request too

# A server under test: who it is, where it answers, whose CPU is counted.
Target = namedtuple("Target", "comparator store base pid login")


def log(text):
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def proc_tree(pid):
    """(CPU ticks, context switches) of `pid` and its descendants."""
    ticks = switches = 0
    for p in launch.process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
            for task in os.listdir(f"/proc/{p}/task"):
                for line in Path(f"/proc/{p}/task/{task}/status").read_text().splitlines():
                    if "ctxt_switches:" in line:  # voluntary and not
                        switches += int(line.split()[1])
        except OSError:
            pass
    return ticks, switches


def run_wrk(target, scenario, concurrency, script=None, **env):
    """One wrk run of `scenario` (bench/wrk.lua's `script`, by default the
    scenario itself); appends its figures to runs.jsonl."""
    threads = "1" if int(concurrency) < 2 else "2"
    env = dict(os.environ, BENCH_SCENARIO=script or scenario, BENCH_THREADS=threads,
               **{k: str(v) for k, v in env.items()})
    before, db_before = proc_tree(target.pid), proc_tree(POSTGRES_PID) if target.store == "postgres" else None
    ls_pid = LITESTREAM_PIDS.get(target.base)
    ls_before = proc_tree(ls_pid) if ls_pid else None
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{DURATION}s", "--timeout", "10s",
                          "-s", str(ROOT / "bench/wrk.lua"), target.base],
                         env=env, capture_output=True, text=True, timeout=DURATION + 60).stdout
    after, db_after = proc_tree(target.pid), proc_tree(POSTGRES_PID) if target.store == "postgres" else None
    line = next((l[6:] for l in out.splitlines() if l.startswith("BENCH ")), None)
    name = f"{target.comparator}/{target.store}"
    if line is None:
        log(f"{name} {scenario} c{concurrency}: wrk gave no result:\n{out}")
        return
    run = dict(json.loads(line), comparator=target.comparator, store=target.store, scenario=scenario,
               concurrency=int(concurrency))
    requests = max(run["requests"], 1)
    run["cpu_us"] = (after[0] - before[0]) / os.sysconf("SC_CLK_TCK") * 1e6 / requests
    run["switches"] = (after[1] - before[1]) / requests
    if db_before:  # the whole cluster's: its other databases idle meanwhile
        run["db_cpu_us"] = (db_after[0] - db_before[0]) / os.sysconf("SC_CLK_TCK") * 1e6 / requests
    if ls_before:
        run["litestream_cpu_us"] = (proc_tree(ls_pid)[0] - ls_before[0]) / os.sysconf("SC_CLK_TCK") * 1e6 / requests
    with open(OUT / "runs.jsonl", "a") as f:
        f.write(json.dumps(run) + "\n")
    log(f"  {name:<18} {scenario:<9} c{concurrency:<3} {run['rps']:>8.0f} req/s"
        f"  p99 {run['p99_us'] / 1000:7.2f} ms  cpu {run['cpu_us']:7.1f} us/req  switches {run['switches']:5.2f}/req"
        f"  errors {run['errors']} (non-2xx {run['non2xx']})"
        + (f"  Litestream's cpu {run['litestream_cpu_us']:.1f} us/req" if ls_before else ""))


def request(base, method, path, body=None, token=""):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data, method=method,
                                 headers={"Content-Type": "application/json", "Authorization": token})
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.load(answer)


def prepare(target, state_dir, pg_url):
    """Its token for wrk, the component's tables, BOOKS books; the Store."""
    user, password = target.login
    token = request(target.base, "POST", "/token", {"username": user, "password": password})["data"]["token"]
    TOKENS[target] = dict(BENCH_TOKEN=token, BENCH_USER=user, BENCH_PASS=password)
    request(target.base, "GET", "/books?limit=1", token=token)  # the component creates its tables
    books = launch.BookStore(pg_url, state_dir)
    books.ensure(BOOKS)
    return books


TOKENS = {}  # each Target's login, as wrk.lua reads it


def measure(servers):
    """Every scenario at every concurrency against each server (its Target,
    state directory and PostgreSQL URL). With several (stores, policies, an
    A/B), each cell runs on each back to back, the order flipped each cell,
    so all see the same load."""
    targets = [target for target, _, _ in servers]
    turn = 0

    def cell(scenario, c, script=None, seed=None, **env):
        nonlocal turn
        turn += 1
        for target in targets[::-1] if turn % 2 == 0 else targets:
            if seed:  # a fresh book for every request the run can make
                count = 20_000 * DURATION + 5_000
                env.update(BENCH_DELETE_FIRST=books[target].add(count, gap=1000), BENCH_DELETE_COUNT=count)
            run_wrk(target, scenario, c, script=script, **env, **TOKENS[target])

    os.environ.update(BENCH_IDS=str(BOOKS))
    books = {target: prepare(target, state_dir, pg_url) for target, state_dir, pg_url in servers}
    if CATALOG:
        return catalog(targets, books)
    if TRANSFER:
        return transfer(targets)
    cell("warm-up", 16, script="get")
    for scenario in SCENARIOS:
        for c in CONCURRENCY:
            cell(scenario, c, seed=scenario in ("delete", "putwalk", "putif"), BENCH_NONCE=f"{time.time_ns():x}")
    if not LISTS:
        return
    for store in books.values():
        store.sql("DELETE FROM books")
    for n, scenario, script, after in [(100, "list100", "list", ""), (1000, "list1k", "list", ""),
                                       (BOOKS, "page", "page", ""), (BOOKS, "pagedeep", "page", "9800"),
                                       (BOOKS, "list10k", "list", "")]:
        for store in books.values():
            store.ensure(n)
        for c in CONCURRENCY:
            cell(scenario, c, script=script, BENCH_PAGE_AFTER=after)


# What catalog() times at each size n: (label, query, books answered). The
# rare title is one seeded book's; the rare author's 3 books are the newest.
CATALOG_QUERIES = [("title, 1 match", "title=Title%20{rare}&limit=50", 1),
                   ("author, 3 matches", "author=rare%20author%20{n}&limit=50", 3),
                   ("`title=itle` (all match)", "title=itle&limit=50", 50),
                   ("first page", "limit=50", 50),
                   ("deep page", "limit=50&after={deep}", 50)]


def timed_get(target, query, token, watch=None):
    """GET /books?query: (seconds, books answered); `watch` is called while
    the answer is read."""
    start = time.perf_counter()
    req = urllib.request.Request(f"{target.base}/books?{query}", headers={"Authorization": token})
    with urllib.request.urlopen(req, timeout=600) as answer:
        body = bytearray()
        while chunk := answer.read(1 << 20):
            body += chunk
            if watch:
                watch()
    return time.perf_counter() - start, body.count(b'{"id":')


def catalog(targets, books):
    """At each size of CATALOG: books seeded up to it, 3 more by the API
    (author `Rare Author SIZE`); each of CATALOG_QUERIES once to warm up, then
    ROUNDS times (the servers alternating): the median and the slowest; then
    the whole list once, with the serving process tree's peak memory."""
    token = TOKENS[targets[0]]["BENCH_TOKEN"]
    for n in CATALOG:
        for target in targets:
            log(f"{target.comparator}/{target.store}: seeding to {n:,} books")
            books[target].ensure(n)
            for i in range(3):
                request(target.base, "POST", "/book", {"title": f"Rare {i}", "author": f"Rare Author {n}",
                                                       "year": 2000}, token)
        for label, query, count in CATALOG_QUERIES:
            query = query.format(n=n, rare=n * 3 // 5 + 7, deep=n - 1000)
            times = {target: [] for target in targets}
            for round_ in range(ROUNDS + 1):
                for target in targets[::-1] if round_ % 2 else targets:
                    seconds, answered = timed_get(target, query, token)
                    if answered != count:
                        log(f"{target.comparator}/{target.store} {query}: {answered} books, not {count}")
                    times[target] += [seconds] if round_ else []
            for target, seconds in times.items():
                record(target, n, label, median(seconds) * 1000, max_ms=max(seconds) * 1000)
        for target in targets:
            before = peak = launch.status_kib(launch.process_tree(target.pid))

            def watch():
                nonlocal peak
                peak = max(peak, launch.status_kib(launch.process_tree(target.pid)))
            seconds, answered = timed_get(target, "", token, watch)
            record(target, n, "whole list", seconds * 1000, books=answered, rss_before_mib=before / 1024,
                   peak_rss_mib=peak / 1024)


def transfer(targets):
    """Each target: TRANSFER books imported as one CSV body (seconds, CPU
    seconds of the serving processes and of PostgreSQL); then the whole
    list, as JSON and as CSV, ROUNDS times each (the targets and forms
    alternating): the median books per second."""
    body = "title,author,year\r\n" + "".join(
        f"Imported {k},Author {k % 97},{1000 + k % 1000}\r\n" for k in range(TRANSFER))
    hz = os.sysconf("SC_CLK_TCK")
    runs = {}
    for target in targets:
        token = TOKENS[target]["BENCH_TOKEN"]
        pids = [target.pid, POSTGRES_PID if target.store == "postgres" else None]
        cpu = [proc_tree(pid)[0] if pid else 0 for pid in pids]
        start = time.perf_counter()
        req = urllib.request.Request(f"{target.base}/books", body.encode(), method="POST",
                                     headers={"Content-Type": "text/csv", "Authorization": token})
        with urllib.request.urlopen(req, timeout=600) as answer:
            imported = json.load(answer)["data"]["imported"]
        seconds = time.perf_counter() - start
        used = [((proc_tree(pid)[0] if pid else 0) - before) / hz for pid, before in zip(pids, cpu)]
        runs[target] = dict(transfer=TRANSFER, comparator=target.comparator, store=target.store, imported=imported,
                            import_s=seconds, cpu_s=used[0], postgres_cpu_s=used[1])
        log(f"  {target.comparator}/{target.store}: {imported:,} books imported in {seconds:.2f} s, "
            f"CPU {used[0]:.2f} s (PostgreSQL {used[1]:.2f} s)")
    forms = [("json", "application/json", b'{"id":'), ("csv", "text/csv", b"\r\n")]
    rates = {(target, form): [] for target in targets for form, _, _ in forms}
    for round_ in range(ROUNDS):
        for target in targets[::-1] if round_ % 2 else targets:
            for form, accept, marker in forms[::-1] if round_ % 2 else forms:
                start = time.perf_counter()
                req = urllib.request.Request(f"{target.base}/books", headers={
                    "Authorization": TOKENS[target]["BENCH_TOKEN"], "Accept": accept})
                with urllib.request.urlopen(req, timeout=600) as answer:
                    listed = answer.read().count(marker) - (form == "csv")
                rates[target, form].append(listed / (time.perf_counter() - start))
                runs[target]["listed"] = listed
    for (target, form), rate in rates.items():
        runs[target][f"{form}_books_s"] = median(rate)
    with open(OUT / "runs.jsonl", "a") as f:
        for run in runs.values():
            f.write(json.dumps(run) + "\n")


def transfer_table(runs):
    lines = ["| store | comparator | books imported | seconds | CPU s (PostgreSQL's) | listed | JSON books/s "
             "| CSV books/s | CSV / JSON |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        lines.append(f"| {r['store']} | {r['comparator']} | {r['imported']:,} | {r['import_s']:.2f} "
                     f"| {r['cpu_s']:.2f} ({r['postgres_cpu_s']:.2f}) | {r['listed']:,} | {r['json_books_s']:,.0f} "
                     f"| {r['csv_books_s']:,.0f} | {r['csv_books_s'] / r['json_books_s']:.2f} |")
    return lines


def record(target, n, label, ms, **figures):
    run = dict(catalog=n, comparator=target.comparator, store=target.store, query=label, ms=ms, **figures)
    with open(OUT / "runs.jsonl", "a") as f:
        f.write(json.dumps(run) + "\n")
    log(f"  {target.comparator}/{target.store} {n:>9,} books  {label:<26} {ms:9.1f} ms"
        + "".join(f"  {k} {v:.0f}" for k, v in figures.items()))


def catalog_table(runs):
    """A row per store, comparator and size: each query's median ms (and
    slowest), the whole list's seconds and the peak memory while it was read."""
    lines = ["| store | comparator | books | " + " | ".join(label for label, _, _ in CATALOG_QUERIES)
             + " | whole list | peak RSS (before) |", "|---|---|---:|" + "---:|" * (len(CATALOG_QUERIES) + 2)]
    cell = {(r["store"], r["comparator"], r["catalog"], r["query"]): r for r in runs}
    for store, comparator, n in sorted({k[:3] for k in cell}, key=lambda k: (k[0], k[1].removesuffix("-b"),
                                                                              k[1].endswith("-b"), k[2])):
        row = [cell.get((store, comparator, n, label)) for label, _, _ in CATALOG_QUERIES]
        whole = cell.get((store, comparator, n, "whole list"))
        lines.append(f"| {store} | {comparator} | {n:,} | "
                     + " | ".join(f"{r['ms']:,.1f} ({r['max_ms']:,.1f})" if r else "" for r in row)
                     + (f" | {whole['ms'] / 1000:.2f} s | {whole['peak_rss_mib']:.0f} ({whole['rss_before_mib']:.0f}) MiB |"
                        if whole else " | | |"))
    return lines


def litestream(host):
    """Litestream replicating `host`'s SQLite database to a directory beside it."""
    env = dict(os.environ, BOOKS_DB=str(host.state_dir / "sqlite_db.db"), BOOKS_REPLICA=str(host.workdir / "replica"))
    binary = shutil.which("litestream", path=f"{ROOT / 'build/venv/bin'}:{os.environ['PATH']}") or "litestream"
    return subprocess.Popen([binary, "replicate", "-config", str(ROOT / "deploy/litestream/litestream.yml")],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def serve(comparator, stores, pg):
    """The component under spin-lite or real Spin: a host per
    store, on SQLite one per policy of SYNCHRONOUS (`NAME/full`), each with,
    given BENCH_WASM_B, its twin `NAME-b` serving that build (all with one
    secret, each on a database of its own), measured together: a cell runs
    on each in turn, so the stores and builds of a figure share the load."""
    secret = launch.random_text(48)
    pair = {}, (USER, PASSWORD)
    builds = [("", WASM, pair)] + ([("-b", WASM_B, pair)] if WASM_B else []) \
        + ([("-b", WASM, accounts(ACCOUNTS))] if ACCOUNTS else [])
    hosts, replicating = [], []
    try:
        for store in stores:
            for policy in SYNCHRONOUS if store == "sqlite" else [None]:
                settings = dict(SETTINGS, SECRET_TOKEN=secret, **({"SQLITE_SYNCHRONOUS": policy} if policy else {}))
                for (suffix, wasm, (more, login)), replica in [
                        (b, r) for r in [False] + [True] * (LITESTREAM and bool(policy)) for b in builds]:
                    pg_url = pg.fresh_database() if store == "postgres" else None
                    host = launch.Host(comparator, store, dict(settings, **more), pg_url=pg_url, wasm=wasm)
                    hosts.append((comparator + f"/{policy}" * (policy not in (None, "normal"))
                                  + "/litestream" * replica + suffix, host, login))
                    host.start()
                    if replica:
                        replicating.append(litestream(host))
                        LITESTREAM_PIDS[host.base_url] = replicating[-1].pid
        measure([(Target(name, host.store, host.base_url, host.proc.pid, login), host.state_dir, host.pg_url)
                 for name, host, login in hosts])
    finally:
        for process in replicating:
            process.terminate()
            process.wait(30)
        for _, host, _ in hosts:
            host.stop()
            shutil.rmtree(host.workdir, ignore_errors=True)


def feed(comparator, stores, pg):
    """Per store, the change feed's figures (bench/README.md)."""
    for store in stores:
        hosts = []
        pg_url = pg.fresh_database() if store == "postgres" else None
        try:
            for _ in range(2 if pg_url else 1):
                hosts.append(launch.Host(comparator, store, dict(SETTINGS, SECRET_TOKEN="s" * 48), pg_url=pg_url,
                                         wasm=WASM).start())
            token = lib.request(hosts[0].port, "POST", "/token", {"username": USER, "password": PASSWORD}).data["token"]
            lib.request(hosts[0].port, "POST", "/book", {"title": "Head", "author": "Bench", "year": 1}, token)
            cursor = lambda: lib.request(hosts[0].port, "GET", "/books?limit=1", token=token).headers["changes-cursor"]  # noqa: E731
            head, answers, stop = cursor(), [], threading.Event()

            def follow(port):
                while not stop.is_set():
                    answers.append(lib.request(port, "GET", f"/changes?after={head}&wait=30", token=token,
                                               timeout=60).status)
            threads = [threading.Thread(target=follow, args=(hosts[0].port,)) for _ in range(FOLLOWERS)]
            for th in threads:
                th.start()
            time.sleep(3)
            db = lambda: proc_tree(POSTGRES_PID)[0] if POSTGRES_PID else 0  # noqa: E731
            before, db_before, answered = proc_tree(hosts[0].proc.pid)[0], db(), len(answers)
            time.sleep(10)
            ticks, answered = [proc_tree(hosts[0].proc.pid)[0] - before, db() - db_before], len(answers) - answered
            idle = [t / os.sysconf("SC_CLK_TCK") / 10 * 100 for t in ticks]
            stop.set()  # a change wakes them all, and they end
            lib.request(hosts[-1].port, "POST", "/book", {"title": "Woken", "author": "B", "year": 0}, token)
            for th in threads:
                th.join(60)
            head, latencies, failed = cursor(), [], 0
            for k in range(WAKES):  # the write at each phase of the waiting request's polls
                made, r, seconds = lib.woken(hosts[0].port, hosts[-1].port, token, head, 0.2 + k % 10 * 0.04)
                if made.status == 201 and r and r.status == 200 and [c["id"] for c in r.data] == [made.data["id"]]:
                    latencies.append(seconds * 1000)
                    head = r.data[-1]["cursor"]
                else:
                    failed += 1
            latencies = sorted(latencies) or [0]
            run = dict(feed=True, comparator=comparator, store=store, hosts=len(hosts), idle_cpu_pct=idle[0],
                       db_idle_cpu_pct=idle[1] if pg_url else None, answers_while_idle=answered, failed=failed,
                       p50_ms=latencies[len(latencies) // 2], p99_ms=latencies[len(latencies) * 99 // 100])
            with open(OUT / "runs.jsonl", "a") as f:
                f.write(json.dumps(run) + "\n")
            log(f"  {comparator}/{store}: {json.dumps(run)}")
        finally:
            for host in hosts:
                host.stop()
                shutil.rmtree(host.workdir, ignore_errors=True)


def accounts(n):
    """`n` accounts made by scripts/account.sh, the last an editor: ({ACCOUNTS: ...}, its login)."""
    made = [json.loads(subprocess.run([str(ROOT / "scripts/account.sh"), f"bench-{i}", "editor"],
                                      input=PASSWORD, capture_output=True, text=True, check=True).stdout)
            for i in range(n)]
    return {"ACCOUNTS": json.dumps(made)}, (f"bench-{n - 1}", PASSWORD)


def median(values):
    values = sorted(values)
    return (values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2


def writes_table(runs):
    """Each write scenario (and `get`, for reference), concurrency and
    comparator on both stores side by side: p50 and p99 (ms), answers of status 400 or more (+ other errors:
    connect, read, write, timeout), CPU us/req (PostgreSQL's server's too),
    SQLite's p99 over PostgreSQL's; an A/B's "-b" row under its A row, and in
    the A row its CPU and p99 over B's (CPU with PostgreSQL's server's). A SQLite policy's
    row (`spin/full`) has PostgreSQL's run of its comparator (`spin`)."""
    run = {(r["scenario"], r["concurrency"], r["comparator"], r["store"]): r for r in runs}
    cpu = lambda r: r["cpu_us"] + r.get("db_cpu_us", 0)  # noqa: E731
    names = sorted({r["comparator"] for r in runs if r["scenario"] in WRITES},
                   key=lambda name: (name.removesuffix("-b"), name.endswith("-b")))
    lines = ["| write | c | comparator | SQLite p50 / p99 | PostgreSQL p50 / p99 | p99 SQLite / PostgreSQL "
             "| non-2xx SQLite, PostgreSQL | CPU us/req SQLite, PostgreSQL (+ its server's) "
             "| CPU over B's, SQLite, PostgreSQL (with its server's) | p99 over B's, SQLite, PostgreSQL |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for scenario, label in WRITES.items():
        for c in sorted({r["concurrency"] for r in runs}):
            for name in names:
                pg = name.split("/")[0].removesuffix("-b") + "-b" * name.endswith("-b")
                s, p = run.get((scenario, c, name, "sqlite")), run.get((scenario, c, pg, "postgres"))
                if not (s or p) or (pg != name and not s):
                    continue
                b = [run.get((scenario, c, n + "-b", store)) for n, store in ((name, "sqlite"), (pg, "postgres"))]
                lines.append(" | ".join([
                    f"| {label}", str(c), name,
                    *(f"{r['p50_us'] / 1000:.1f} / {r['p99_us'] / 1000:.1f}" if r else "" for r in (s, p)),
                    f"**{s['p99_us'] / p['p99_us']:.2f}x**" if s and p else "",
                    ", ".join((f"{r['non2xx']}" + (f" (+{r['errors'] - r['non2xx']})" if r["errors"] > r["non2xx"] else ""))
                              if r else "-" for r in (s, p)),
                    ", ".join(f"{r['cpu_us']:.0f}" + (f" (+{r['db_cpu_us']:.0f})" if "db_cpu_us" in r else "")
                              if r else "-" for r in (s, p)),
                    ", ".join(f"{cpu(a) / cpu(o):.2f}" if a and o else "-" for a, o in zip((s, p), b))
                    if any(b) else "",
                    ", ".join(f"{a['p99_us'] / o['p99_us']:.2f}" if a and o else "-" for a, o in zip((s, p), b))
                    if any(b) else ""]) + " |")
    return lines if len(lines) > 2 else []


def report():
    runs = [json.loads(l) for l in (OUT / "runs.jsonl").read_text().splitlines()]
    sizes = [r for r in runs if "catalog" in r]
    feeds = [r for r in runs if "feed" in r]
    transfers = [r for r in runs if "transfer" in r]
    runs = [r for r in runs if "catalog" not in r and "transfer" not in r and "feed" not in r]
    lines = [f"# Benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"wrk {DURATION} s a run on {os.cpu_count()} cores; load average now "
             f"{open('/proc/loadavg').read().split()[0]}. CPU: the serving process's user + system time a "
             "request; switches: its context switches a request (bench/README.md). Component: "
             f"{WASM or 'the built one'}" + (f"; its \"-b\" twins: {WASM_B}" if WASM_B else "") + ".", "",
             "| scenario | store | comparator | c | req/s | p50 ms | p99 ms | CPU us/req | switches/req | errors (non-2xx) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if r["scenario"] != "warm-up":
            lines.append(f"| {r['scenario']} | {r['store']} | {r['comparator']} | {r['concurrency']} | {r['rps']:.0f} "
                         f"| {r['p50_us'] / 1000:.2f} | {r['p99_us'] / 1000:.2f} | {r['cpu_us']:.1f} "
                         f"| {r['switches']:.2f} | {r['errors']} ({r['non2xx']}) |")
    for title, table in (("Writes, both stores side by side:", writes_table(runs)),
                         ("Catalog sizes: GET /books, median ms of the timed requests (slowest):",
                          catalog_table(sizes) if sizes else []),
                         ("Import and export (median of the lists' rounds):",
                          transfer_table(transfers) if transfers else [])):
        if table:
            lines += ["", title, ""] + table
            print("\n".join(table), flush=True)
    lines += ["", "The change feed (`BENCH_FEED=1`):", ""] * bool(feeds) + [f"- {json.dumps(r)}" for r in feeds]
    (OUT / "results.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {OUT / 'results.md'} and runs.jsonl")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "runs.jsonl").write_text("")
    stores = os.environ.get("BENCH_STORES", "sqlite postgres").split()
    comparators = os.environ.get("BENCH_COMPARATORS", "spin-lite spin").split()
    if shutil.which("wrk") is None:
        sys.exit("bench: wrk is missing (apt-get install wrk)")
    if not launch.spin_binary() and "spin" in comparators:
        log("no Spin binary (SPIN=path, build/spin/spin or spin on PATH): spin skipped")
        comparators = [c for c in comparators if c != "spin"]
    pg = launch.Pg() if "postgres" in stores else None
    if pg:
        global POSTGRES_PID
        POSTGRES_PID = int((Path(pg.dir) / "data/postmaster.pid").read_text().split()[0])
    try:
        for comparator in comparators:
            log(f"{comparator} on {' and '.join(stores)}")
            try:
                (feed if FEED else serve)(comparator, stores, pg)
            except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as e:
                log(f"{comparator} failed ({e}): its runs so far are kept")
    finally:
        if pg:
            pg.close()
    report()


if __name__ == "__main__":
    main()
