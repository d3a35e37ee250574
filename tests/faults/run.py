#!/usr/bin/env python3
"""Every fault test, one after another, with one closing line.

    tests/faults/run.py --store sqlite|postgres [--scale quick|full] [--host spin-lite|spin]
                        [--wasm F] [--manifest F] [--reuse N]
                        [--only NAME,...]

Runs concurrency, crash, attacks, outages, replicas (PostgreSQL only), limits,
catalog, throttle, stalls, providers, tls (PostgreSQL only), upgrade, variants and
safe_writes and otel (real Spin only: spin-lite exports no telemetry; under it
the module notes `skipped`) (see each file) against
their own hosts; PostgreSQL: the pg-cluster.sh cluster in FAULTS_PG_DIR,
else one of its own, removed at the end. --scale full (or FAULTS_SCALE=full)
is the `make soak` size. Each named check is one test.

Output: `faults STORE: N passed, M failed`; `N M` is appended to $E2E_TALLY
when set. Exit status 0 only when nothing failed. FAULTS_KEEP=1 keeps the
temporary directory (host logs).
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402
import attacks  # noqa: E402
import catalog  # noqa: E402
import concurrency  # noqa: E402
import crash  # noqa: E402
import limits  # noqa: E402
import otel  # noqa: E402
import outages  # noqa: E402
import providers  # noqa: E402
import replicas  # noqa: E402
import safe_writes  # noqa: E402
import stalls  # noqa: E402
import throttle  # noqa: E402
import tls  # noqa: E402
import upgrade  # noqa: E402
import variants  # noqa: E402

MODULES = [("concurrency", concurrency), ("crash", crash), ("attacks", attacks),
           ("outages", outages), ("replicas", replicas), ("limits", limits), ("catalog", catalog),
           ("throttle", throttle), ("stalls", stalls), ("providers", providers), ("tls", tls),
           ("upgrade", upgrade), ("variants", variants), ("safe_writes", safe_writes),
           ("otel", otel)]


if __name__ == "__main__":
    chosen = lib.parse_args("all fault tests", more=lambda p: p.add_argument(
        "--only", default="", help="comma-separated module names"))
    only = {x for x in chosen.only.split(",") if x}
    lib.run_modules(chosen, [(name, module.run) for name, module in MODULES
                             if not only or name in only], "faults")
