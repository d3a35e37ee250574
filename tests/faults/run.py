#!/usr/bin/env python3
"""Every fault test, one after another, with one closing line.

    tests/faults/run.py --store sqlite|postgres [--scale quick|full] [--host book-host|spin]
                        [--only NAME,...]

Runs concurrency, crash, attacks, outages, replicas (PostgreSQL only), limits,
catalog, throttle, stalls, providers, tls (PostgreSQL only) and upgrade (see each file) against
their own hosts; PostgreSQL: the pg-cluster.sh cluster in FAULTS_PG_DIR,
else one of its own, removed at the end. --scale full (or FAULTS_SCALE=full)
is the `make soak` size. Each named check is one test.

Output: `faults STORE: N passed, M failed`; `N M` is appended to $E2E_TALLY
when set. Exit status 0 only when nothing failed. FAULTS_KEEP=1 keeps the
temporary directory (host logs).
"""

import argparse
import atexit
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lib  # noqa: E402
import attacks  # noqa: E402
import catalog  # noqa: E402
import concurrency  # noqa: E402
import crash  # noqa: E402
import limits  # noqa: E402
import outages  # noqa: E402
import providers  # noqa: E402
import replicas  # noqa: E402
import stalls  # noqa: E402
import throttle  # noqa: E402
import tls  # noqa: E402
import upgrade  # noqa: E402

MODULES = [("concurrency", concurrency), ("crash", crash), ("attacks", attacks),
           ("outages", outages), ("replicas", replicas), ("limits", limits), ("catalog", catalog),
           ("throttle", throttle), ("stalls", stalls), ("providers", providers), ("tls", tls),
           ("upgrade", upgrade)]


def main():
    p = argparse.ArgumentParser(description="all fault tests")
    lib.add_arguments(p)
    p.add_argument("--only", default="", help="comma-separated module names")
    args = p.parse_args()
    only = {x for x in args.only.split(",") if x}
    lib.install_signal_handlers()
    ctx = lib.Context(args.store, args.scale, host=args.host)
    atexit.register(ctx.cleanup)
    try:
        lib.preconditions(ctx)
        ctx.setup_pg()
    except Exception as e:  # noqa: BLE001
        ctx.tally.check(False, "setup", repr(e))
        sys.exit(ctx.tally.finish())
    for name, module in MODULES:
        if only and name not in only:
            continue
        before = (ctx.tally.passed, ctx.tally.failed)
        started = time.monotonic()
        ctx.tally.prefix = f"{name}: "
        lib.run_guarded(ctx, name, module.run)
        ctx.tally.prefix = ""
        lib.log(f"faults {args.store}: {name}: {ctx.tally.passed - before[0]} passed, "
                f"{ctx.tally.failed - before[1]} failed in {time.monotonic() - started:.0f}s")
    code = ctx.tally.finish()
    ctx.cleanup(failed=code != 0)
    sys.exit(code)


if __name__ == "__main__":
    main()
