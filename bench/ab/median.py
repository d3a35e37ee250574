#!/usr/bin/env python3
"""Medians per binary of bench/ab/ab.sh's JSON lines: median.py FILE..."""
import collections
import json
import statistics
import sys

runs = collections.defaultdict(list)
for path in sys.argv[1:]:
    with open(path) as lines:
        for line in lines:
            if line.startswith("{"):
                run = json.loads(line)
                runs[run["bin"]].append(run)
for binary, rs in runs.items():
    def median(key):
        return statistics.median(r[key] for r in rs)
    print(f"{binary}: {len(rs)} runs, median {median('rps'):,.0f} req/s, CPU {median('cpu_us'):.1f} us/request, "
          f"{median('switches'):.2f} switches/request, p50 {median('p50_ms'):.2f} ms, p99 {median('p99_ms'):.2f} ms, "
          f"errors {sum(r['errors'] for r in rs)}; CPU per run {[r['cpu_us'] for r in rs]}")
