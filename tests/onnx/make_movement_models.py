#!/usr/bin/env python3
"""Builds the data-movement ONNX test models (Transpose, Slice, Gather, Pad, Resize, Split, Concat
on any axis, reordering reshapes, shape subgraphs) and exporter-style blocks, with their expected
outputs from independent numpy code. Same layout and conventions as make_models.py.

Usage: make_movement_models.py OUT_DIR
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import (Builder, batchnorm, conv, layernorm, per_sample, pool,  # noqa: E402
                         relu, save, softmax)


def shape_to(b, tensor, tail, name):
    """torch.onnx's way to a Reshape target: Shape -> Gather(0) -> Unsqueeze -> Concat(tail)."""
    b.const(name + "_i0", np.array(0, np.int64))
    b.const(name + "_ax", np.array([0], np.int64))
    b.const(name + "_tail", np.array(tail, np.int64))
    b.node("Shape", [tensor], [name + "_shape"])
    b.node("Gather", [name + "_shape", name + "_i0"], [name + "_n"], axis=0)
    b.node("Unsqueeze", [name + "_n", name + "_ax"], [name + "_n1"])
    b.node("Concat", [name + "_n1", name + "_tail"], [name], axis=0)
    return name


def nearest_index(out, inp, scale, transform, rounding):
    """ONNX Resize nearest: the input index of every output index on one axis."""
    idx = []
    for o in range(out):
        if transform == "half_pixel":
            c = (o + 0.5) / scale - 0.5
        elif transform == "asymmetric":
            c = o / scale
        else:
            raise ValueError(transform)
        if rounding == "floor":
            r = math.floor(c)
        elif c - math.floor(c) == 0.5:
            r = math.floor(c) if rounding == "round_prefer_floor" else math.ceil(c)
        else:
            r = math.floor(c + 0.5)
        idx.append(min(max(r, 0), inp - 1))
    return np.array(idx)


