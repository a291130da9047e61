#!/usr/bin/python3
"""Data-parallel training steps on 1, 2 and 4 TPU v4 TensorCores (docs/training.md, "Data
parallel"): `npusim train --parallel data` of the zoo's mnist-cnn and
workloads/training/digits-mlp.json on the bundled digits, the step's cycles, samples/s at the
core clock and the all-reduce's share of the step, printed as a markdown table.

  bench/train_scaling.py [--npusim build/sim/npusim] [--batch 64] [--steps 2] [--work DIR]
                         [--ascend]

Hardware: tpu-v4-like-core (one TensorCore, 16 HBM2 channels), the same core with "cores": 2
and 4 on a ring (the off-chip memory stays one core's: the cores share it), and the two-core
chip preset tpu-v4-like (32 channels). --ascend adds ascend-like (one Da Vinci core) and
ascend-910-like (32 of them, a crossbar). The speed-up is against the one-core row above it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = {"mnist-cnn": "mnist-cnn",
             "digits-mlp": os.path.join(ROOT, "workloads", "training", "digits-mlp.json")}


def core_with(cores, work):
    with open(os.path.join(ROOT, "configs", "hw", "tpu-v4-like-core.json")) as f:
        hw = json.load(f)
    if cores == 1:
        return "tpu-v4-like-core"
    hw["name"] = f"tpu-v4-like-core-x{cores}"
    hw["cores"] = cores
    hw["interconnect"] = {"topology": "ring", "link_bytes_per_cycle": 64, "hop_latency_cycles": 4}
    path = os.path.join(work, f"x{cores}.json")
    with open(path, "w") as f:
        json.dump(hw, f)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--work", default=None)
    p.add_argument("--ascend", action="store_true")
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="train_scaling_")
    data = os.path.join(work, "digits")
    if not os.path.isdir(data):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), data],
                       check=True, stdout=subprocess.DEVNULL)
    hws = [("tpu-v4-like-core", 1, core_with(1, work)), ("tpu-v4-like-core, cores 2", 2,
                                                          core_with(2, work)),
           ("tpu-v4-like-core, cores 4", 4, core_with(4, work)), ("tpu-v4-like", 2, "tpu-v4-like")]
    if a.ascend:  # its own one-core base: an Ascend core is not a TensorCore
        hws += [("ascend-like", 1, "ascend-like"), ("ascend-910-like", 32, "ascend-910-like")]
    print("| workload | hardware | cores | samples per core | step cycles | forward | backward | "
          "all-reduce | all-reduce share | samples/s | speed-up | link bytes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, workload in WORKLOADS.items():
        base = None
        for label, cores, hw in hws:
            out = os.path.join(work, f"{name}-{label.replace(' ', '').replace(',', '-')}")
            cmd = [a.npusim, "train", "--hw", hw, "--workload", workload, "--data", data,
                   "--batch", str(a.batch), "--steps", str(a.steps), "--parallel", "data",
                   "--out", out]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"| {name} | {label} | {cores} | failed: {r.stderr.strip()} |")
                continue
            with open(os.path.join(out, "stats.json")) as f:
                t = json.load(f)["training"]
            if cores == 1:
                base = t["samples_per_s"]
            link = t.get("allreduce", {}).get("link_bytes", 0)
            print(f"| {name} | {label} | {t['cores']} | {t['samples_per_core']} | "
                  f"{t['step_cycles']:.0f} | {t['forward_cycles']:.0f} | "
                  f"{t['backward_cycles']:.0f} | {t['communication_cycles']:.0f} | "
                  f"{100 * t['communication_cycles'] / t['step_cycles']:.1f} % | "
                  f"{t['samples_per_s']:.0f} | {t['samples_per_s'] / base:.2f}x | {link} |")


if __name__ == "__main__":
    main()
