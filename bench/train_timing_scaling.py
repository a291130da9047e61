#!/usr/bin/python3
"""Timing-only training steps (`npusim train --values off`, docs/training_scaling.md) of a zoo
network over batch sizes on chips of several cores, data parallel: step cycles, samples/s at the
chip's clock, the split into forward / backward / all-reduce, and the CPU and memory each point
took to simulate, printed as a markdown table.

  bench/train_timing_scaling.py [--npusim build/sim/npusim] [--workload resnet50]
                                [--hw tpu-v4-like:32,64 --hw ascend-910-like:32] [--work DIR]
                                [--memory-fidelity command|bulk]

Each --hw is a preset and its batches (comma-separated). A point that fails (memory, a compile
refusal) prints its message in the table instead of figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def point(npusim, hw, workload, batch, work, fidelity=None):
    out = os.path.join(work, f"{hw}-{workload}-{batch}")
    extra = ["--memory-fidelity", fidelity] if fidelity else []
    # GNU time's last stderr line: user + system CPU seconds and the peak resident memory.
    r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", npusim, "train", "--hw", hw,
                        "--workload", workload, "--batch", str(batch), "--values", "off",
                        "--parallel", "data", "--out", out] + extra, capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    user, system, rss_kb = lines[-1].split()[-3:]
    host = {"cpu_s": float(user) + float(system), "max_rss_gb": float(rss_kb) / 2**20}
    if r.returncode != 0:
        return None, host, (lines[-2] if len(lines) > 1 else f"exit {r.returncode}")
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f)["training"], host, ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    p.add_argument("--workload", default="resnet50")
    p.add_argument("--hw", action="append",
                   help="PRESET:B1,B2,... (default tpu-v4-like:32 and ascend-910-like:32)")
    p.add_argument("--work", help="directory for the runs (default: a temporary one)")
    p.add_argument("--memory-fidelity", choices=["command", "bulk"],
                   help="the off-chip memory model (default: the hardware's, command-level)")
    a = p.parse_args()
    specs = a.hw or ["tpu-v4-like:32", "ascend-910-like:32"]
    work = a.work or tempfile.mkdtemp(prefix="train_timing_scaling.")
    print("| workload | hardware | cores | batch | samples per core | step cycles | forward | "
          "backward | all-reduce | all-reduce share | samples/s | gradient bytes | "
          "simulation CPU s | max RSS GB |")
    print("|" + "---|" * 14)
    for spec in specs:
        hw, batches = spec.split(":")
        for batch in [int(b) for b in batches.split(",")]:
            t, host, error = point(a.npusim, hw, a.workload, batch, work, a.memory_fidelity)
            if t is None:
                print(f"| {a.workload} | {hw} | | {batch} | | {error} | | | | | | | "
                      f"{host['cpu_s']:.0f} | {host['max_rss_gb']:.1f} |")
                continue
            comm = t["communication_cycles"]
            grad = t.get("allreduce", {}).get("gradient_bytes", 0)
            print(f"| {a.workload} | {hw} | {t['cores']} | {batch} | {t['samples_per_core']} | "
                  f"{t['step_cycles']:.0f} | {t['forward_cycles']:.0f} | "
                  f"{t['backward_cycles']:.0f} | {comm:.0f} | "
                  f"{100 * comm / t['step_cycles']:.1f} % | {t['samples_per_s']:.0f} | {grad} | "
                  f"{host['cpu_s']:.0f} | {host['max_rss_gb']:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
