#!/usr/bin/env python3
"""Regenerates the scaling table of docs/multicore.md from real npusim runs.

usage: scripts/multicore_scaling.py [--npusim build/sim/npusim] [--write docs/multicore.md]
                                   [--parallel data|tensor]

resnet50 at batch 8, timing only (--values off), data parallel on 1, 2 and 4 TPU v4 TensorCores
(the tpu-v4-like-core preset with `cores` set) twice: on the core's own 16 HBM2 channels
(614 GB/s, shared by all the cores) and on 2 of them (77 GB/s). Every figure is read from the
run's stats.json (docs/stats.md); the wall time is the host's (host.wall_seconds), the CPU time
the npusim process's user + system time. Without --write
the table goes to stdout; with --write the block between the markers of the doc is replaced. A
failed run stops the script with a non-zero exit code. Python 3, standard library only.

--parallel tensor makes the table of the section "Tensor parallelism" instead (its own markers):
bert-encoder at batch 1 (bf16, values checked) on 1, 2 and 4 TPU v4 TensorCores with the core's
16 HBM2 channels, each with --parallel tensor (every matrix layer of two or more array-column tiles
split) and --parallel auto (split where the compiler's estimate says it pays).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

from doc_block import replace_block

BEGIN = "<!-- multicore_scaling.py: begin generated table -->"
END = "<!-- multicore_scaling.py: end generated table -->"
TENSOR_BEGIN = "<!-- multicore_scaling.py --parallel tensor: begin generated table -->"
TENSOR_END = "<!-- multicore_scaling.py --parallel tensor: end generated table -->"
TENSOR_WORKLOAD = "bert-encoder"

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


def run(npusim, tmp, cores, channels, workload=WORKLOAD, batch=BATCH, parallel="data",
        values="off"):
    hw = npusim_json(npusim, ["presets", "--show", "tpu-v4-like-core"])
    hw["cores"] = cores
    hw["memory"]["channels"] = channels
    hw["memory"]["bandwidth_gbps"] = 0  # the preset's peak with these channels
    hw["memory"]["capacity_bytes"] = channels << 30
    hw["name"] = "tpu-v4-like-core x%d, %d channels" % (cores, channels)
    hw_path = os.path.join(tmp, "hw-%d-%d.json" % (cores, channels))
    with open(hw_path, "w") as f:
        json.dump(hw, f)
    out = os.path.join(tmp, "run-%d-%d-%s" % (cores, channels, parallel))
    cmd = [npusim, "run", "--hw", hw_path, "--workload", workload, "--batch", str(batch),
           "--values", values, "--parallel", parallel, "--out", out]
    sys.stderr.write("multicore_scaling.py: %s %s, %d cores, %d channels\n" %
                     (workload, parallel, cores, channels))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit("multicore_scaling.py: run failed (exit %d): %s" %
                 (result.returncode, " ".join(cmd)))
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    # The simulation's CPU time (user + system), which the machine's load does not inflate as it
    # does the wall time.
    stats["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return stats


def table(npusim):
    rows = ["| memory | cores | total cycles | speed-up | load imbalance | max core MXU busy "
            "| off-chip use of peak | cycles with DMA of several cores | wall s | CPU s |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="npusim-multicore-") as tmp:
        for channels, memory in MEMORIES:
            base = None
            for cores in CORES:
                s = run(npusim, tmp, cores, channels)
                cycles = s["total_cycles"]
                base = base or cycles
                chip = s["chip"]
                busiest = max(c["mxu_busy_cycles"] for c in s["cores"])
                rows.append("| %s | %d | %d | %.2fx | %.3f | %d | %.1f %% | %d | %.2f | %.2f |" % (
                    memory, cores, cycles, base / cycles, chip["load_imbalance"], busiest,
                    100.0 * chip["offchip_utilization"], chip["offchip_contention_cycles"],
                    s["host"]["wall_seconds"], s["cpu_seconds"]))
    return "\n".join(rows) + "\n"


def tensor_table(npusim):
    rows = ["| --parallel | cores | total cycles | speed-up | matrix layers split | busy cycles per "
            "core | MXU busy cycles per core | off-chip MB read / written | check | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    channels = MEMORIES[0][0]
    with tempfile.TemporaryDirectory(prefix="npusim-multicore-") as tmp:
        base = None
        for parallel in ["tensor", "auto"]:
            for cores in CORES:
                if cores == 1 and parallel == "auto":
                    continue  # one core: the same single-core program as the tensor row
                s = run(npusim, tmp, cores, channels, TENSOR_WORKLOAD, 1, parallel, "on")
                cycles = s["total_cycles"]
                base = base or cycles
                matrix = [l for l in s["layers"] if l["op"] in ("conv2d", "dense", "matmul")]
                split = sum(1 for l in matrix if l["cores"] > 1)
                used = s["cores"][:s["chip"]["cores_used"]]
                rows.append("| %s | %d | %d | %.2fx | %d of %d | %s | %s | %.1f / %.1f | %s | %.2f |"
                            % (parallel, cores, cycles, base / cycles, split, len(matrix),
                               " / ".join(str(c["busy_cycles"]) for c in used),
                               " / ".join(str(c["mxu_busy_cycles"]) for c in used),
                               s["dram"]["read_bytes"] / 1e6, s["dram"]["write_bytes"] / 1e6,
                               "pass" if s["functional_check"]["within_tolerance"] else "FAIL",
                               s["host"]["wall_seconds"]))
    return "\n".join(rows) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npusim", default="build/sim/npusim")
    parser.add_argument("--write", help="replace the generated block of this markdown file")
    parser.add_argument("--parallel", choices=["data", "tensor"], default="data",
                        help="which table: data (resnet50, the default) or tensor (bert-encoder)")
    args = parser.parse_args()
    begin, end = (BEGIN, END) if args.parallel == "data" else (TENSOR_BEGIN, TENSOR_END)
    text = table(args.npusim) if args.parallel == "data" else tensor_table(args.npusim)
    if not args.write:
        sys.stdout.write(text)
        return
    replace_block(args.write, begin, end, text, "multicore_scaling.py")


if __name__ == "__main__":
    main()
