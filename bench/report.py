#!/usr/bin/env python3
"""Turns the wrk runs of bench/run.sh into bench/results/latest.md and
latest.json: one row per scenario, store, comparator, host mode and
concurrency, then the targets (PASS/MISS with the ratio). Standard library only.

Each wrk run's output holds a line "BENCH {json}" printed by
bench/wrk/common.lua (exact percentiles and error counts from wrk itself);
the plain wrk text ("Non-2xx or 3xx responses", "Socket errors") is read as
a cross-check.
"""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess

COMPARATOR_ORDER = ["native", "floor/isolated", "floor/reuse", "component/isolated", "component/reuse",
                    "floor/spin", "component/spin"]
SCENARIO_ORDER = ["floor", "token", "get", "list100", "list1k", "list10k", "page", "pagedeep", "post", "put",
                  "delete", "mix"]
SCENARIO_TITLE = {
    "floor": "GET / (floor component)",
    "token": "POST /token",
    "get": "GET /book/{id}",
    "list100": "GET /books (100 books)",
    "list1k": "GET /books (1,000 books)",
    "list10k": "GET /books (10,000 books)",
    "page": "GET /books?limit=100 (first page of 10,000)",
    "pagedeep": "GET /books?limit=100&after=9800 (deep page of 10,000)",
    "post": "POST /book",
    "put": "PUT /book/{id}",
    "delete": "DELETE /book/{id}",
    "mix": "mix 80 % GET / 20 % PUT+POST",
}


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_kb = 0
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory_kb = int(line.split()[1])
    except OSError:
        pass
    try:
        wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
        wrk = wrk.split(" Copyright")[0]
    except (OSError, IndexError):
        wrk = "unknown"
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "kernel": platform.release(),
        "memory_gib": round(memory_kb / 1024 / 1024, 1),
        "wrk": wrk,
    }


