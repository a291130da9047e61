#!/usr/bin/env python3
"""Builds the ONNX test models of the conformance gaps (issue 12): LayerNormalization with its
Mean and InvStdDev outputs, 1-D pools over [N, C, L], MaxPool with dilations; expected outputs
from independent numpy code. Same layout and conventions as make_models.py.

Usage: make_gap_models.py OUT_DIR
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import Builder, batchnorm, conv, per_sample, pool, relu, save  # noqa: E402


def statistics(x, axis, eps):
    """ONNX LayerNormalization's Mean and InvStdDev: over the axes from `axis` on, kept as 1."""
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, 1.0 / np.sqrt(var + eps)


def layernorm_stats(out_dir):
    """LayerNormalization (opset 17) with all three outputs used: over the last axis, and over the
    last two axes (the rows view); Mean also feeds a Relu (a consumer besides the graph output)."""
    b = Builder("layernorm_stats", 51)
    b.const("scale", b.rng.uniform(0.5, 1.5, [6]).astype(np.float32))
    b.const("bias", b.rng.uniform(-0.5, 0.5, [6]).astype(np.float32))
    b.const("scale2", b.rng.uniform(0.5, 1.5, [4, 6]).astype(np.float32))
    b.node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv_std"], axis=-1,
           epsilon=1e-3)
    b.node("LayerNormalization", ["x", "scale2"], ["y2", "mean2", "inv_std2"], axis=1)
    b.node("Relu", ["mean"], ["mean_relu"])
    outputs = ["y", "mean", "inv_std", "y2", "mean2", "inv_std2", "mean_relu"]
    model = b.model("x", [4, 6], outputs, opset=17)
    i = b.inits
    # Rows of different spreads, so InvStdDev varies over a range.
    x = (b.rng.uniform(-1, 1, [2, 4, 6]) * b.rng.uniform(0.3, 2.0, [2, 4, 1])).astype(np.float32)
    mean, inv = statistics(x, 2, 1e-3)
    mean2, inv2 = statistics(x, 1, 1e-5)
    save(out_dir, b, model, x, {
        "y": (x - mean) * inv * i["scale"] + i["bias"], "mean": mean, "inv_std": inv,
        "y2": (x - mean2) * inv2 * i["scale2"], "mean2": mean2, "inv_std2": inv2,
        "mean_relu": np.maximum(mean, 0.0)})


def pools_1d(out_dir):
    """MaxPool and AveragePool over [N, C, L]: padded and strided, and the default window."""
    b = Builder("pools_1d", 52)
    b.node("MaxPool", ["x"], ["max"], kernel_shape=[3], strides=[2], pads=[1, 1])
    b.node("AveragePool", ["x"], ["avg"], kernel_shape=[2])
    b.node("AveragePool", ["x"], ["avg_pad"], kernel_shape=[3], strides=[2], pads=[1, 0])
    model = b.model("x", [3, 11], ["max", "avg", "avg_pad"])
    x = b.rng.uniform(-1, 1, [2, 3, 11]).astype(np.float32)
    save(out_dir, b, model, x, {
        "max": per_sample(lambda s: pool(s, [3], [2], [1, 1], "max"), x),
        "avg": per_sample(lambda s: pool(s, [2], [1], [0, 0], "avg"), x),
        "avg_pad": per_sample(lambda s: pool(s, [3], [2], [1, 0], "avg"), x)})


def dilated_max(x, kernel, strides, pads, dilations):
    """Max pool of one sample [C, spatial...] with dilated windows (ONNX MaxPool)."""
    nsp = x.ndim - 1
    xp = np.pad(x, [(0, 0)] + [(pads[i], pads[nsp + i]) for i in range(nsp)],
                constant_values=-np.inf)
    span = [(kernel[i] - 1) * dilations[i] + 1 for i in range(nsp)]
    out = [(xp.shape[1 + i] - span[i]) // strides[i] + 1 for i in range(nsp)]
    y = np.zeros([x.shape[0]] + out)
    for pos in np.ndindex(*out):
        sl = tuple(slice(pos[i] * strides[i], pos[i] * strides[i] + span[i], dilations[i])
                   for i in range(nsp))
        y[(slice(None),) + pos] = xp[(slice(None),) + sl].reshape(x.shape[0], -1).max(axis=1)
    return y


def maxpool_dilated(out_dir):
    """MaxPool with dilations: 2x2 windows dilated by 2; padded, strided and dilated on one axis
    only; 1-D with dilation 3."""
    b = Builder("maxpool_dilated", 53)
    b.node("MaxPool", ["x"], ["d2"], kernel_shape=[2, 2], dilations=[2, 2])
    b.node("MaxPool", ["x"], ["d21"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 2, 1],
           dilations=[2, 1])
    b.const("rows_shape", np.array([0, 2, 49], np.int64))
    b.node("Reshape", ["x", "rows_shape"], ["rows"])
    b.node("MaxPool", ["rows"], ["d3_1d"], kernel_shape=[3], dilations=[3], pads=[2, 0])
    model = b.model("x", [2, 7, 7], ["d2", "d21", "d3_1d"])
    x = b.rng.uniform(-1, 1, [2, 2, 7, 7]).astype(np.float32)
    save(out_dir, b, model, x, {
        "d2": per_sample(lambda s: dilated_max(s, [2, 2], [1, 1], [0, 0, 0, 0], [2, 2]), x),
        "d21": per_sample(lambda s: dilated_max(s, [3, 2], [2, 2], [1, 1, 2, 1], [2, 1]), x),
        "d3_1d": per_sample(lambda s: dilated_max(s.reshape(2, 49), [3], [1], [2, 0], [3]), x)})


def layernorm_map(out_dir):
    """LayerNormalization of a rank-4 input (a feature map for npusim: moved to ONNX order first)
    over its last axis and over the axes from 1 on, with Mean and InvStdDev."""
    b = Builder("layernorm_map", 55)
    b.const("scale", b.rng.uniform(0.5, 1.5, [5]).astype(np.float32))
    b.const("scale_all", b.rng.uniform(0.5, 1.5, [3, 4, 5]).astype(np.float32))
    b.node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv_std"])
    b.node("LayerNormalization", ["x", "scale_all"], ["y1", "mean1", "inv_std1"], axis=1)
    model = b.model("x", [3, 4, 5], ["y", "mean", "inv_std", "y1", "mean1", "inv_std1"],
                    opset=17)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 4, 5]).astype(np.float32)
    mean, inv = statistics(x, 3, 1e-5)
    mean1, inv1 = statistics(x, 1, 1e-5)
    save(out_dir, b, model, x, {
        "y": (x - mean) * inv * i["scale"], "mean": mean, "inv_std": inv,
        "y1": (x - mean1) * inv1 * i["scale_all"], "mean1": mean1, "inv_std1": inv1})


