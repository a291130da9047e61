#!/usr/bin/python3
"""The bert-encoder training step, timing only (docs/training_scaling.md): `npusim train
--values off` of the zoo's bert-encoder layer (mean squared error against its hidden states) on
the chip presets tpu-v4-like (2 TensorCores, data parallel) and ascend-910-like (32 Da Vinci
cores, data parallel), for each batch: the step's cycles, its forward / backward / all-reduce
split, samples/s at the chip's clock, the all-reduce's share and link bytes, and the host CPU the
simulation took (user + system CPU seconds and peak resident memory, from GNU time), printed as a
markdown table.

  bench/train_scaling_bert.py [--npusim build/sim/npusim] [--batch 32 64 128 256]
                              [--hw tpu-v4-like ascend-910-like] [--memory-fidelity bulk]
                              [--optimizer-on chip|host] [--work DIR]

--memory-fidelity bulk times each DMA row in closed form instead of every burst through the
command-level HBM controller (docs/memory_system.md): the backward's element-granular transposes
make the command-level model the simulation's cost. --optimizer-on is npusim's (default: the
chip's fp32 update, whose cycles are the "optimizer" column; host: none on the chip).
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    p.add_argument("--batch", type=int, nargs="+", default=[32, 64, 128, 256])
    p.add_argument("--hw", nargs="+", default=["tpu-v4-like", "ascend-910-like"])
    p.add_argument("--workload", default="bert-encoder")
    p.add_argument("--memory-fidelity", default=None, choices=["command", "bulk"])
    p.add_argument("--optimizer-on", default=None, choices=["chip", "host"])
    p.add_argument("--work", default=None)
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="train_scaling_bert_")
    print("| hardware | batch | cores | samples per core | step cycles | forward | backward | "
          "all-reduce | optimizer | all-reduce share | samples/s | link bytes | host CPU s | "
          "peak RSS GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for hw in a.hw:
        for batch in a.batch:
            out = os.path.join(work, f"{hw}-{batch}")
            cmd = ["/usr/bin/time", "-f", "%U %S %M", a.npusim, "train", "--hw", hw,
                   "--workload", a.workload, "--batch", str(batch), "--values", "off",
                   "--out", out]
            if a.memory_fidelity:
                cmd += ["--memory-fidelity", a.memory_fidelity]
            if a.optimizer_on:
                cmd += ["--optimizer-on", a.optimizer_on]
            start = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            # GNU time's last stderr line: user and system CPU seconds, peak resident KiB.
            lines = r.stderr.strip().splitlines()
            user, system, rss_kb = lines[-1].split()[-3:]
            cpu, rss_gb = float(user) + float(system), float(rss_kb) / 2**20
            if r.returncode != 0:
                print(f"| {hw} | {batch} | failed ({time.time() - start:.0f} s, {cpu:.0f} s CPU, "
                      f"{rss_gb:.1f} GB): {' '.join(lines[:-1])[:300]} |")
                continue
            with open(os.path.join(out, "stats.json")) as f:
                t = json.load(f)["training"]
            link = t.get("allreduce", {}).get("link_bytes", 0)
            print(f"| {hw} | {batch} | {t['cores']} | {t['samples_per_core']} | "
                  f"{t['step_cycles']:.0f} | {t['forward_cycles']:.0f} | "
                  f"{t['backward_cycles']:.0f} | {t['communication_cycles']:.0f} | "
                  f"{t.get('optimizer_cycles', 0):.0f} | "
                  f"{100 * t['communication_cycles'] / t['step_cycles']:.1f} % | "
                  f"{t['samples_per_s']:.0f} | {link} | {cpu:.0f} | {rss_gb:.1f} |", flush=True)


if __name__ == "__main__":
    main()
