#!/usr/bin/env python3
"""Regenerates the tables of docs/studies.md from real npusim runs.

usage: scripts/studies.py [--npusim build/sim/npusim] [--write docs/studies.md]

Every number comes from a run of npusim with --out into a temporary directory and is read
from its stats.json (docs/stats.md). Without --write the markdown tables go to stdout; with
--write the generated block between the markers of the doc is replaced. Any failed run stops
the script with a non-zero exit code. Python 3, standard library only.
"""

import argparse
import array
import ast
import json
import os
import subprocess
import sys
import tempfile

from doc_block import replace_block

BEGIN = "<!-- studies.py: begin generated tables -->"
END = "<!-- studies.py: end generated tables -->"

BATCHES = {"resnet50": [1, 4, 16, 64], "bert-encoder": [1, 4, 16, 64, 256]}
DTYPE_PRESETS = ["tpu-v1", "tpu-v4-like-core"]
ACCURACY_BATCH = 8
PRESETS = ["tpu-v1", "tpu-v1-hbm", "edge", "tpu-v4-like-core", "ascend-like"]


class Runner:
    def __init__(self, npusim, tmp):
        self.npusim = npusim
        self.tmp = tmp
        self.count = 0

    def run(self, hw, workload, batch=None, dtype=None, values="off", save_outputs=False):
        """Runs npusim once; returns (stats dict, outputs dir or None)."""
        self.count += 1
        out = os.path.join(self.tmp, "run%d" % self.count)
        cmd = ["nice", "-n", "10", self.npusim, "run", "--hw", hw, "--workload", workload,
               "--values", values, "--out", out]
        if batch is not None:
            cmd += ["--batch", str(batch)]
        if dtype is not None:
            cmd += ["--dtype", dtype]
        outputs = None
        if save_outputs:
            outputs = out + "_outputs"
            cmd += ["--save-outputs", outputs]
        sys.stderr.write("studies.py: %s\n" % " ".join(cmd[3:]))
        result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr)
            sys.exit("studies.py: run failed (exit %d): %s" % (result.returncode, " ".join(cmd)))
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)
        check = stats["functional_check"]
        if values == "on" and not (check["checked"] and check["within_tolerance"]):
            sys.exit("studies.py: values differ from the reference: %s" % " ".join(cmd))
        return stats, outputs


