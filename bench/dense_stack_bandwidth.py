#!/usr/bin/python3
"""Off-chip bandwidth a memory-bound workload reaches: LLM decode's weight streaming.

Runs bench/workloads/dense-stack-4096-11008.json (eight dense layers alternating 4096 -> 11008 ->
4096 at batch 1, 721 MB of bf16 weights) timing only on a hardware preset and prints the achieved
off-chip bandwidth (bytes moved / simulated time), its share of the memory's peak, the simulated
cycles, and the CPU seconds and peak resident memory of the run (npusim and its simulation
process). docs/llm.md, "Memory-bound fidelity", records the figures.

Usage: bench/dense_stack_bandwidth.py [--hw tpu-v4-like-core] [--workload FILE] [--npusim BIN]
                                      [--min-percent P]   (exit 1 when below P % of peak)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="tpu-v4-like-core")
    ap.add_argument("--workload",
                    default=os.path.join(ROOT, "bench/workloads/dense-stack-4096-11008.json"))
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build/sim/npusim"))
    ap.add_argument("--min-percent", type=float, default=None)
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                    help="further npusim run flags")
    args = ap.parse_args()
    if not os.access(args.npusim, os.X_OK):
        print(f"dense_stack_bandwidth: {args.npusim} not found; build npusim or pass --npusim",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="npusim-bw-") as out:
        cmd = [args.npusim, "run", "--hw", args.hw, "--workload", args.workload, "--dtype", "bf16",
               "--values", "off", "--out", out] + args.extra
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.monotonic()
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if run.returncode != 0:
            print(run.stdout + run.stderr, file=sys.stderr)
            print(f"dense_stack_bandwidth: npusim exited {run.returncode}", file=sys.stderr)
            return 2
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)
    mem = stats["memory"]
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rss_mb = after.ru_maxrss / 1024  # KiB on Linux: the largest of npusim and its core process
    gbps, peak = mem["bandwidth_gbps"], mem["peak_bandwidth_gbps"]
    percent = 100.0 * gbps / peak
    traffic = stats["dram"]["read_bytes"] + stats["dram"]["write_bytes"]
    bound = traffic / (peak * 1e9) * stats["clock_mhz"] * 1e6
    print(f"workload       {os.path.basename(args.workload)} on {args.hw}, bf16, timing only")
    print(f"off-chip bytes {traffic}")
    print(f"cycles         {stats['total_cycles']} (bandwidth bound {bound:.0f})")
    print(f"bandwidth      {gbps:.1f} of {peak:.1f} GB/s = {percent:.1f} % of peak")
    print(f"cpu seconds    {cpu:.2f} (wall {wall:.1f} s)")
    print(f"peak rss       {rss_mb:.0f} MiB")
    if args.min_percent is not None and percent < args.min_percent:
        print(f"dense_stack_bandwidth: {percent:.1f} % of peak is below {args.min_percent} %",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
