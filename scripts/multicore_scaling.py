#!/usr/bin/env python3
"""Regenerates the scaling table of docs/multicore.md from real npusim runs.

usage: scripts/multicore_scaling.py [--npusim build/sim/npusim] [--write docs/multicore.md]

resnet50 at batch 8, timing only (--values off), data parallel on 1, 2 and 4 TPU v4 TensorCores
(the tpu-v4-like-core preset with `cores` set) twice: on the core's own 16 HBM2 channels
(614 GB/s, shared by all the cores) and on 2 of them (77 GB/s). Every figure is read from the
run's stats.json (docs/stats.md); the wall time is the host's (host.wall_seconds). Without --write
the table goes to stdout; with --write the block between the markers of the doc is replaced. A
failed run stops the script with a non-zero exit code. Python 3, standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from doc_block import replace_block

BEGIN = "<!-- multicore_scaling.py: begin generated table -->"
END = "<!-- multicore_scaling.py: end generated table -->"

WORKLOAD = "resnet50"
BATCH = 8
CORES = [1, 2, 4]
MEMORIES = [(16, "16 HBM2 channels, 614 GB/s"), (2, "2 HBM2 channels, 77 GB/s")]


def npusim_json(npusim, args):
    result = subprocess.run([npusim] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit("multicore_scaling.py: failed (exit %d): npusim %s" %
                 (result.returncode, " ".join(args)))
    return json.loads(result.stdout)


def run(npusim, tmp, cores, channels):
    hw = npusim_json(npusim, ["presets", "--show", "tpu-v4-like-core"])
    hw["cores"] = cores
    hw["memory"]["channels"] = channels
    hw["memory"]["bandwidth_gbps"] = 0  # the preset's peak with these channels
    hw["memory"]["capacity_bytes"] = channels << 30
    hw["name"] = "tpu-v4-like-core x%d, %d channels" % (cores, channels)
    hw_path = os.path.join(tmp, "hw-%d-%d.json" % (cores, channels))
    with open(hw_path, "w") as f:
        json.dump(hw, f)
    out = os.path.join(tmp, "run-%d-%d" % (cores, channels))
    cmd = [npusim, "run", "--hw", hw_path, "--workload", WORKLOAD, "--batch", str(BATCH),
           "--values", "off", "--parallel", "data", "--out", out]
    sys.stderr.write("multicore_scaling.py: %d cores, %d channels\n" % (cores, channels))
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit("multicore_scaling.py: run failed (exit %d): %s" %
                 (result.returncode, " ".join(cmd)))
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f)


def table(npusim):
    rows = ["| memory | cores | total cycles | speed-up | load imbalance | max core MXU busy "
            "| off-chip use of peak | cycles with DMA of several cores | wall s |",
            "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="npusim-multicore-") as tmp:
        for channels, memory in MEMORIES:
            base = None
            for cores in CORES:
                s = run(npusim, tmp, cores, channels)
                cycles = s["total_cycles"]
                base = base or cycles
                chip = s["chip"]
                busiest = max(c["mxu_busy_cycles"] for c in s["cores"])
                rows.append("| %s | %d | %d | %.2fx | %.3f | %d | %.1f %% | %d | %.2f |" % (
                    memory, cores, cycles, base / cycles, chip["load_imbalance"], busiest,
                    100.0 * chip["offchip_utilization"], chip["offchip_contention_cycles"],
                    s["host"]["wall_seconds"]))
    return "\n".join(rows) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npusim", default="build/sim/npusim")
    parser.add_argument("--write", help="replace the generated block of this markdown file")
    args = parser.parse_args()
    text = table(args.npusim)
    if not args.write:
        sys.stdout.write(text)
        return
    replace_block(args.write, BEGIN, END, text, "multicore_scaling.py")


if __name__ == "__main__":
    main()
