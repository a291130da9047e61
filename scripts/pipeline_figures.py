#!/usr/bin/env python3
"""Regenerates the pipeline table of docs/multicore.md from real npusim runs.

usage: scripts/pipeline_figures.py [--npusim build/sim/npusim] [--write docs/multicore.md]

mnist-cnn at batch 8, int8 with values (each run's every-tensor check must be bit-exact), as a
pipeline (--parallel pipeline) on 1, 2 and 4 cores of a small chip (16x16 arrays at 1 GHz, a
1 TB/s memory, a ring of 32 B/cycle links with 3 cycles per hop), in micro-batches of 1 and 2
images. Every figure is read from the run's stats.json (docs/stats.md). Without --write the table
goes to stdout; with --write the block between the markers of the doc is replaced. A failed run
stops the script with a non-zero exit code. Python 3, standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MARK = "<!-- pipeline_figures.py: %s generated table -->"
BATCH = 8
CLOCK_MHZ = 1000


def chip(cores):
    return {"schema_version": 1, "name": "pipeline-figure x%d" % cores, "clock_mhz": CLOCK_MHZ,
            "cores": cores,
            "interconnect": {"topology": "ring", "link_bytes_per_cycle": 32,
                             "hop_latency_cycles": 3},
            "matrix_unit": {"rows": 16, "cols": 16},
            "memory": {"model": "simple", "bandwidth_gbps": 1000, "latency_ns": 20}}


def stats_of(npusim, tmp, cores, micro_batch):
    hw = os.path.join(tmp, "hw-%d.json" % cores)
    with open(hw, "w") as f:
        json.dump(chip(cores), f)
    out = os.path.join(tmp, "run-%d-%d" % (cores, micro_batch))
    cmd = [npusim, "run", "--hw", hw, "--workload", "mnist-cnn", "--batch", str(BATCH),
           "--parallel", "pipeline", "--micro-batch", str(micro_batch), "--out", out]
    sys.stderr.write("pipeline_figures.py: %d cores, micro-batch %d\n" % (cores, micro_batch))
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        with open(os.path.join(out, "stats.json")) as f:
            s = json.load(f)
    except subprocess.CalledProcessError as e:
        sys.exit("%spipeline_figures.py: exit %d: %s" % (e.stderr, e.returncode, " ".join(cmd)))
    if not s["functional_check"]["bit_exact"]:
        sys.exit("pipeline_figures.py: not bit-exact: %s" % " ".join(cmd))
    return s


def table(npusim):
    lines = ["| micro-batch | cores | total cycles | images / s | speed-up | busy cycles per "
             "stage (core 0, 1, ...) | interconnect bytes | link utilization |",
             "|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="npusim-pipeline-") as tmp:
        for micro_batch in (1, 2):
            one_core = None
            for cores in (1, 2, 4):
                s = stats_of(npusim, tmp, cores, micro_batch)
                cycles = s["total_cycles"]
                one_core = one_core or cycles
                link = s.get("interconnect", {})
                lines.append("| %d | %d | %d | %.0f | %.2fx | %s | %d | %.2f %% |" % (
                    micro_batch, cores, cycles, BATCH / (cycles / (CLOCK_MHZ * 1e6)),
                    one_core / cycles, ", ".join(str(c["busy_cycles"]) for c in s["cores"]),
                    link.get("bytes", 0), 100.0 * link.get("link_utilization", 0.0)))
    return "\n".join(lines) + "\n"


def main():
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--write", metavar="MARKDOWN",
                         help="the doc whose generated block the table replaces (else stdout)")
    options.add_argument("--npusim", default="build/sim/npusim", help="the npusim binary")
    args = options.parse_args()
    text = table(args.npusim)
    if args.write:
        replace_block(args.write, text)
    else:
        print(text, end="")


def replace_block(path, text):
    """Puts `text` between the begin and end markers of the markdown file `path`."""
    begin, end = re.escape(MARK % "begin"), re.escape(MARK % "end")
    with open(path) as f:
        doc = f.read()
    block = re.compile("(%s\n).*?(\n%s)" % (begin, end), re.DOTALL)
    new, found = block.subn(lambda m: m.group(1) + "\n" + text + m.group(2), doc)
    if found != 1:
        sys.exit("pipeline_figures.py: %s needs one block between %s and %s" % (path, begin, end))
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
