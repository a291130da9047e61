#!/usr/bin/python3
"""The bulk memory fidelity against the command-level one: cycles, DRAM energy and CPU time.

Runs each case twice, timing only (`--values off`: the same cycles as with values), with
`--memory-fidelity command` and `--memory-fidelity bulk`, and prints per case the total cycles
(for `generate`: the mean decode-step cycles and the prefill's), the DRAM energy
(memory.energy_pj, for generate the prefill's), their differences and the CPU seconds of each run.
docs/memory_system.md ("Memory fidelity") records the table.

Default cases: the zoo's mnist-cnn, resnet18, bert-encoder and mlp-1000 in int8 and bf16 on
tpu-v1-hbm (HBM2, 8 channels), tpu-v4-like-core (HBM2-2400, 16 channels), tpu-v1 (DDR3-2133) and
edge (LPDDR4), the dense stack of docs/llm.md on tpu-v4-like-core, and gpt2-small decode on
tpu-v4-like (prompt 32, 4 new tokens).

Usage: bench/memory_fidelity.py [--npusim BIN] [--quick] [--max-percent 2]
  --quick: only tpu-v1-hbm and tpu-v4-like-core, int8, and no dense stack or gpt2-small.
Exits 1 when a difference exceeds --max-percent.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = ("mnist-cnn", "resnet18", "bert-encoder", "mlp-1000")
PRESETS = ("tpu-v1-hbm", "tpu-v4-like-core", "tpu-v1", "edge")


def run(npusim, args, fidelity):
    """(stats, CPU seconds) of one npusim run with --memory-fidelity `fidelity`."""
    with tempfile.TemporaryDirectory(prefix="npusim-fid-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([npusim] + args + ["--memory-fidelity", fidelity, "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit(f"memory_fidelity: {' '.join(args)} ({fidelity}) exited {p.returncode}:\n"
                     f"{p.stderr[-2000:]}")
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return stats, cpu


def figures(stats):
    """{name: value} compared between the fidelities."""
    if "generation" in stats:
        g = stats["generation"]
        return {"decode cycles (all)": g["decode_cycles"],
                "TPOT mean (us)": g["tpot_s"]["mean"] * 1e6,
                "prefill cycles": g["prefill_cycles"],
                "DRAM energy pJ (prefill)": stats["prefill"]["memory"]["energy_pj"]}
    return {"cycles": stats["total_cycles"], "DRAM energy pJ": stats["memory"]["energy_pj"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build/sim/npusim"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-percent", type=float, default=2.0)
    args = ap.parse_args()
    if not os.access(args.npusim, os.X_OK):
        print(f"memory_fidelity: {args.npusim} not found; build npusim or pass --npusim",
              file=sys.stderr)
        return 2
    presets = PRESETS[:2] if args.quick else PRESETS
    dtypes = ("int8",) if args.quick else ("int8", "bf16")
    cases = [(f"{net} {dtype}", hw, ["run", "--hw", hw, "--workload", net, "--dtype", dtype,
                                     "--values", "off"])
             for hw in presets for net in ZOO for dtype in dtypes]
    if not args.quick:
        stack = os.path.join(ROOT, "bench/workloads/dense-stack-4096-11008.json")
        cases.append(("dense stack bf16", "tpu-v4-like-core",
                      ["run", "--hw", "tpu-v4-like-core", "--workload", stack, "--dtype", "bf16",
                       "--values", "off"]))
        cases.append(("gpt2-small decode", "tpu-v4-like",
                      ["generate", "--hw", "tpu-v4-like", "--workload", "gpt2-small",
                       "--prompt-tokens", "32", "--new-tokens", "4", "--values", "off"]))
    print(f"{'case':<22} {'hardware':<17} {'figure':<25} {'command':>14} {'bulk':>14} "
          f"{'diff':>7} {'CPU s cmd':>9} {'CPU s bulk':>10}")
    worst = 0.0
    for name, hw, cmd in cases:
        a, cpu_a = run(args.npusim, cmd, "command")
        b, cpu_b = run(args.npusim, cmd, "bulk")
        fa, fb = figures(a), figures(b)
        for i, key in enumerate(fa):
            diff = 100.0 * (fb[key] - fa[key]) / fa[key] if fa[key] else 0.0
            worst = max(worst, abs(diff))
            cpu = f"{cpu_a:9.2f} {cpu_b:10.2f}" if i == 0 else ""
            print(f"{name if i == 0 else '':<22} {hw if i == 0 else '':<17} {key:<25} "
                  f"{fa[key]:14.8g} {fb[key]:14.8g} {diff:+6.2f}% {cpu}", flush=True)
    print(f"largest difference {worst:.2f} % (limit {args.max_percent} %)")
    return 0 if worst <= args.max_percent else 1


if __name__ == "__main__":
    sys.exit(main())
