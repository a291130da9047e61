#!/usr/bin/env python3
"""Accuracy of npusim's int8 networks against their float32 graph, on inputs not used for
calibration: the table of docs/quantization.md.

  scripts/quant_accuracy.py [--npusim build/sim/npusim] [--hw tpu-v1] [--calib-samples 16]
      [--eval-samples 32] [--calib-seed 1] [--eval-seed 2] [--percentile 99.99]
      [--networks mnist-cnn lenet5 ...] [--onnx cnn mlp ...] [--work DIR]
      [--weight-dtype int4 [--weight-group 128]]

For each network, two batches of float32 inputs are drawn with numpy: the calibration batch
(--calib-samples from --calib-seed) and the evaluation batch (--eval-samples from --eval-seed).
Zoo networks (pseudo-random weights from npusim's --seed 1; the logits a final softmax reads are
reported as well as the probabilities) get Gaussian inputs with the second
moment their generated weights are scaled for (the workload's input scale times 128 / sqrt(3),
docs/quantization.md); the ONNX test models (their own weights, built by
tests/onnx/make_models.py) get Gaussian inputs with the spread of the input make_models.py wrote.

Each network runs on the evaluation batch four times (`npusim run --input EVAL --save-outputs`):
scales calibrated on the evaluation batch itself (`input`, npusim's default, in-sample) or on the
calibration batch (`file`, `--calibration CALIB`), each with `--calibration-method max` and
`percentile`. Every run is checked bit-exact against npusim's int8 reference as usual (exit 1
otherwise). The float32 graph's outputs come from the same command (`--save-float-outputs`). Per
graph output: top-1 agreement (the argmax over the last axis, per row, equals the float graph's),
relative RMS error ||q - f|| / ||f|| and SQNR 20 log10(||f|| / ||q - f||) in dB.

--weight-dtype int4 (and --weight-group G) quantize the weights of every run so (npusim run's
flags, docs/compression.md): the table then measures weight-only int4, per output channel or in
groups, against the same float32 graph.

Prints a markdown table. Needs python3 with numpy (and python3-onnx for --onnx).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = ["mnist-cnn", "lenet5", "resnet18", "mobilenetv2", "bert-encoder"]
ONNX = ["cnn", "mlp", "attention"]


def zoo_workload(name, work):
    """A zoo network as a JSON graph whose outputs also include the logits a final softmax reads,
    with its sample shape (channels last) and input scale. The network is the same (a softmax is
    not fused into the layer before it); int8 softmax outputs are on the fixed scale 1/127, so
    near-uniform probabilities (below 1/254) are all 0 and only the logits say how close int8 is."""
    with open(os.path.join(ROOT, "workloads", "zoo", name + ".json")) as f:
        graph = json.load(f)
    layers = graph["layers"]
    last = layers[-1]
    if last["op"] == "softmax" and graph.get("outputs", [last["name"]]) == [last["name"]]:
        logits = last["inputs"][0] if "inputs" in last else layers[-2]["name"]
        graph["outputs"] = [logits, last["name"]]
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(graph, f)
    spec = graph["input"]
    return path, list(spec["shape"]), float(spec.get("scale", 1.0 / 64))


def draw(shape, std, samples, seed):
    # A stream of its own: make_models.py draws the ONNX models' weights from default_rng(small
    # integer), and inputs from the same stream would be copies of a weight matrix.
    rng = np.random.default_rng([seed, 0x6E707573])
    return (rng.standard_normal([samples] + list(shape)) * std).astype(np.float32)


def run(npusim, args):
    p = subprocess.run([npusim, "run"] + args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"npusim run {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def metrics(q, f):
    """top-1 agreement, relative RMS error, SQNR (dB) of q against f."""
    err = np.linalg.norm((q - f).ravel())
    norm = np.linalg.norm(f.ravel())
    rel = err / norm if norm > 0 else float("nan")
    sqnr = 20 * math.log10(norm / err) if err > 0 else float("inf")
    rows_q = q.reshape(-1, q.shape[-1])
    rows_f = f.reshape(-1, f.shape[-1])
    top1 = float(np.mean(np.argmax(rows_q, axis=1) == np.argmax(rows_f, axis=1)))
    return top1, rel, sqnr


def evaluate(npusim, hw, workload, calib, evalb, batch, percentile, work, weights=()):
    """Rows (output, calibration, method, top1, rel, sqnr) for one network; `weights`: extra
    npusim run flags for the weights (--weight-dtype, --weight-group)."""
    float_dir = os.path.join(work, "float")
    rows = []
    for source in ("input", "file"):
        for method in ("max", "percentile"):
            out = os.path.join(work, f"{source}-{method}")
            args = ["--hw", hw, "--workload", workload, "--input", evalb, "--batch", str(batch),
                    "--save-outputs", out, "--calibration-method", method]
            args += list(weights)
            if method == "percentile":
                args += ["--calibration-percentile", str(percentile)]
            if source == "file":
                args += ["--calibration", calib]
            if not os.path.isdir(float_dir):
                args += ["--save-float-outputs", float_dir]
            run(npusim, args)
            for name in sorted(os.listdir(float_dir)):
                f = np.load(os.path.join(float_dir, name)).astype(np.float64)
                q = np.load(os.path.join(out, name)).astype(np.float64)
                rows.append((name[:-4], source, method) + metrics(q, f))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    ap.add_argument("--hw", default="tpu-v1")
    ap.add_argument("--calib-samples", type=int, default=16)
    ap.add_argument("--eval-samples", type=int, default=32)
    ap.add_argument("--calib-seed", type=int, default=1)
    ap.add_argument("--eval-seed", type=int, default=2)
    ap.add_argument("--percentile", type=float, default=99.99)
    ap.add_argument("--networks", nargs="*", default=ZOO)
    ap.add_argument("--onnx", nargs="*", default=ONNX)
    ap.add_argument("--work", help="keep the inputs and outputs here (default: a temporary dir)")
    ap.add_argument("--weight-dtype", help="int4: weight-only int4 (npusim run --weight-dtype)")
    ap.add_argument("--weight-group", type=int,
                    help="with --weight-dtype int4: a scale per group of this many weights")
    a = ap.parse_args()
    weights = []
    if a.weight_dtype:
        weights += ["--weight-dtype", a.weight_dtype]
    if a.weight_group:
        weights += ["--weight-group", str(a.weight_group)]
    work = a.work or tempfile.mkdtemp(prefix="npusim-quant-accuracy-")
    cases = []  # (label, workload, sample shape, std)
    os.makedirs(work, exist_ok=True)
    for name in a.networks:
        path, shape, scale = zoo_workload(name, work)
        cases.append((name, path, shape, scale * 128 / math.sqrt(3)))
    if a.onnx:
        models = os.path.join(work, "onnx-models")
        if not os.path.isdir(models):
            subprocess.run([sys.executable, os.path.join(ROOT, "tests", "onnx", "make_models.py"),
                            models], check=True, capture_output=True)
        for name in a.onnx:
            x = np.load(os.path.join(models, name, "input.npy"))
            cases.append((f"{name}.onnx", os.path.join(models, name + ".onnx"), list(x.shape[1:]),
                          float(np.std(x))))
    what = "int8" + (f", {a.weight_dtype} weights" if a.weight_dtype else "") + (
        f" in groups of {a.weight_group}" if a.weight_group else "")
    print(f"{what} vs float32 on {a.hw}: calibration batch {a.calib_samples} samples (seed "
          f"{a.calib_seed}), evaluation batch {a.eval_samples} samples (seed {a.eval_seed}), "
          f"percentile {a.percentile:g}\n")
    print("Each cell: relative RMS error, SQNR, top-1 agreement. In-sample: calibrated on the "
          "evaluation batch itself (npusim's default); held out: `--calibration` on the "
          "calibration batch.\n")
    print("| network | output | in-sample, max | in-sample, percentile | held out, max "
          "| held out, percentile |")
    print("|---|---|---|---|---|---|")
    for label, workload, shape, std in cases:
        d = os.path.join(work, label)
        os.makedirs(d, exist_ok=True)
        calib = os.path.join(d, "calib.npy")
        evalb = os.path.join(d, "eval.npy")
        np.save(calib, draw(shape, std, a.calib_samples, a.calib_seed))
        np.save(evalb, draw(shape, std, a.eval_samples, a.eval_seed))
        cells = {}  # output -> cells in the order of the columns
        for out, _source, _method, top1, rel, sqnr in evaluate(
                a.npusim, a.hw, workload, calib, evalb, a.eval_samples, a.percentile, d,
                weights):
            cells.setdefault(out, []).append(f"{rel:.4f}, {sqnr:.1f} dB, {100 * top1:.0f} %")
        for out, row in cells.items():
            print(f"| {label} | {out} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
