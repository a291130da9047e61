#!/usr/bin/python3
"""Per-row activation scales (compiler/passes/row_scales.hpp, docs/quantization.md "Per-row
scales") through `npusim run --dtype int8`, against numpy.

  row_scales_check.py --npusim BIN --work DIR

The graph is ViT's encoder input in small: a constant row (the class token, zeros) concatenated
before 8 run-time rows, plus a position table (an elementwise affine), read by a layer norm and
by a residual add (after a matrix product). Row 0 of the sum is the position row alone, far
below the others. numpy computes, independently of npusim:
- which rows the rule gives their own scale (calibrated row maximum below 1/16 of the tensor's)
  and the step of each row: its maximum / 127 if so, else the tensor maximum / 127; npusim's saved
  int8 tensor (--save-intermediates) must lie on those steps (within 2 %: npusim calibrates on
  the quantized input) and within 1.5 steps of the real values;
- the float layer norm and residual sum, which npusim's int8 outputs must match at cosine >= 0.99
  (row 0 of the layer norm included, the row a per-tensor scale ruins);
and npusim's own check must be bit-exact against its reference. A second graph whose row 0 is
1/8 of the largest (above the criterion) must keep one scale for the whole tensor.
Exit 1 when a check fails.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T, C = 8, 32
rng = np.random.default_rng(2111)


def build(row0_scale):
    """The ONNX model, its input and the float values numpy computes for it."""
    x = rng.standard_normal((1, T, C)).astype(np.float32)
    cls = np.zeros((1, 1, C), np.float32)
    pos = (0.02 * rng.standard_normal((1, T + 1, C))).astype(np.float32)
    pos[0, 0] = (row0_scale * rng.standard_normal(C)).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(C)).astype(np.float32)
    w = (rng.standard_normal((C, C)) / np.sqrt(C)).astype(np.float32)
    nodes = [helper.make_node("Concat", ["cls", "x"], ["t"], axis=1),
             helper.make_node("Add", ["t", "pos"], ["a"]),
             helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["ln"], axis=-1,
                              epsilon=1e-6),
             helper.make_node("MatMul", ["ln", "w"], ["m"]),
             helper.make_node("Add", ["m", "a"], ["z"])]
    graph = helper.make_graph(
        nodes, "row_scales", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, C])],
        [helper.make_tensor_value_info("ln", TensorProto.FLOAT, [1, T + 1, C]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, T + 1, C])],
        [numpy_helper.from_array(v, k) for k, v in
         [("cls", cls), ("pos", pos), ("gamma", gamma), ("beta", beta), ("w", w)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    a = np.concatenate([cls, x], axis=1) + pos
    mean = a.mean(axis=-1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=-1, keepdims=True)
    ln = (a - mean) / np.sqrt(var + 1e-6) * gamma + beta
    return model, x, {"a": a[0], "ln": ln[0], "z": (ln @ w + a)[0]}


def cosine(p, q):
    p, q = p.ravel().astype(np.float64), q.ravel().astype(np.float64)
    return float(p @ q / (np.linalg.norm(p) * np.linalg.norm(q) + 1e-30))


def check(npusim, work, name, row0_scale, expect_own_scale):
    model, x, want = build(row0_scale)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out")
    r = subprocess.run([npusim, "run", "--hw", "tpu-v1", "--workload",
                        os.path.join(d, "model.onnx"), "--input", os.path.join(d, "x.npy"),
                        "--dtype", "int8", "--save-outputs", out, "--save-intermediates", "--out",
                        out], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip().splitlines()[:2]}"]
    problems = []
    stats = json.load(open(os.path.join(out, "stats.json")))
    if not stats["functional_check"]["bit_exact"]:
        problems.append("not bit-exact against npusim's reference")
    # The rule, computed here: the rows whose maximum is below 1/16 of the tensor's.
    a = want["a"]
    row_max = np.abs(a).max(axis=-1)
    small = row_max * 16 < row_max.max()
    if list(np.nonzero(small)[0]) != ([0] if expect_own_scale else []):
        problems.append(f"numpy's rule picks rows {list(np.nonzero(small)[0])}: a bad test input")
    step = np.where(small, row_max / 127, row_max.max() / 127)[:, None]
    got = np.load(os.path.join(out, "a.npy")).reshape(a.shape)
    # npusim's steps: the tensor's largest magnitude is code 127, and so is a small row's.
    got_step = np.where(small, np.abs(got).max(axis=-1) / 127, np.abs(got).max() / 127)[:, None]
    codes = got / got_step
    off_step = sorted(set(np.nonzero(np.abs(codes - np.round(codes)) > 1e-3)[0]))
    if off_step:
        problems.append(f"the encoder input's rows {off_step} are not on the steps the rule gives")
    if (np.abs(got_step / step - 1) > 0.02).any():
        problems.append(f"steps {got_step.ravel()}, numpy's rule gives {step.ravel()}")
    if (np.abs(got - a) > 1.5 * step).any():
        problems.append(f"the encoder input is {np.abs(got - a).max(axis=-1)} from numpy's")
    for t in ("ln", "z"):
        g = np.load(os.path.join(out, t + ".npy")).reshape(want[t].shape)
        for label, p, q in ((t, g, want[t]), (t + " row 0", g[0], want[t][0])):
            c = cosine(p, q)
            if c < 0.99:
                problems.append(f"{label}: cosine {c:.5f} against numpy, below 0.99")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npusim", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    bad = 0
    # Row 0 at about 1/50 of the largest (ViT's zero class token); then at about 1/8.
    for name, row0_scale, own in (("tiny_row", 0.02, True), ("row_above_criterion", 0.4, False)):
        problems = check(args.npusim, args.work, name, row0_scale, own)
        print(f"{name}: {'; '.join(problems) or 'pass'}", flush=True)
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
