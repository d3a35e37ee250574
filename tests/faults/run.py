#!/usr/bin/env -S python3 -B
"""Every fault test, one after another, with one closing line.

    tests/faults/run.py --store sqlite|postgres [--scale quick|full] [--host spin-lite|spin]
                        [--wasm F] [--manifest F] [--only NAME,...]

Runs MODULES against their own hosts; a module skips (with a note) the store
or host it does not need (`ctx.only_on`). PostgreSQL: the pg-cluster.sh
cluster in FAULTS_PG_DIR, else one of its own. --scale full (FAULTS_SCALE)
is `make soak`'s. Each named check is one test; prints `faults STORE: N
passed, M failed`, appends `N M` to $E2E_TALLY when set, exits 0 only when
nothing failed. FAULTS_KEEP=1 keeps the temporary directory (host logs).
"""

import importlib

import lib

MODULES = ["concurrency", "crash", "attacks", "outages", "replicas", "limits", "catalog",
           "throttle", "stalls", "providers", "tls", "upgrade", "variants", "safe_writes", "otel",
           "browser", "page", "typed_client", "registry", "backups", "transfer"]


if __name__ == "__main__":
    chosen = lib.parse_args("all fault tests", more=lambda p: p.add_argument(
        "--only", default="", help="comma-separated module names"))
    only = {x for x in chosen.only.split(",") if x}
    lib.run_modules(chosen, [(name, importlib.import_module(name).run) for name in MODULES
                             if not only or name in only], "faults")