def read_npy_float32(path):
    """Reads a little-endian float32 .npy file (what --save-outputs writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit("studies.py: %s is not an .npy file" % path)
    major = data[6]
    if major == 1:
        hlen = int.from_bytes(data[8:10], "little")
        start = 10
    else:
        hlen = int.from_bytes(data[8:12], "little")
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        sys.exit("studies.py: %s: expected little-endian float32 in C order" % path)
    values = array.array("f")
    values.frombytes(data[start + hlen:])
    if sys.byteorder != "little":
        values.byteswap()
    return header["shape"], values


def table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def ms(seconds):
    return "%.3f" % (seconds * 1e3)


def mj(joules):
    return "%.2f" % (joules * 1e3)


def watts(w):
    return "%.1f" % w


def batch_study(runner):
    out = []
    for net, batches in BATCHES.items():
        rows = []
        for b in batches:
            s, _ = runner.run("tpu-v1", net, batch=b)
            rows.append([b, s["total_cycles"], ms(s["latency_s"]), "%.1f" % s["inferences_per_s"],
                         mj(s["energy"]["per_inference_j"]), watts(s["power"]["average_w"]),
                         watts(s["power"]["peak_w"]), "%.1f%%" % (100 * s["mxu_utilization"])])
        out.append("**%s on tpu-v1, int8, `--values off`**\n" % net)
        out.append(table(["batch", "cycles", "latency (ms)", "inferences/s",
                          "energy/inference (mJ)", "avg power (W)", "peak power (W)",
                          "MXU utilization"], rows))
        out.append("")
    return "\n".join(out)


def compare_outputs(dir_a, dir_b):
    """Max abs error, max relative error (to the largest |b|) and top-1 agreement, a vs b."""
    names = sorted(n for n in os.listdir(dir_b) if n.endswith(".npy"))
    if not names or sorted(os.listdir(dir_a)) != sorted(os.listdir(dir_b)):
        sys.exit("studies.py: output sets differ: %s vs %s" % (dir_a, dir_b))
    max_abs, max_ref, agree, samples = 0.0, 0.0, 0, 0
    for name in names:
        shape_a, a = read_npy_float32(os.path.join(dir_a, name))
        shape_b, b = read_npy_float32(os.path.join(dir_b, name))
        if shape_a != shape_b:
            sys.exit("studies.py: %s: shapes differ %s vs %s" % (name, shape_a, shape_b))
        max_abs = max(max_abs, max(abs(x - y) for x, y in zip(a, b)))
        max_ref = max(max_ref, max(abs(y) for y in b))
        rows = shape_a[0]
        width = len(a) // rows
        for r in range(rows):
            ra, rb = a[r * width:(r + 1) * width], b[r * width:(r + 1) * width]
            agree += ra.index(max(ra)) == rb.index(max(rb))
            samples += 1
    return max_abs, (max_abs / max_ref if max_ref else 0.0), agree, samples


def dtype_study(runner):
    rows = []
    for hw in DTYPE_PRESETS:
        runs = {}
        for dtype in ["bf16", "int8"]:
            runs[dtype] = runner.run(hw, "resnet50", batch=ACCURACY_BATCH, dtype=dtype, values="on",
                                     save_outputs=True)
        max_abs, max_rel, agree, samples = compare_outputs(runs["int8"][1], runs["bf16"][1])
        for dtype in ["int8", "bf16"]:
            s = runs[dtype][0]
            check = s["functional_check"]
            if dtype == "int8":
                accuracy = "max abs %.2g, rel %.2g, top-1 %d/%d" % (max_abs, max_rel, agree,
                                                                    samples)
            else:
                accuracy = "(the stand-in for float)"
            rows.append([hw, dtype, s["total_cycles"], ms(s["latency_s"]),
                         mj(s["energy"]["per_inference_j"]), watts(s["power"]["average_w"]),
                         "%.2f" % s["efficiency"]["tops_per_w"],
                         "%d / %d" % (check["compared_values"] - check["mismatches"],
                                      check["compared_values"]), accuracy])
    head = ("**resnet50, batch %d, `--values on` (every value computed and checked against the "
            "reference of its type)**\n" % ACCURACY_BATCH)
    return head + "\n" + table(
        ["preset", "dtype", "cycles", "latency (ms)", "energy/inference (mJ)", "avg power (W)",
         "TOPS/W", "values equal to its own reference", "int8 output vs bf16 output"], rows) + "\n"


def zoo_names(npusim):
    result = subprocess.run([npusim, "zoo"], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit("studies.py: npusim zoo failed")
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def preset_study(runner):
    out = []
    for net in zoo_names(runner.npusim):
        rows = []
        for hw in PRESETS:
            s, _ = runner.run(hw, net, batch=1, dtype="int8")
            rows.append([hw, s["total_cycles"], ms(s["latency_s"]), "%.1f" % s["inferences_per_s"],
                         mj(s["energy"]["per_inference_j"]), watts(s["power"]["average_w"]),
                         "%.3f" % s["efficiency"]["tops_per_w"], "%.0f" % s["area"]["total_mm2"],
                         "%.1f%%" % (100 * s["mxu_utilization"])])
        out.append("**%s, int8, batch 1, `--values off`**\n" % net)
        out.append(table(["preset", "cycles", "latency (ms)", "inferences/s",
                          "energy/inference (mJ)", "avg power (W)", "TOPS/W", "area (mm2)",
                          "MXU utilization"], rows))
        out.append("")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npusim", default="build/sim/npusim", help="the npusim binary")
    parser.add_argument("--write", metavar="DOC",
                        help="replace the generated block of DOC (docs/studies.md) in place")
    args = parser.parse_args()
    if not os.access(args.npusim, os.X_OK):
        sys.exit("studies.py: %s is not an executable (build first: scripts/build.sh)" %
                 args.npusim)
    with tempfile.TemporaryDirectory(prefix="npusim-studies-") as tmp:
        runner = Runner(args.npusim, tmp)
        text = "\n".join([
            "### 1. Batch size: latency, throughput, energy\n", batch_study(runner),
            "### 2. int8 vs bf16 on resnet50\n", dtype_study(runner),
            "### 3. The five presets on the zoo\n", preset_study(runner)])
    if not args.write:
        print(text)
        return
    replace_block(args.write, BEGIN, END, text, "studies.py")


if __name__ == "__main__":
    main()
