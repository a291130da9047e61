#!/usr/bin/python3
"""Sweeps npusim over a design space described by a JSON spec (docs/dse.md).

    scripts/dse.py configs/sweeps/array_size.json --out out/array_size
    scripts/dse.py SPEC.json --out DIR --scheduler tcp://HOST:8786     # on a Dask cluster

Writes DIR/results.csv (a row per point and workload) and DIR/runs/<key>/ (each run's hardware
description, stats.json, report.txt). Run it again to resume: finished runs are skipped.
Exit codes: 0 every run recorded (failed points included, see the status column), 2 bad spec or
usage, 1 some runs were lost (killed, or their worker died): run again to retry them.
Uses Debian's python3-tqdm, and python3-distributed for --scheduler; run it with /usr/bin/python3.
"""

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from npusim_dse import results, runner, spec  # noqa: E402
from npusim_dse.npusim_cli import NpusimError, default_binary, run_flags  # noqa: E402


class UsageError(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="dse.py", description="Run a design-space sweep of npusim (docs/dse.md).")
    ap.add_argument("spec", help="the sweep spec (JSON), e.g. configs/sweeps/array_size.json")
    ap.add_argument("--out", help="sweep directory (default: dse-out/<spec name>)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="runs at once on this machine (default: the usable cores)")
    ap.add_argument("--scheduler", help="run on a Dask cluster: tcp://HOST:PORT of its scheduler "
                    "(workers need npusim at the same path, and the workload files)")
    ap.add_argument("--npusim", default=None,
                    help="the npusim binary (default: $NPUSIM, else build/sim/npusim)")
    ap.add_argument("--values", choices=("on", "off"),
                    help="npusim run --values: off runs timing only (overrides the spec's run)")
    ap.add_argument("--cli", action="store_true",
                    help="run each point as an npusim process, not in worker processes through "
                    "the Python module of the same build (build/python; the default when it is "
                    "there)")
    ap.add_argument("--retry-failed", action="store_true",
                    help="run again the points that failed before (they are skipped otherwise)")
    ap.add_argument("--limit", type=int, default=None,
                    help="only the first N points (a trial of a large sweep; the rest resume "
                    "later)")
    ap.add_argument("--dry-run", action="store_true",
                    help="check the spec and list the points; run nothing")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap.parse_args(argv)


def main(argv):
    started = time.perf_counter()
    try:
        args = parse_args(argv)
    except SystemExit as e:  # argparse printed its message; usage errors are exit 2 as in npusim
        return 0 if e.code == 0 else 2
    npusim = os.path.abspath(args.npusim or default_binary())
    try:
        if not os.access(npusim, os.X_OK):
            raise UsageError(f"npusim binary not found at {npusim}: build it (scripts/build.sh) "
                             "or pass --npusim")
        if args.jobs is not None and args.jobs < 1:
            raise UsageError(f"--jobs {args.jobs}: expected at least 1")
        if args.limit is not None and args.limit < 1:
            raise UsageError(f"--limit {args.limit}: expected at least 1")
        if args.scheduler is not None and not args.scheduler.startswith(("tcp://", "tls://")):
            raise UsageError(f"--scheduler '{args.scheduler}': expected tcp://HOST:PORT")
        sweep = spec.load(args.spec, npusim, values=args.values)
        if any("values" in r.flags for r in sweep.runs) and "values" not in run_flags(npusim):
            raise UsageError(f"{npusim} has no 'run --values': it cannot run timing only; drop "
                             "--values (and the spec's run.values) or use a newer npusim")
    except (UsageError, NpusimError) as e:
        print(f"dse.py: error: {e}", file=sys.stderr)
        return 2
    except spec.SpecError as e:
        for problem in e.problems:
            print(f"dse.py: error: {problem}", file=sys.stderr)
        return 2
    out = args.out or os.path.join("dse-out", os.path.splitext(os.path.basename(args.spec))[0])
    jobs = args.jobs or len(os.sched_getaffinity(0))
    if args.limit is not None:
        sweep.points = sweep.points[:args.limit]
        sweep.runs = [r for r in sweep.runs if r.point.index < args.limit]
    runs = sweep.runs
    print(f"dse.py: {args.spec}: {len(sweep.points)} points x {len(sweep.workloads)} workloads = "
          f"{len(runs)} runs" + (f"; {sweep.excluded} points excluded by the input constraints"
                                 if sweep.excluded else "")
          + (f"; {sweep.duplicates} duplicate samples dropped" if sweep.duplicates else ""),
          file=sys.stderr)
    if args.dry_run:
        names = [p.name for p in sweep.parameters]
        print("\t".join(["point", "workload", "key"] + names))
        for r in runs:
            print("\t".join([str(r.point.index), r.workload.label, r.key] +
                            [str(v) for v in r.point.labels]))
        return 0
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(args.spec, os.path.join(out, "spec.json"))
    store = runner.Store(out)
    todo = []
    for r in runs:
        if store.finished(r.key):
            if args.retry_failed and store.load(r.key)[0]["exit_code"] != 0:
                store.forget(r.key)
            else:
                continue
        todo.append(r)
    unique = list({r.key: r for r in todo}.values())
    in_process = not args.cli and not args.scheduler and runner.module_dir(npusim) is not None
    where = args.scheduler or f"{jobs} local " + ("worker processes (Python module)"
                                                  if in_process else "jobs")
    print(f"dse.py: {len(runs) - len(todo)} runs already done, {len(unique)} to run on {where}",
          file=sys.stderr)
    try:
        lost = runner.run_all(unique, npusim, store, jobs, args.scheduler,
                              progress=not args.no_progress, in_process=not args.cli)
    except KeyboardInterrupt:
        print("\ndse.py: interrupted; finished runs are kept, run again to resume",
              file=sys.stderr)
        return 130
    except OSError as e:  # e.g. the scheduler cannot be reached
        print(f"dse.py: error: {args.scheduler or 'local run'}: {e}", file=sys.stderr)
        return 2
    table = results.rows(sweep, store, lost)
    csv_path = os.path.join(out, "results.csv")
    results.write_csv(csv_path, sweep, table)
    counts = {}
    for row in table:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"dse.py: {csv_path}: {len(table)} rows ({summary}) in "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