def movement(out_dir):
    """Each data-movement operator on a run-time feature map, one graph output per case."""
    b = Builder("movement", 40)
    b.const("sl_starts", np.array([1, 0], np.int64))
    b.const("sl_ends", np.array([5, 6], np.int64))
    b.const("sl_axes", np.array([2, 3], np.int64))
    b.const("sl_steps", np.array([1, 2], np.int64))
    b.node("Slice", ["x", "sl_starts", "sl_ends", "sl_axes", "sl_steps"], ["sliced"])
    b.const("rev_starts", np.array([-1], np.int64))
    b.const("rev_ends", np.array([-100], np.int64))
    b.const("rev_axes", np.array([1], np.int64))
    b.const("rev_steps", np.array([-2], np.int64))
    b.node("Slice", ["x", "rev_starts", "rev_ends", "rev_axes", "rev_steps"], ["reversed"])
    b.const("split", np.array([1, 3], np.int64))
    b.node("Split", ["x", "split"], ["split_a", "split_b"], axis=1)
    b.const("empty", np.zeros([0], np.float32))
    b.const("scales", np.array([1, 1, 2, 2], np.float32))
    b.node("Resize", ["x", "", "scales"], ["up"], mode="nearest")
    b.const("sizes", np.array([1, 4, 9, 4], np.int64))
    b.node("Resize", ["x", "", "", "sizes"], ["up_sizes"], mode="nearest",
           coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    b.node("Concat", ["x", "split_b", "x"], ["cat_c"], axis=1)
    b.node("Concat", ["x", "x"], ["cat_h"], axis=2)
    b.node("Transpose", ["x"], ["xt"], perm=[0, 1, 3, 2])
    b.node("Transpose", ["x"], ["nhwc"], perm=[0, 2, 3, 1])
    b.const("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))
    b.const("pad_value", np.array(0.5, np.float32))
    b.node("Pad", ["x", "pads", "pad_value"], ["padded"], mode="constant")
    b.node("Pad", ["x", "pads"], ["reflected"], mode="reflect")
    b.node("Pad", ["x", "pads"], ["edged"], mode="edge")
    b.const("gidx", np.array([5, 0, 2], np.int64))
    b.node("Gather", ["x", "gidx"], ["gathered"], axis=3)
    b.const("hw", np.array([0, 4, 36], np.int64))
    b.node("Reshape", ["x", "hw"], ["flat_hw"])
    b.const("us_axes", np.array([2], np.int64))
    b.node("Unsqueeze", ["flat_hw", "us_axes"], ["unsq"])
    b.node("Flatten", ["x"], ["flat"])
    outputs = ["sliced", "reversed", "split_a", "split_b", "up", "up_sizes", "cat_c", "cat_h",
               "xt", "nhwc", "padded", "reflected", "edged", "gathered", "flat_hw", "unsq", "flat"]
    model = b.model("x", [4, 6, 6], outputs)
    x = b.rng.uniform(-1, 1, [2, 4, 6, 6]).astype(np.float32)
    pw = [(0, 0), (1, 2), (2, 1)]
    hi = nearest_index(9, 6, 1.5, "asymmetric", "floor")
    wi = nearest_index(4, 6, 4 / 6, "asymmetric", "floor")
    up_i = nearest_index(12, 6, 2.0, "half_pixel", "round_prefer_floor")
    expected = {
        "sliced": x[:, :, 1:5, 0:6:2],
        "reversed": x[:, ::-2],
        "split_a": x[:, :1],
        "split_b": x[:, 1:],
        "up": x[:, :, up_i][:, :, :, up_i],
        "up_sizes": x[:, :, hi][:, :, :, wi],
        "cat_c": np.concatenate([x, x[:, 1:], x], axis=1),
        "cat_h": np.concatenate([x, x], axis=2),
        "xt": np.transpose(x, (0, 1, 3, 2)),
        "nhwc": np.transpose(x, (0, 2, 3, 1)),
        "padded": per_sample(lambda s: np.pad(s, pw, constant_values=0.5), x),
        "reflected": per_sample(lambda s: np.pad(s, pw, mode="reflect"), x),
        "edged": per_sample(lambda s: np.pad(s, pw, mode="edge"), x),
        "gathered": x[:, :, :, [5, 0, 2]],
        "flat_hw": x.reshape(2, 4, 36),
        "unsq": x.reshape(2, 4, 1, 36),
        "flat": x.reshape(2, -1),
    }
    save(out_dir, b, model, x, expected)


def resnet_block(out_dir):
    """A torchvision-style ResNet: 7x7/2 stem, BatchNormalization, Relu, MaxPool 3x3/2, a basic
    block with a residual Add, GlobalAveragePool, Flatten, Gemm; and the same head reached through
    torch.onnx's Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    b = Builder("resnet_block", 41)
    rng = b.rng
    b.weight("stem_W", [8, 3, 7, 7])
    b.weight("c1_W", [8, 8, 3, 3])
    b.weight("c2_W", [8, 8, 3, 3])
    for bn in ("bn0", "bn1", "bn2"):
        b.const(bn + "_s", rng.uniform(0.5, 1.5, 8).astype(np.float32))
        b.const(bn + "_b", rng.uniform(-0.2, 0.2, 8).astype(np.float32))
        b.const(bn + "_m", rng.uniform(-0.2, 0.2, 8).astype(np.float32))
        b.const(bn + "_v", rng.uniform(0.5, 2.0, 8).astype(np.float32))
    b.weight("fc_W", [10, 8])
    b.weight("fc_B", [10], 0.1)

    def bn(inp, name):
        return b.node("BatchNormalization", [inp] + [name + s for s in ("_s", "_b", "_m", "_v")],
                      [name])

    b.node("Conv", ["x", "stem_W"], ["stem"], kernel_shape=[7, 7], strides=[2, 2],
           pads=[3, 3, 3, 3])
    b.node("Relu", [bn("stem", "bn0")], ["stem_r"])
    b.node("MaxPool", ["stem_r"], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b.node("Conv", ["pool", "c1_W"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("Relu", [bn("c1", "bn1")], ["c1_r"])
    b.node("Conv", ["c1_r", "c2_W"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("Add", [bn("c2", "bn2"), "pool"], ["res"])
    b.node("Relu", ["res"], ["res_r"])
    b.node("GlobalAveragePool", ["res_r"], ["gap"])
    b.node("Flatten", ["gap"], ["flat"], axis=1)
    b.node("Gemm", ["flat", "fc_W", "fc_B"], ["logits"], transB=1)
    b.node("Reshape", ["gap", shape_to(b, "gap", [-1], "gap_shape")], ["flat2"])
    b.node("Gemm", ["flat2", "fc_W", "fc_B"], ["logits2"], transB=1)
    model = b.model("x", [3, 32, 32], ["logits", "logits2"])
    i = b.inits
    x = rng.uniform(-1, 1, [2, 3, 32, 32]).astype(np.float32)

    def bnorm(v, name):
        return batchnorm(v, i[name + "_s"], i[name + "_b"], i[name + "_m"], i[name + "_v"], 1e-5)

    def run(s):
        h = relu(bnorm(conv(s, i["stem_W"], None, [2, 2], [3, 3, 3, 3], [1, 1], 1), "bn0"))
        p = pool(h, [3, 3], [2, 2], [1, 1, 1, 1], "max")
        h = relu(bnorm(conv(p, i["c1_W"], None, [1, 1], [1, 1, 1, 1], [1, 1], 1), "bn1"))
        h = bnorm(conv(h, i["c2_W"], None, [1, 1], [1, 1, 1, 1], [1, 1], 1), "bn2")
        return relu(h + p).mean(axis=(1, 2)) @ i["fc_W"].T + i["fc_B"]

    y = per_sample(run, x)
    save(out_dir, b, model, x, {"logits": y, "logits2": y})


def bert_attention(out_dir):
    """A BERT-style self-attention block as torch.onnx writes it: Q, K, V projections (MatMul +
    Add), Reshape to heads through a Shape subgraph, Transpose (0, 2, 1, 3) and (0, 2, 3, 1),
    Softmax over the last axis, the context transposed back and reshaped, the output projection,
    a residual Add and LayerNormalization; plus the first token through a constant Gather."""
    b = Builder("bert_attention", 42)
    S, E, H = 8, 16, 2
    D = E // H
    for m in ("q", "k", "v", "o"):
        b.weight("W" + m, [E, E])
        b.weight("B" + m, [E], 0.1)
    b.inits["Wq"] = (b.inits["Wq"] / math.sqrt(D)).astype(np.float32)  # the 1/sqrt(d) folded in
    b.inits["Bq"] = (b.inits["Bq"] / math.sqrt(D)).astype(np.float32)
    b.const("ln_s", b.rng.uniform(0.8, 1.2, E).astype(np.float32))
    b.const("ln_b", b.rng.uniform(-0.1, 0.1, E).astype(np.float32))
    b.const("heads_shape", np.array([0, 0, H, D], np.int64))
    b.const("merged_shape", np.array([0, 0, E], np.int64))
    b.const("first", np.array(0, np.int64))
    heads = {}
    for m in ("q", "k", "v"):
        b.node("MatMul", ["x", "W" + m], [m + "_mm"])
        b.node("Add", [m + "_mm", "B" + m], [m])
        target = shape_to(b, "x", [S, H, D], m + "_target") if m == "q" else "heads_shape"
        b.node("Reshape", [m, target], [m + "_heads"])
        heads[m] = m + "_heads"
    b.node("Transpose", [heads["q"]], ["qt"], perm=[0, 2, 1, 3])
    b.node("Transpose", [heads["k"]], ["kt"], perm=[0, 2, 3, 1])
    b.node("Transpose", [heads["v"]], ["vt"], perm=[0, 2, 1, 3])
    b.node("MatMul", ["qt", "kt"], ["scores"])
    b.node("Softmax", ["scores"], ["probs"], axis=-1)
    b.node("MatMul", ["probs", "vt"], ["ctx"])
    b.node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3])
    b.node("Reshape", ["ctx_t", "merged_shape"], ["merged"])
    b.node("MatMul", ["merged", "Wo"], ["o_mm"])
    b.node("Add", ["o_mm", "Bo"], ["o"])
    b.node("Add", ["o", "x"], ["res"])
    b.node("LayerNormalization", ["res", "ln_s", "ln_b"], ["y"], axis=-1, epsilon=1e-5)
    b.node("Gather", ["y", "first"], ["cls"], axis=1)
    model = b.model("x", [S, E], ["y", "cls", "probs"], opset=17)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, S, E]).astype(np.float32)

    def run(s):
        q, k, v = (s @ i["W" + m] + i["B" + m] for m in ("q", "k", "v"))
        split = [t.reshape(S, H, D).transpose(1, 0, 2) for t in (q, k, v)]
        p = softmax(split[0] @ split[1].transpose(0, 2, 1))
        ctx = (p @ split[2]).transpose(1, 0, 2).reshape(S, E)
        return layernorm(ctx @ i["Wo"] + i["Bo"] + s, i["ln_s"], i["ln_b"], 1e-5), p

    y = per_sample(lambda s: run(s)[0], x)
    probs = per_sample(lambda s: run(s)[1], x)
    save(out_dir, b, model, x, {"y": y, "cls": y[:, 0], "probs": probs})


def mobilenet_block(out_dir):
    """A MobileNet v2 inverted residual as TensorFlow exporters write it: 1x1 expand with Clip
    [0, 6], an explicit asymmetric Pad before a stride-2 depthwise conv, Clip, 1x1 project; and
    a reflect Pad of the input (a Pad that is not folded into a conv)."""
    b = Builder("mobilenet_block", 43)
    b.weight("exp_W", [12, 4, 1, 1])
    b.weight("exp_B", [12], 0.1)
    b.weight("dw_W", [12, 1, 3, 3])
    b.weight("dw_B", [12], 0.1)
    b.weight("proj_W", [6, 12, 1, 1])
    b.const("zero", np.array(0.0, np.float32))
    b.const("six", np.array(6.0, np.float32))
    b.const("pads", np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64))
    b.const("rpads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    b.node("Conv", ["x", "exp_W", "exp_B"], ["exp"])
    b.node("Clip", ["exp", "zero", "six"], ["exp6"])
    b.node("Pad", ["exp6", "pads"], ["exp_pad"], mode="constant")
    b.node("Conv", ["exp_pad", "dw_W", "dw_B"], ["dw"], group=12, strides=[2, 2])
    b.node("Clip", ["dw", "zero", "six"], ["dw6"])
    b.node("Conv", ["dw6", "proj_W"], ["y"])
    b.node("Pad", ["x", "rpads"], ["x_reflect"], mode="reflect")
    b.node("Relu", ["x_reflect"], ["reflect_relu"])
    model = b.model("x", [4, 8, 8], ["y", "reflect_relu"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 4, 8, 8]).astype(np.float32) * 3

    def run(s):
        e = np.clip(conv(s, i["exp_W"], i["exp_B"], [1, 1], [0, 0, 0, 0], [1, 1], 1), 0, 6)
        d = np.clip(conv(e, i["dw_W"], i["dw_B"], [2, 2], [0, 0, 1, 1], [1, 1], 12), 0, 6)
        return conv(d, i["proj_W"], None, [1, 1], [0, 0, 0, 0], [1, 1], 1)

    reflect = per_sample(lambda s: relu(np.pad(s, [(0, 0), (1, 1), (1, 1)], mode="reflect")), x)
    save(out_dir, b, model, x, {"y": per_sample(run, x), "reflect_relu": reflect})


def interpolation(inp, out, scale, cubic, transform="half_pixel", a=-0.75):
    """ONNX Resize linear / cubic along one axis as an [inp, out] matrix (the specification's
    neighbours, edge clamping; half_pixel or align_corners)."""
    m = np.zeros((inp, out))
    for o in range(out):
        if transform == "align_corners":
            c = 0.0 if scale * inp == 1 else o * (inp - 1) / (scale * inp - 1)
        else:
            c = (o + 0.5) / scale - 0.5
        lo = math.floor(c)
        r = 1.0 if c == lo else c - lo
        lo = lo - 1 if c == lo else lo
        if cubic:
            def k(t):
                t = abs(t)
                if t <= 1:
                    return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
                return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0
            taps = {lo - 1: k(1 + r), lo: k(r), lo + 1: k(1 - r), lo + 2: k(2 - r)}
        else:
            taps = {lo: 1 - r, lo + 1: r}
        for j, w in taps.items():
            m[min(max(j, 0), inp - 1), o] += w
    return m


def composed(out_dir):
    """Operators npusim composes from a move and an IR operator: Resize linear / cubic (a dense
    layer per resized axis) and Softmax over a spatial axis of a feature map."""
    b = Builder("composed", 41)
    b.const("up_scales", np.array([1, 1, 2, 2], np.float32))
    b.node("Resize", ["x", "", "up_scales"], ["up_linear"], mode="linear")
    b.const("half", np.array([1, 1, 0.5, 0.5], np.float32))
    b.node("Resize", ["x", "", "half"], ["down_cubic"], mode="cubic",
           coordinate_transformation_mode="align_corners")
    b.node("Softmax", ["x"], ["sm_h"], axis=2)
    model = b.model("x", [4, 6, 6], ["up_linear", "down_cubic", "sm_h"], batch_dim="N")
    x = b.rng.uniform(-1, 1, [2, 4, 6, 6]).astype(np.float32)
    lin = interpolation(6, 12, 2.0, False)
    cub = interpolation(6, 3, 0.5, True, "align_corners")
    e = np.exp(x - x.max(axis=2, keepdims=True))
    save(out_dir, b, model, x, {
        "up_linear": np.einsum("nchw,hi,wj->ncij", x, lin, lin),
        "down_cubic": np.einsum("nchw,hi,wj->ncij", x, cub, cub),
        "sm_h": e / e.sum(axis=2, keepdims=True)})


def composed_whole(out_dir):
    """The whole-tensor compositions (axis 0 involved): Gemm transA (a transposing move first),
    MatMul by a different constant matrix per leading index, Softmax over axis 0."""
    b = Builder("composed_whole", 42)
    b.weight("mm_B", [2, 4, 5])
    b.node("MatMul", ["x", "mm_B"], ["mm"])
    b.const("flat_shape", np.array([12, 2], np.int64))
    b.node("Reshape", ["x", "flat_shape"], ["flat"])
    b.weight("g_B", [12, 5])
    b.node("Gemm", ["flat", "g_B"], ["g"], transA=1, alpha=0.5)
    b.node("Softmax", ["x"], ["sm0"], axis=0)
    model = b.model("x", [3, 4], ["mm", "g", "sm0"], batch_dim=2)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 4]).astype(np.float32)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    save(out_dir, b, model, x, {"mm": x @ i["mm_B"], "g": 0.5 * x.reshape(12, 2).T @ i["g_B"],
                                "sm0": e / e.sum(axis=0, keepdims=True)})


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for build in (movement, resnet_block, bert_attention, mobilenet_block, composed,
                  composed_whole):
        build(out_dir)


if __name__ == "__main__":
    main()
