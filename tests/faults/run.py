#!/usr/bin/env python3
"""Every fault test, one after another, with one closing line.

    tests/faults/run.py --store sqlite|postgres [--scale quick|full] [--host spin-lite|spin]
                        [--wasm F] [--manifest F] [--reuse N]
                        [--only NAME,...]

Runs concurrency, crash, attacks, outages, replicas, limits, catalog,
throttle, stalls, providers, tls, upgrade, variants, safe_writes, otel,
browser, typed_client and registry (see each file) against their own hosts. A module skips the store it does
not need (`ctx.only_on`: catalog, replicas, tls and upgrade are PostgreSQL's;
attacks, limits, stalls, providers and variants, whatever their store, run
on SQLite) and otel and registry the host that is not Spin; it notes why.
PostgreSQL: the pg-cluster.sh cluster in FAULTS_PG_DIR, else one of its
own, removed at the end. --scale full (or FAULTS_SCALE=full) is the
`make soak` size. Each named check is one test.

Output: `faults STORE: N passed, M failed`; `N M` is appended to $E2E_TALLY
when set. Exit status 0 only when nothing failed. FAULTS_KEEP=1 keeps the
temporary directory (host logs).
"""

import importlib
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402

MODULES = ["concurrency", "crash", "attacks", "outages", "replicas", "limits", "catalog",
           "throttle", "stalls", "providers", "tls", "upgrade", "variants", "safe_writes", "otel",
           "browser", "typed_client", "registry"]


if __name__ == "__main__":
    chosen = lib.parse_args("all fault tests", more=lambda p: p.add_argument(
        "--only", default="", help="comma-separated module names"))
    only = {x for x in chosen.only.split(",") if x}
    lib.run_modules(chosen, [(name, importlib.import_module(name).run) for name in MODULES
                             if not only or name in only], "faults")
