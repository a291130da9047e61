#!/usr/bin/env python3
"""Builds the ONNX test models of ConvTranspose (issue 21 item 3): 1-D, 2-D and 3-D, with strides,
pads, output_padding, dilations, groups and bias, and a small U-Net (a strided conv down, a
ConvTranspose up, the skip connection concatenated). Expected outputs from the numpy code below,
written from the ONNX operator specification as a scatter (each input element times the kernel
added into the output), not the zero-insertion and flipped convolution npusim lowers it to. Same
layout and conventions as make_models.py.

Usage: make_deconv_models.py OUT_DIR
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import Builder, conv, per_sample, save  # noqa: E402


def conv_transpose(x, w, b, strides, pads, dilations, output_padding, group):
    """One sample x [C, *S], w [C, O/group, *K] (ONNX ConvTranspose); pads = begins + ends."""
    nsp = x.ndim - 1
    cin, og = w.shape[0], w.shape[1]
    cg = cin // group
    k = w.shape[2:]
    full = [strides[i] * (x.shape[1 + i] - 1) + (k[i] - 1) * dilations[i] + 1 + output_padding[i]
            for i in range(nsp)]
    y = np.zeros([og * group] + full, dtype=np.float64)
    for pos in np.ndindex(*x.shape[1:]):
        for tap in np.ndindex(*k):
            at = tuple(pos[i] * strides[i] + tap[i] * dilations[i] for i in range(nsp))
            for g in range(group):
                xs = x[(slice(g * cg, (g + 1) * cg),) + pos]           # [cg]
                ws = w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap]  # [cg, og]
                y[(slice(g * og, (g + 1) * og),) + at] += xs @ ws
    crop = tuple(slice(pads[i], full[i] - pads[nsp + i]) for i in range(nsp))
    y = y[(slice(None),) + crop]
    if b is not None:
        y += b.reshape([-1] + [1] * nsp)
    return y


def deconv_case(out_dir, name, seed, in_shape, w_shape, bias, **attrs):
    """One ConvTranspose node on input [N] + in_shape."""
    b = Builder(name, seed)
    b.weight("W", w_shape)
    inputs = ["x", "W"]
    if bias:
        b.weight("B", [w_shape[1] * attrs.get("group", 1)], 0.1)
        inputs.append("B")
    b.node("ConvTranspose", inputs, ["y"], **attrs)
    model = b.model("x", in_shape, ["y"])
    x = b.rng.uniform(-1, 1, [2] + list(in_shape)).astype(np.float32)
    nsp = len(in_shape) - 1
    i = b.inits
    pads = attrs.get("pads", [0] * 2 * nsp)
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET").startswith("SAME"):
        # The specification's pads for an output_shape (SAME_*: input * stride).
        st = attrs.get("strides", [1] * nsp)
        shape = attrs.get("output_shape", [in_shape[1 + a] * st[a] for a in range(nsp)])
        op = attrs.get("output_padding", [0] * nsp)
        dl = attrs.get("dilations", [1] * nsp)
        total = [st[a] * (in_shape[1 + a] - 1) + op[a] + (w_shape[2 + a] - 1) * dl[a] + 1 - shape[a]
                 for a in range(nsp)]
        lower = attrs.get("auto_pad") == "SAME_LOWER"
        begin = [t - t // 2 if lower else t // 2 for t in total]
        pads = begin + [t - p for t, p in zip(total, begin)]
    save(out_dir, b, model, x, {"y": per_sample(lambda s: conv_transpose(
        s, i["W"], i.get("B"), attrs.get("strides", [1] * nsp), pads,
        attrs.get("dilations", [1] * nsp), attrs.get("output_padding", [0] * nsp),
        attrs.get("group", 1)), x)})


def unet_small(out_dir):
    """A small U-Net: conv 3x3 + Relu, a strided conv down + Relu, ConvTranspose 2x2 stride 2 up
    + Relu, the skip concatenated on channels, a 1x1 conv to 2 classes."""
    b = Builder("unet_small", 73)
    b.weight("enc_W", [8, 3, 3, 3])
    b.weight("enc_B", [8], 0.1)
    b.weight("down_W", [16, 8, 3, 3])
    b.weight("down_B", [16], 0.1)
    b.weight("up_W", [16, 8, 2, 2])
    b.weight("up_B", [8], 0.1)
    b.weight("head_W", [2, 16, 1, 1])
    b.weight("head_B", [2], 0.1)
    b.node("Conv", ["x", "enc_W", "enc_B"], ["enc"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("Relu", ["enc"], ["enc_relu"])
    b.node("Conv", ["enc_relu", "down_W", "down_B"], ["down"], kernel_shape=[3, 3],
           strides=[2, 2], pads=[1, 1, 1, 1])
    b.node("Relu", ["down"], ["down_relu"])
    b.node("ConvTranspose", ["down_relu", "up_W", "up_B"], ["up"], kernel_shape=[2, 2],
           strides=[2, 2])
    b.node("Relu", ["up"], ["up_relu"])
    b.node("Concat", ["enc_relu", "up_relu"], ["cat"], axis=1)
    b.node("Conv", ["cat", "head_W", "head_B"], ["logits"], kernel_shape=[1, 1])
    model = b.model("x", [3, 16, 16], ["logits"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 16, 16]).astype(np.float32)

    def run(s):
        enc = np.maximum(conv(s, i["enc_W"], i["enc_B"], [1, 1], [1, 1, 1, 1], [1, 1], 1), 0)
        down = np.maximum(conv(enc, i["down_W"], i["down_B"], [2, 2], [1, 1, 1, 1], [1, 1], 1), 0)
        up = np.maximum(conv_transpose(down, i["up_W"], i["up_B"], [2, 2], [0, 0, 0, 0], [1, 1],
                                       [0, 0], 1), 0)
        cat = np.concatenate([enc, up], axis=0)
        return conv(cat, i["head_W"], i["head_B"], [1, 1], [0, 0, 0, 0], [1, 1], 1)

    save(out_dir, b, model, x, {"logits": per_sample(run, x)})


def bad_deconv(out_dir):
    """An auto_pad ONNX does not define and an output_padding as large as the stride (refused by
    the operator's definition)."""
    for name, attrs in (("bad_deconv_auto_pad", {"auto_pad": "SAME_MIDDLE", "strides": [2, 2]}),
                        ("bad_deconv_output_padding", {"strides": [2, 2],
                                                       "output_padding": [2, 0]})):
        b = Builder(name, 66)
        b.weight("W", [2, 2, 3, 3])
        b.node("ConvTranspose", ["x", "W"], ["y"], **attrs)
        save(out_dir, b, b.model("x", [2, 4, 4], ["y"]), None, {}, check=False)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    # 2-D: stride 2 with pads and output_padding (torch's ConvTranspose2d(4, 3, 3, stride=2,
    # padding=1, output_padding=1) doubles 5x5 to 10x10), with bias.
    deconv_case(out_dir, "deconv2d", 61, [4, 5, 5], [4, 3, 3, 3], True, kernel_shape=[3, 3],
                strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
    # 2-D: two groups, dilation 2 on one axis, different strides and uneven pads, no bias.
    deconv_case(out_dir, "deconv2d_grouped", 62, [4, 4, 6], [4, 3, 3, 2], False, group=2,
                strides=[1, 3], dilations=[2, 1], pads=[1, 0, 2, 1], output_padding=[1, 2])
    # 1-D over [N, C, L]: stride 3, a kernel of 4, uneven pads.
    deconv_case(out_dir, "deconv1d", 63, [3, 7], [3, 2, 4], True, strides=[3], pads=[2, 1],
                output_padding=[1])
    # 3-D: strides (1, 2, 2), output_padding on one axis.
    deconv_case(out_dir, "deconv3d", 64, [2, 3, 4, 4], [2, 3, 2, 3, 3], True,
                strides=[1, 2, 2], pads=[0, 1, 1, 0, 0, 1], output_padding=[0, 1, 0])
    # Pads larger than the kernel's reach: the spread input is cropped, not padded.
    deconv_case(out_dir, "deconv2d_crop", 65, [2, 6, 6], [2, 2, 2, 2], False, strides=[2, 2],
                pads=[3, 2, 2, 3])
    # output_shape instead of pads (an odd total padding), and auto_pad SAME_LOWER.
    deconv_case(out_dir, "deconv2d_output_shape", 67, [3, 4, 5], [3, 2, 3, 3], True,
                strides=[2, 2], output_shape=[8, 10])
    deconv_case(out_dir, "deconv2d_same_lower", 68, [3, 4, 5], [3, 2, 4, 3], False,
                strides=[2, 3], auto_pad="SAME_LOWER")
    unet_small(out_dir)
    bad_deconv(out_dir)


if __name__ == "__main__":
    main()
