#!/usr/bin/python3
"""Run-time operators of issue 21 through `npusim run`, against numpy: ReduceSum / ReduceMax over
any axes, Einsum's matrix-product forms, Tile, GatherElements / GatherND with constant indices,
and the whole-tensor mode with a symbolic batch (docs/onnx.md "Rank mapping"): the batch taken
from the --input file or --batch, and --parallel data refused on several cores (exit 2).

  runtime_ops_check.py --npusim BIN --work DIR

Each case runs in bf16 and int8 on tpu-v1 and must match numpy's float result within 2 % (bf16)
or 8 % (int8) of the largest expected magnitude, the tolerances of the ONNX conformance test.
Exit 1 when a case fails.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOLERANCE = {"bf16": 0.02, "int8": 0.08}
rng = np.random.default_rng(21)


def model(nodes, x_shape, y_shape, inits=(), opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(v, k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ints(name, v):
    return name, np.array(v, dtype=np.int64)


def cases():
    """(name, model, input, expected, extra npusim arguments)."""
    x4 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    yield ("reduce_sum_axes_1_3", model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], x4.shape,
        [2, 1, 4, 1], [ints("axes", [1, 3])]), x4, x4.sum(axis=(1, 3), keepdims=True), [])
    yield ("reduce_max_axis_2", model(
        [helper.make_node("ReduceMax", ["x"], ["y"], axes=[2], keepdims=0)], x4.shape,
        [2, 3, 5]), x4, x4.max(axis=2), [])
    yield ("reduce_max_spatial", model(
        [helper.make_node("ReduceMax", ["x"], ["y"], axes=[2, 3], keepdims=1)], x4.shape,
        [2, 3, 1, 1]), x4, x4.max(axis=(2, 3), keepdims=True), [])
    yield ("reduce_sum_channels", model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], x4.shape, [2, 4, 5],
        [ints("axes", [1])]), x4, x4.sum(axis=1), [])
    x = rng.standard_normal((2, 4, 6, 8)).astype(np.float32)
    yield ("einsum_attention_scores", model(
        [helper.make_node("Einsum", ["x", "x"], ["y"], equation="bhid,bhjd->bhij")], x.shape,
        [2, 4, 6, 6]), x, np.einsum("bhid,bhjd->bhij", x, x), [])
    w = rng.standard_normal((8, 5)).astype(np.float32)
    yield ("einsum_dense", model(
        [helper.make_node("Einsum", ["x", "w"], ["y"], equation="bhid,dk->bhik")], x.shape,
        [2, 4, 6, 5], [("w", w)]), x, np.einsum("bhid,dk->bhik", x, w), [])
    x3 = rng.standard_normal((2, 6, 8)).astype(np.float32)
    yield ("einsum_transposed_product", model(
        [helper.make_node("Einsum", ["x", "x"], ["y"], equation="bid,bjd->bji")], x3.shape,
        [2, 6, 6]), x3, np.einsum("bid,bjd->bji", x3, x3), [])
    yield ("einsum_sum", model(
        [helper.make_node("Einsum", ["x"], ["y"], equation="bij->bj")], x3.shape, [2, 8]), x3,
        x3.sum(axis=1), [])
    yield ("tile", model(
        [helper.make_node("Tile", ["x", "r"], ["y"])], x3.shape, [2, 12, 24],
        [ints("r", [1, 2, 3])]), x3, np.tile(x3, (1, 2, 3)), [])
    idx = rng.integers(-6, 6, size=(2, 4, 8))
    yield ("gather_elements", model(
        [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], x3.shape, [2, 4, 8],
        [ints("i", idx)]), x3, np.take_along_axis(x3, np.where(idx < 0, idx + 6, idx), axis=1), [])
    nd = rng.integers(0, 6, size=(2, 3, 1))
    want = np.stack([x3[b][nd[b, :, 0]] for b in range(2)])
    yield ("gather_nd_batch_dims_1", model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)], x3.shape, [2, 3, 8],
        [ints("i", nd)]), x3, want, [])
    # Whole-tensor mode, symbolic batch: a Transpose moves axis 0 (as sequence-first layers do).
    m = rng.standard_normal((8, 8)).astype(np.float32)
    seq = model([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                 helper.make_node("MatMul", ["t", "m"], ["p"]),
                 helper.make_node("Softmax", ["p"], ["s"], axis=1),
                 helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0, 2])],
                ["batch", 6, 8], ["batch", 6, 8], [("m", m)])
    xb = rng.standard_normal((3, 6, 8)).astype(np.float32)
    p = np.einsum("bsd,de->bse", xb, m)
    e = np.exp(p - p.max(axis=0, keepdims=True))
    yield ("whole_tensor_batch_from_input", seq, xb, e / e.sum(axis=0, keepdims=True), [])
    yield ("whole_tensor_batch_option", seq, xb, e / e.sum(axis=0, keepdims=True),
           ["--batch", "3"])


def run(npusim, work, name, m, x, want, extra, dtype):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out-" + dtype)
    cmd = [npusim, "run", "--hw", "tpu-v1", "--workload", os.path.join(d, "model.onnx"),
           "--input", os.path.join(d, "x.npy"), "--dtype", dtype, "--save-outputs", out,
           "--out", out] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.strip().splitlines()[:2]}"
    got = np.load(os.path.join(out, "y.npy"))
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) or 1.0))
    if err > TOLERANCE[dtype]:
        return f"max error {100 * err:.2f} % of the largest magnitude"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npusim", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    bad = 0
    seq_model = None
    for name, m, x, want, extra in cases():
        for dtype in ("bf16", "int8"):
            problem = run(args.npusim, args.work, name, m, x, want, extra, dtype)
            print(f"{name} {dtype}: {problem or 'pass'}", flush=True)
            bad += problem is not None
        if name.startswith("whole_tensor"):
            seq_model = os.path.join(args.work, name)
    # A whole-tensor model with a batch above 1: not split over cores.
    cmd = [args.npusim, "run", "--hw", "tpu-v4-like", "--parallel", "data", "--workload",
           os.path.join(seq_model, "model.onnx"), "--input", os.path.join(seq_model, "x.npy")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    ok = r.returncode == 2 and "--parallel data" in r.stderr and "whole tensor" in r.stderr
    print(f"whole_tensor_parallel_data: {'pass' if ok else f'exit {r.returncode}: {r.stderr}'}")
    bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
