#!/usr/bin/python3
"""Per-row activation scales (compiler/passes/row_scales.hpp, docs/quantization.md "Per-row
scales") through `npusim run --dtype int8`, against numpy.

  row_scales_check.py --npusim BIN --work DIR

The graph is ViT's encoder input in small: a constant row (the class token, zeros) concatenated
before 8 run-time rows, plus a position table (an elementwise affine), then two pre-norm blocks
(layer norm, matrix product, residual add). Row 0 of the encoder input is the position row alone,
far below the others, and with a small first product row 0 of the first residual sum is too. numpy computes, independently of npusim:
- which rows the rule gives their own scale (calibrated row maximum below 1/8 of the tensor's)
  and the step of each row: its maximum / 127 if so, else the tensor maximum / 127; npusim's saved
  int8 tensor (--save-intermediates) must lie on those steps (within 2 %: npusim calibrates on
  the quantized input) and within 2 steps of the real values; for the position add's output and
  for the first residual sum (an add that also takes per-row scales);
- the float layer norms and the last residual sum, which npusim's int8 outputs must match at
  cosine >= 0.99, row 0 included (the row a per-tensor scale ruins);
and npusim's own check must be bit-exact against its reference. Row 0 at 1/50 and at 1/10 of the
largest gets its own scale; at 1/6 (above the criterion) it keeps the tensor's.
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
SMALL_ROW_RATIO = 8  # docs/quantization.md: a row below 1/8 of the tensor's magnitude is small
rng = np.random.default_rng(2111)


def build(row0_fraction):
    """The ONNX model, its input and the float values numpy computes for it; row 0 of the sum
    reaches `row0_fraction` of the other rows' largest magnitude."""
    x = rng.standard_normal((1, T, C)).astype(np.float32)
    cls = np.zeros((1, 1, C), np.float32)
    pos = (0.02 * rng.standard_normal((1, T + 1, C))).astype(np.float32)
    row0 = rng.standard_normal(C)
    others = np.abs(x + pos[:, 1:]).max()
    pos[0, 0] = (row0 / np.abs(row0).max() * others * row0_fraction).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(C)).astype(np.float32)
    # A small first product (ViT's attention output), so row 0 of the residual sum z is small too.
    w = (0.1 * rng.standard_normal((C, C)) / np.sqrt(C)).astype(np.float32)
    w2 = (rng.standard_normal((C, C)) / np.sqrt(C)).astype(np.float32)
    ln_attrs = dict(axis=-1, epsilon=1e-6)
    nodes = [helper.make_node("Concat", ["cls", "x"], ["t"], axis=1),
             helper.make_node("Add", ["t", "pos"], ["a"]),
             helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["ln"], **ln_attrs),
             helper.make_node("MatMul", ["ln", "w"], ["m"]),
             helper.make_node("Add", ["m", "a"], ["z"]),
             helper.make_node("LayerNormalization", ["z", "gamma", "beta"], ["ln2"], **ln_attrs),
             helper.make_node("MatMul", ["ln2", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "z"], ["y"])]
    graph = helper.make_graph(
        nodes, "row_scales", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, C])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, T + 1, C])
         for n in ("ln", "ln2", "y")],
        [numpy_helper.from_array(v, k) for k, v in
         [("cls", cls), ("pos", pos), ("gamma", gamma), ("beta", beta), ("w", w), ("w2", w2)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    def layer_norm(v):
        mean = v.mean(axis=-1, keepdims=True)
        var = ((v - mean) ** 2).mean(axis=-1, keepdims=True)
        return (v - mean) / np.sqrt(var + 1e-6) * gamma + beta

    a = np.concatenate([cls, x], axis=1) + pos
    ln = layer_norm(a)
    z = ln @ w + a
    ln2 = layer_norm(z)
    return model, x, {"a": a[0], "ln": ln[0], "z": z[0], "ln2": ln2[0], "y": (ln2 @ w2 + z)[0]}


def cosine(p, q):
    p, q = p.ravel().astype(np.float64), q.ravel().astype(np.float64)
    return float(p @ q / (np.linalg.norm(p) * np.linalg.norm(q) + 1e-30))


def rule_problems(name, want, got, expect_small):
    """npusim's int8 tensor `got` (dequantized) against the rule applied to its float values."""
    problems = []
    row_max = np.abs(want).max(axis=-1)
    small = row_max * SMALL_ROW_RATIO < row_max.max()
    if list(np.nonzero(small)[0]) != expect_small:
        problems.append(f"{name}: numpy's rule picks rows {list(np.nonzero(small)[0])}, the test "
                        f"means {expect_small}: a bad test input")
    step = np.where(small, row_max / 127, row_max.max() / 127)[:, None]
    got = got.reshape(want.shape)
    # npusim's steps: the tensor's largest magnitude is code 127, and so is a small row's.
    got_step = np.where(small, np.abs(got).max(axis=-1) / 127, np.abs(got).max() / 127)[:, None]
    codes = got / got_step
    off_step = sorted(set(np.nonzero(np.abs(codes - np.round(codes)) > 1e-3)[0]))
    if off_step:
        problems.append(f"{name}: rows {off_step} are not on the steps the rule gives")
    if (np.abs(got_step / step - 1) > 0.02).any():
        problems.append(f"{name}: steps {got_step.ravel()}, numpy's rule gives {step.ravel()}")
    if (np.abs(got - want) > 2 * step).any():
        problems.append(f"{name}: {np.abs(got - want).max(axis=-1)} from numpy's")
    return problems


def check(npusim, work, name, row0_fraction, own_scale):
    model, x, want = build(row0_fraction)
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
    # The rule, computed here: the rows whose maximum is below 1/8 of the tensor's, for the
    # affine's output a and the residual sum z.
    for t, own in zip(("a", "z"), own_scale):
        problems += rule_problems(t, want[t], np.load(os.path.join(out, t + ".npy")),
                                  [0] if own else [])
    for t in ("ln", "ln2", "y"):
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
    # Row 0 of a at 1/50 of the largest (ViT's zero class token; then row 0 of z is small too, as
    # ViT's first residual sum is), at 1/10, then at 1/6, above the criterion. Whether a's and z's
    # row 0 get their own scale:
    for name, fraction, own in (("tiny_row", 1 / 50, (True, True)),
                                ("small_row", 1 / 10, (True, False)),
                                ("row_above_criterion", 1 / 6, (False, False))):
        problems = check(args.npusim, args.work, name, fraction, own)
        print(f"{name}: {'; '.join(problems) or 'pass'}", flush=True)
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