def read_jsonl(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def parse_run(raw_dir, meta):
    with open(os.path.join(raw_dir, meta["file"])) as output:
        text = output.read()
    run = dict(meta)
    del run["file"]
    match = re.search(r"^BENCH (\{.*\})$", text, re.MULTILINE)
    if not match:
        run.update(ok=False, note="wrk gave no result: " + text.strip()[-200:])
        return run
    r = json.loads(match.group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    socket = {"connect": r["err_connect"], "read": r["err_read"], "write": r["err_write"], "timeout": r["err_timeout"]}
    run.update(
        ok=True,
        requests=r["requests"],
        duration_s=round(r["duration_s"], 3),
        rps=round(r["rps"], 1),
        p50_ms=round(r["p50_us"] / 1000, 3),
        p90_ms=round(r["p90_us"] / 1000, 3),
        p99_ms=round(r["p99_us"] / 1000, 3),
        max_ms=round(r["max_us"] / 1000, 3),
        non_2xx=int(non2xx.group(1)) if non2xx else r["err_status"],
        socket_errors=socket,
        errors=r["err_status"] + sum(socket.values()),
        rss_peak_mib=round(meta["rss_peak_kb"] / 1024, 1),
    )
    if "exhausted" in r:
        run["delete_ids_exhausted"] = r["exhausted"]
    # CPU time (user + system) and context switches of the serving process
    # (and its children) over the run, from bench/procstat.py, per request.
    before, after = meta.get("proc_before"), meta.get("proc_after")
    run.pop("proc_before", None)
    run.pop("proc_after", None)
    if before and after and r["requests"]:
        cpu_s = (after["cpu_ticks"] - before["cpu_ticks"]) / after["clk_tck"]
        run["cpu_s"] = round(cpu_s, 3)
        run["cpu_us_per_request"] = round(cpu_s * 1e6 / r["requests"], 2)
        run["switches_per_request"] = round((after["switches"] - before["switches"]) / r["requests"], 3)
        # Cores the server kept busy: its CPU time over wrk's wall time.
        run["server_cores"] = round(cpu_s / r["duration_s"], 2) if r["duration_s"] else None
    return run


def label(run):
    return run["comparator"] if run["comparator"] == "native" else f"{run['comparator']}/{run['mode']}"


def find(runs, comparator, scenario, store, concurrency):
    for run in runs:
        if (label(run) == comparator and run["scenario"] == scenario
                and run["store"] == store and run["concurrency"] == concurrency and run.get("ok")):
            return run
    return None


def ratio_target(name, numerator, denominator, minimum, what):
    if not numerator or not denominator:
        return {"target": name, "value": None, "threshold": f">= {minimum:.0%}", "result": "n/a",
                "detail": f"{what}: not measured"}
    ratio = numerator["rps"] / denominator["rps"] if denominator["rps"] else 0.0
    return {
        "target": name,
        "value": round(ratio, 3),
        "threshold": f">= {minimum:.0%}",
        "result": "PASS" if ratio >= minimum else "MISS",
        "detail": f"{what}: {numerator['rps']:.0f} / {denominator['rps']:.0f} req/s = {ratio:.1%}",
    }


def cpu_target(name, numerator, denominator, maximum, what):
    """CPU per request of `numerator` at most `maximum` times `denominator`'s."""
    if (not numerator or not denominator or numerator.get("cpu_us_per_request") is None
            or not denominator.get("cpu_us_per_request")):
        return {"target": name, "value": None, "threshold": f"<= {maximum:.1f}x", "result": "n/a",
                "detail": f"{what}: not measured"}
    ratio = numerator["cpu_us_per_request"] / denominator["cpu_us_per_request"]
    return {
        "target": name,
        "value": round(ratio, 3),
        "threshold": f"<= {maximum:.1f}x",
        "result": "PASS" if ratio <= maximum else "MISS",
        "detail": f"{what}: {numerator['cpu_us_per_request']:.1f} / {denominator['cpu_us_per_request']:.1f} "
                  f"us CPU per request = {ratio:.2f}x",
    }


def targets(runs, servers, reuse_measured):
    out = []
    c, store = 16, "sqlite"
    native_get = find(runs, "native", "get", store, c)
    out.append(cpu_target("CPU/request: isolated GET <= 2.0x native GET (c16, SQLite)",
                          find(runs, "component/isolated", "get", store, c), native_get, 2.0,
                          "component isolated / native GET /book/{id}"))
    out.append(cpu_target("CPU/request: reuse GET <= 1.3x native GET (c16, SQLite)",
                          find(runs, "component/reuse", "get", store, c), native_get, 1.3,
                          "component reuse / native GET /book/{id}"))
    out.append(cpu_target("CPU/request: isolated floor <= 1.0x native GET (c16)",
                          find(runs, "floor/isolated", "floor", "-", c), native_get, 1.0,
                          "floor isolated / native GET /book/{id}"))
    native_get = find(runs, "native", "get", store, c)
    floor_iso = find(runs, "floor/isolated", "floor", "-", c)
    out.append(ratio_target("isolated floor >= 18 % of native GET (c16)", floor_iso, native_get, 0.18,
                            "floor isolated / native GET /book/{id}"))
    out.append(ratio_target("isolated GET >= 70 % of floor (c16, SQLite)",
                            find(runs, "component/isolated", "get", store, c), floor_iso, 0.70,
                            "component isolated GET /book/{id} / floor isolated"))
    out.append(ratio_target("reuse GET >= 50 % of native GET (c16, SQLite)",
                            find(runs, "component/reuse", "get", store, c), native_get, 0.50,
                            "component reuse GET /book/{id} / native"
                            + ("" if reuse_measured else " (reuse mode not available)")))
    for scenario in ("post", "put", "delete"):
        native = find(runs, "native", scenario, store, c)
        out.append(ratio_target(f"isolated {SCENARIO_TITLE[scenario]} >= 40 % of native (c16, SQLite)",
                                find(runs, "component/isolated", scenario, store, c), native, 0.40,
                                f"component isolated / native {SCENARIO_TITLE[scenario]}"))
        out.append(ratio_target(f"reuse {SCENARIO_TITLE[scenario]} >= 60 % of native (c16, SQLite)",
                                find(runs, "component/reuse", scenario, store, c), native, 0.60,
                                f"component reuse / native {SCENARIO_TITLE[scenario]}"))
    for mode in ("isolated", "reuse"):
        measured = [find(runs, f"component/{mode}", s, store, c) for s in ("get", "post", "put", "delete")]
        measured = [run for run in measured if run]
        if not measured:
            out.append({"target": f"p99 <= 5 ms, single-book reads and writes ({mode}, c16, SQLite)",
                        "value": None, "threshold": "<= 5 ms", "result": "n/a", "detail": "not measured"})
            continue
        worst = max(measured, key=lambda run: run["p99_ms"])
        out.append({
            "target": f"p99 <= 5 ms, single-book reads and writes ({mode}, c16, SQLite)",
            "value": worst["p99_ms"],
            "threshold": "<= 5 ms",
            "result": "PASS" if worst["p99_ms"] <= 5.0 else "MISS",
            "detail": ", ".join(f"{run['scenario']} {run['p99_ms']:.2f} ms" for run in measured),
        })
    at64 = [run for run in runs if run["concurrency"] == 64]
    failing = [run for run in at64 if not run.get("ok") or run["errors"] > 0]
    component64 = [run for run in failing if run["comparator"] != "native"]
    out.append({
        "target": "no errors at c64 (every comparator, store and scenario)",
        "value": sum(run.get("errors", 0) for run in at64),
        "threshold": "0",
        "result": "n/a" if not at64 else ("PASS" if not failing else "MISS"),
        "detail": "none" if not failing else "; ".join(
            f"{label(run)} {run['store']} {run['scenario']}: {run.get('errors', 'no result')}" for run in failing)
        + ("" if not failing or component64 else " (native only)"),
    })
    growth = []
    for comparator in COMPARATOR_ORDER:
        for st in ("sqlite", "postgres"):
            sizes = [find(runs, comparator, s, st, c) for s in ("list100", "list1k", "list10k")]
            if all(sizes):
                books = [run["rps"] * run["books"] for run in sizes]
                growth.append((comparator, st, books, books[2] / books[1] if books[1] else 0))
    component_growth = [g for g in growth if g[0] in ("component/isolated", "component/reuse")]
    if component_growth:
        worst = min(component_growth, key=lambda g: g[3])
        out.append({
            "target": "GET /books grows ~linearly: books/s at 10k >= 50 % of books/s at 1k (component, c16)",
            "value": round(worst[3], 3),
            "threshold": ">= 50 %",
            "result": "PASS" if worst[3] >= 0.5 else "MISS",
            "detail": "; ".join(f"{g[0]} {g[1]}: {g[2][0]:,.0f} / {g[2][1]:,.0f} / {g[2][2]:,.0f} books/s"
                                for g in component_growth),
        })
    else:
        out.append({"target": "GET /books grows ~linearly (component, c16)", "value": None,
                    "threshold": ">= 50 %", "result": "n/a", "detail": "not measured"})
    pages = []
    for comparator in COMPARATOR_ORDER:
        for st in ("sqlite", "postgres"):
            first, deep = (find(runs, comparator, s, st, 16) for s in ("page", "pagedeep"))
            if (first and deep and comparator.startswith("component")
                    and first.get("cpu_us_per_request") and deep.get("cpu_us_per_request") is not None):
                pages.append((comparator, st, first, deep,
                              deep["cpu_us_per_request"] / first["cpu_us_per_request"]))
    # CPU time per request, not req/s: it holds on a loaded machine.
    if pages:
        worst = max(pages, key=lambda p: p[4])
        out.append({
            "target": "CPU/request: a deep catalog page (after=9800 of 10,000) <= 1.25x the first page "
                      "(component, c16)",
            "value": round(worst[4], 3),
            "threshold": "<= 1.25x",
            "result": "PASS" if worst[4] <= 1.25 else "MISS",
            "detail": "; ".join(
                f"{p[0]} {p[1]}: {p[2]['cpu_us_per_request']:.0f} / {p[3]['cpu_us_per_request']:.0f} us, "
                f"{p[2]['rps']:,.0f} / {p[3]['rps']:,.0f} req/s" for p in pages),
        })
    else:
        out.append({"target": "CPU/request: a deep catalog page <= 1.25x the first (component, c16)",
                    "value": None, "threshold": "<= 1.25x", "result": "n/a", "detail": "not measured"})
    warm = [s["start_ms"] for s in servers
            if s["comparator"] in ("component", "floor") and s["warm_cache"] and s["mode"] != "spin"]
    out.append({
        "target": "host start <= 1 s with the compilation cache warm",
        "value": max(warm) if warm else None,
        "threshold": "<= 1000 ms",
        "result": "n/a" if not warm else ("PASS" if max(warm) <= 1000 else "MISS"),
        "detail": (f"{len(warm)} warm starts of book-host: median {statistics.median(warm):.0f} ms, "
                   f"max {max(warm)} ms" if warm else "book-host not run"),
    })
    for mode in ("isolated", "reuse"):
        c64 = [run for run in runs if run["concurrency"] == 64 and run.get("ok")
               and label(run) == f"component/{mode}"]
        if not c64:
            out.append({"target": f"host RSS <= 150 MiB at c64 ({mode})", "value": None,
                        "threshold": "<= 150 MiB", "result": "n/a", "detail": "not measured"})
            continue
        worst = max(c64, key=lambda run: run["rss_peak_mib"])
        single = [run for run in c64 if not run["scenario"].startswith("list")]
        single_worst = max(single, key=lambda run: run["rss_peak_mib"]) if single else None
        out.append({
            "target": f"host RSS <= 150 MiB at c64 ({mode}, every scenario and store)",
            "value": worst["rss_peak_mib"],
            "threshold": "<= 150 MiB",
            "result": "PASS" if worst["rss_peak_mib"] <= 150 else "MISS",
            "detail": f"peak {worst['rss_peak_mib']:.0f} MiB in {worst['store']} {SCENARIO_TITLE[worst['scenario']]}"
            + (f"; without the GET /books runs: {single_worst['rss_peak_mib']:.0f} MiB "
               f"({single_worst['store']} {SCENARIO_TITLE[single_worst['scenario']]})" if single_worst else ""),
        })
    return out, growth


def fmt_rps(value):
    return f"{value:,.0f}"


def per_request(run):
    """The CPU/request and switches/request cells."""
    if run.get("cpu_us_per_request") is None:
        return " | "
    return f"{run['cpu_us_per_request']:,.1f} | {run['switches_per_request']:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--runs", required=True)
    parser.add_argument("--servers", required=True)
    parser.add_argument("--command", default="bench/run.sh")
    parser.add_argument("--duration", type=float, default=2)
    parser.add_argument("--elapsed", type=int, default=0)
    parser.add_argument("--host-available", type=int, default=1)
    parser.add_argument("--reuse-supported", type=int, default=1)
    parser.add_argument("--reuse", type=int, default=1000)
    parser.add_argument("--spin", default="not recorded")
    parser.add_argument("--load-before", default="")
    parser.add_argument("--load-after", default="")
    parser.add_argument("--md", required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()

    runs = [parse_run(args.raw, meta) for meta in read_jsonl(args.runs)]
    servers = read_jsonl(args.servers)
    order = {name: i for i, name in enumerate(COMPARATOR_ORDER)}
    scenarios = {name: i for i, name in enumerate(SCENARIO_ORDER)}
    runs.sort(key=lambda r: (scenarios.get(r["scenario"], 99), r["store"] != "sqlite",
                             order.get(label(r), 99), r["concurrency"]))
    reuse_measured = any(label(r) == "component/reuse" for r in runs)
    target_rows, growth = targets(runs, servers, reuse_measured)
    info = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    host = [s for s in servers if s["comparator"] in ("component", "floor") and s["mode"] != "spin"]
    warm = [s for s in host if s["warm_cache"]]
    cold = [s for s in host if not s["warm_cache"]]
    spin_starts = [s for s in servers if s["mode"] == "spin"]
    native_starts = [s["start_ms"] for s in servers if s["comparator"] == "native"]

    notes = []
    if not args.host_available:
        notes.append("target/release/book-host was missing: only the native comparator ran.")
    elif not args.reuse_supported:
        notes.append("book-host has no --max-instance-reuse flag: the component ran in isolated mode only.")
    exhausted = [r for r in runs if r.get("delete_ids_exhausted")]
    for r in exhausted:
        notes.append(f"DELETE {label(r)} {r['store']} c{r['concurrency']}: {r['delete_ids_exhausted']} "
                     "requests found no seeded id left (counted as 404 errors).")
    if not any(r["mode"] == "spin" for r in runs):
        notes.append(f"Spin comparators: {args.spin}.")
    failed = [r for r in runs if not r.get("ok")]
    for r in failed:
        notes.append(f"{label(r)} {r['store']} {r['scenario']} c{r['concurrency']}: {r['note']}")

    document = {
        "generated": now,
        "machine": info,
        "loadavg_before": args.load_before,
        "loadavg_after": args.load_after,
        "command": args.command,
        "run_seconds_each": args.duration,
        "elapsed_seconds": args.elapsed,
        "host": {
            "available": bool(args.host_available),
            "max_instance_reuse_supported": bool(args.reuse_supported),
            "reuse_mode_flag": f"--max-instance-reuse {args.reuse}",
            "start_ms_warm": [s["start_ms"] for s in warm],
            "start_ms_first": [s["start_ms"] for s in cold],
            "native_start_ms": native_starts,
        },
        "spin": {"status": args.spin, "start_ms": [s["start_ms"] for s in spin_starts]},
        "servers": servers,
        "runs": runs,
        "targets": target_rows,
        "notes": notes,
    }
    with open(args.json, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")

    md = []
    md.append("# Book Catalog load benchmark")
    md.append("")
    md.append(f"- Generated: {now}, by `{args.command}` (all runs took {args.elapsed} s)")
    md.append(f"- Machine: {info['nproc']} cores, {info['cpu_model']}, Linux {info['kernel']}, "
              f"{info['memory_gib']} GiB; load generator {info['wrk']} on loopback, "
              f"`wrk -t2 -cN -d{args.duration:g}s --timeout 10s --latency` (`-t1` at c1), one run per row")
    md.append(f"- Load average (1, 5, 15 min) before the run: {args.load_before or '?'}; after: "
              f"{args.load_after or '?'} (the load generator, the server and PostgreSQL share the 2 cores; "
              "anything else running shows here)")
    if warm:
        starts = [s["start_ms"] for s in warm]
        md.append(f"- Host start (process start until the first request is served, compilation cache warm): "
                  f"median {statistics.median(starts):.0f} ms, max {max(starts)} ms over {len(starts)} starts"
                  + (f"; first start of each component this run: {', '.join(str(s['start_ms']) + ' ms' for s in cold)}"
                     if cold else ""))
    else:
        md.append("- Host start: book-host not run")
    if native_starts:
        md.append(f"- book-native start: {', '.join(str(s) + ' ms' for s in native_starts)}")
    md.append("- Comparators: **native** = `book-native` (the same core, hyper + rusqlite/tokio-postgres, no "
              "WebAssembly); **floor** = `book-host --from bench/floor/spin.toml`, a component answering a fixed "
              "envelope; **component** = `book-host --from spin.toml`, **isolated** = a fresh instance per request, "
              f"**reuse** = `--max-instance-reuse {args.reuse}`")
    md.append(f"- Spin: {args.spin}" + (f"; starts: {', '.join(str(s['start_ms']) + ' ms' for s in spin_starts)}"
                                        if spin_starts else ""))
    md.append("- CPU/request = user + system time of the serving process (with its children: `spin up` serves "
              "from one) over the run, from `/proc/PID/stat`, divided by the requests wrk completed; "
              "switches/request = voluntary + involuntary context switches summed over `/proc/PID/task/*/status`, "
              "per request (`bench/procstat.py`). Neither counts wrk, nor PostgreSQL's own processes.")
    md.append("- Stores: SQLite = `<state dir>/sqlite_db.db`; PostgreSQL = a throwaway local cluster "
              "(`scripts/pg-cluster.sh`, fsync off). Every request carries a valid token. Errors = non-2xx "
              "responses + socket errors (connect, read, write, timeout). RSS = the serving process's peak VmRSS "
              "during the run (polled every 50 ms).")
    md.append("")
    md.append("## Targets (concurrency 16, SQLite unless said)")
    md.append("")
    md.append("| target | result | value | detail |")
    md.append("|---|---|---|---|")
    for t in target_rows:
        value = t["value"]
        if value is None:
            value = ""
        elif "%" in t["threshold"]:
            value = f"{value:.1%}"
        elif "ms" in t["threshold"]:
            value = f"{value:,.2f} ms" if isinstance(value, float) else f"{value} ms"
        elif "MiB" in t["threshold"]:
            value = f"{value:.0f} MiB"
        elif t["threshold"].endswith("x"):
            value = f"{value:.2f}x"
        md.append(f"| {t['target']} | **{t['result']}** | {value} | {t['detail']} |")
    md.append("")

    present = [c for c in COMPARATOR_ORDER if any(label(r) == c for r in runs)]
    md.append("## Per request at concurrency 16: CPU time, context switches, p99")
    md.append("")
    md.append("CPU/request is what a request costs the machine, and is steadier than requests/s on a shared "
              "machine; x native = CPU/request over native's for the same scenario and store (the floor is "
              "compared with native `GET /book/{id}`).")
    md.append("")
    for store in ("sqlite", "postgres"):
        if not any(r["store"] == store for r in runs):
            continue
        md.append(f"### {'SQLite' if store == 'sqlite' else 'PostgreSQL'}")
        md.append("")
        md.append("| scenario | comparator | CPU us/request | x native | switches/request | req/s | p99 ms | errors |")
        md.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for scenario in SCENARIO_ORDER:
            if scenario == "floor" and store != "sqlite":
                continue
            native = find(runs, "native", "get" if scenario == "floor" else scenario, store, 16)
            for comparator in present:
                run = find(runs, comparator, scenario, "-" if scenario == "floor" else store, 16)
                if not run:
                    continue
                cpu = run.get("cpu_us_per_request")
                ratio = ""
                if cpu is not None and native and native.get("cpu_us_per_request"):
                    ratio = f"{cpu / native['cpu_us_per_request']:.2f}x"
                switches = run.get("switches_per_request")
                cpu_cell = "" if cpu is None else f"{cpu:,.1f}"
                switches_cell = "" if switches is None else f"{switches:.2f}"
                md.append(f"| {SCENARIO_TITLE[scenario]} | {comparator} | {cpu_cell} | {ratio} | "
                          f"{switches_cell} | {fmt_rps(run['rps'])} | {run['p99_ms']:.2f} | {run['errors']} |")
        md.append("")

    md.append("## Requests/s at concurrency 16")
    md.append("")
    for store in ("sqlite", "postgres"):
        if not any(r["store"] == store for r in runs):
            continue
        md.append(f"### {'SQLite' if store == 'sqlite' else 'PostgreSQL'}")
        md.append("")
        md.append("| scenario | " + " | ".join(present) + " |")
        md.append("|---|" + "---:|" * len(present))
        for scenario in SCENARIO_ORDER:
            cells = []
            for comparator in present:
                run = find(runs, comparator, scenario, "-" if scenario == "floor" else store, 16)
                cells.append(fmt_rps(run["rps"]) if run else "")
            if any(cells):
                md.append(f"| {SCENARIO_TITLE[scenario]} | " + " | ".join(cells) + " |")
        md.append("")

    if growth:
        md.append("## GET /books growth (c16): books served per second (req/s x books)")
        md.append("")
        md.append("| comparator | store | 100 | 1,000 | 10,000 | 10k / 1k |")
        md.append("|---|---|---:|---:|---:|---:|")
        for comparator, store, books, ratio in growth:
            md.append(f"| {comparator} | {store} | {books[0]:,.0f} | {books[1]:,.0f} | {books[2]:,.0f} | {ratio:.0%} |")
        md.append("")

    md.append("## All runs")
    md.append("")
    md.append("| scenario | store | comparator | c | req/s | CPU us/request | switches/request | p50 ms | p99 ms "
              "| errors | peak RSS MiB |")
    md.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        if not r.get("ok"):
            md.append(f"| {SCENARIO_TITLE.get(r['scenario'], r['scenario'])} | {r['store']} | {label(r)} | "
                      f"{r['concurrency']} | no result | | | | | | |")
            continue
        errors = str(r["errors"])
        if r["errors"]:
            socket = {k: v for k, v in r["socket_errors"].items() if v}
            parts = [f"{r['non_2xx']} non-2xx"] if r["non_2xx"] else []
            parts += [f"{v} {k}" for k, v in socket.items()]
            errors += " (" + ", ".join(parts) + ")"
        md.append(f"| {SCENARIO_TITLE.get(r['scenario'], r['scenario'])} | {r['store']} | {label(r)} | "
                  f"{r['concurrency']} | {fmt_rps(r['rps'])} | {per_request(r)} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                  f"{errors} | {r['rss_peak_mib']:.0f} |")
    md.append("")
    if notes:
        md.append("## Notes")
        md.append("")
        md.extend(f"- {note}" for note in notes)
        md.append("")
    with open(args.md, "w") as out:
        out.write("\n".join(md))


if __name__ == "__main__":
    main()