def whole_batch_maps(out_dir):
    """Conv and the pools on a batch of 2 in the whole-tensor form (docs/onnx.md "Rank mapping":
    a Transpose moves the batch axis): a strided, padded Conv, a batch norm, Relu and a scalar Add
    (which keep the batch-in-depth form), MaxPool, AveragePool, GlobalAveragePool and
    GlobalMaxPool as outputs, a per-channel Mul (the whole form), and a 1-D Conv and MaxPool over
    the input viewed as (N, 3, 36)."""
    b = Builder("whole_batch_maps", 56)
    b.weight("W", [4, 3, 3, 3])
    b.const("B", b.rng.uniform(-0.5, 0.5, [4]).astype(np.float32))
    b.const("gamma", b.rng.uniform(0.5, 1.5, [4]).astype(np.float32))
    b.const("beta", b.rng.uniform(-0.5, 0.5, [4]).astype(np.float32))
    b.const("mean", b.rng.uniform(-0.5, 0.5, [4]).astype(np.float32))
    b.const("var", b.rng.uniform(0.5, 1.5, [4]).astype(np.float32))
    b.const("quarter", np.array(0.25, np.float32))
    b.const("per_channel", b.rng.uniform(0.5, 1.5, [1, 4, 1, 1]).astype(np.float32))
    b.weight("W1", [5, 3, 3])
    b.const("rows_shape", np.array([0, 3, 36], np.int64))
    b.node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[2, 1])
    b.node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"])
    b.node("Relu", ["bn"], ["r"])
    b.node("Add", ["r", "quarter"], ["s"])
    b.node("MaxPool", ["s"], ["mp"], kernel_shape=[2, 2], strides=[1, 2], pads=[0, 0, 1, 0])
    b.node("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("GlobalAveragePool", ["ap"], ["gap"])
    b.node("GlobalMaxPool", ["s"], ["gmax"])
    b.node("Mul", ["ap", "per_channel"], ["m"])
    b.node("Transpose", ["m"], ["t"], perm=[1, 0, 2, 3])
    b.node("Transpose", ["t"], ["tt"], perm=[1, 0, 2, 3])
    b.node("Reshape", ["x", "rows_shape"], ["rows"])
    b.node("Conv", ["rows", "W1"], ["c1"], pads=[1, 1], strides=[2])
    b.node("MaxPool", ["c1"], ["conv1d"], kernel_shape=[3], strides=[2])
    model = b.model("x", [3, 6, 6], ["gap", "gmax", "tt", "conv1d"], batch_dim=2)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 6, 6]).astype(np.float32)
    c = per_sample(lambda s: conv(s, i["W"], i["B"], [2, 1], [1, 1, 1, 1], [1, 1], 1), x)
    s = relu(per_sample(lambda v: batchnorm(v, i["gamma"], i["beta"], i["mean"], i["var"],
                                            1e-5), c)) + 0.25
    mp = per_sample(lambda v: pool(v, [2, 2], [1, 2], [0, 0, 1, 0], "max"), s)
    ap = per_sample(lambda v: pool(v, [3, 3], [1, 1], [1, 1, 1, 1], "avg"), mp)
    c1 = per_sample(lambda v: conv(v.reshape(3, 36), i["W1"], None, [2], [1, 1], [1], 1), x)
    save(out_dir, b, model, x, {
        "gap": ap.mean(axis=(2, 3), keepdims=True), "gmax": s.max(axis=(2, 3), keepdims=True),
        "tt": ap * i["per_channel"],
        "conv1d": per_sample(lambda v: pool(v, [3], [2], [0, 0], "max"), c1)})


def bad_gaps(out_dir):
    """What stays refused: LayerNormalization statistics in float16, a dilated AveragePool."""
    b = Builder("bad_gaps", 54)
    b.const("scale", np.ones([4], np.float32))
    b.node("LayerNormalization", ["x", "scale"], ["y", "mean"], name="ln_half", axis=-1,
           stash_type=10)
    b.node("AveragePool", ["x"], ["avg"], name="avg_dilated", kernel_shape=[2], dilations=[2])
    model = b.model("x", [3, 4], ["y", "mean", "avg"], opset=19)
    save(out_dir, b, model, None, {}, check=False)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for build in (layernorm_stats, layernorm_map, pools_1d, maxpool_dilated, whole_batch_maps,
                  bad_gaps):
        build(out_dir)


if __name__ == "__main__":
    main()
