#!/usr/bin/python3
"""An independent float32 implementation, in numpy, of a training step of a residual CNN given as
an npusim JSON graph (workloads/training/residual-cnn.json): convolutions of any stride and
padding, max pooling with overlapping padded windows, residual adds, global average pooling,
flatten, dense, softmax cross-entropy against integer labels (issue 23).

Nothing here comes from npusim: every forward and backward rule is written from its definition
(a convolution's input gradient scatters each output pixel's gradient through the kernel back
onto the input patch it read, col2im; the max pool sends each window's gradient to its first
maximum in row-major order, padded positions being -inf, as torch does), and
tests/training/test_numpy_resnet.py checks it against torch's autograd.

Layouts as numpy_cnn.py: images NHWC, the flatten in (row, column, channel) order, parameters in
PyTorch's layout (convolution [out, in, kh, kw], dense [out, in]) named `<layer>.weight` /
`<layer>.bias`, the form `npusim train --save-weights` writes.
"""

import json
import os

import numpy as np


def load_graph(path):
    with open(path) as f:
        g = json.load(f)
    layers, prev = [], g["input"]["name"]
    for spec in g["layers"]:
        spec = dict(spec)
        spec.setdefault("inputs", [prev])
        layers.append(spec)
        prev = spec["name"]
    return layers


def load_parameters(directory, layers):
    p = {}
    for spec in layers:
        if spec["op"] in ("conv2d", "dense"):
            for kind in ("weight", "bias"):
                p[f"{spec['name']}.{kind}"] = np.load(
                    os.path.join(directory, f"{spec['name']}.{kind}.npy")).astype(np.float32)
    return p


def _pads(spec):
    if spec.get("padding", "valid") == "valid":
        return 0, 0, 0, 0
    top, left, bottom, right = spec["pads"]
    return top, left, bottom, right


def _patches(xp, kh, kw, sh, sw, oh, ow):
    """[N, Hp, Wp, C] padded -> [N, OH, OW, kh, kw, C]."""
    n, _, _, c = xp.shape
    out = np.empty((n, oh, ow, kh, kw, c), xp.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, :, i, j, :] = xp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :]
    return out


def _window_geometry(spec, x, kernel_key):
    kh, kw = spec[kernel_key]
    sh, sw = spec.get("strides", [1, 1])
    top, left, bottom, right = _pads(spec)
    _, h, w, _ = x.shape
    oh = (h + top + bottom - kh) // sh + 1
    ow = (w + left + right - kw) // sw + 1
    return kh, kw, sh, sw, top, left, bottom, right, oh, ow


def _same(a):
    return a


def bf16(a):
    """Rounds float32 values to the nearest bfloat16, ties to even, kept as float32."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).reshape(np.shape(a))


def forward(layers, params, x, stored=_same):
    """The logits and every tensor the backward pass reads. `stored` rounds what a chip stores
    (bf16: every tensor and the weights; the identity by default)."""
    if stored is not _same:
        x = stored(x)
        params = {k: stored(v) if k.endswith(".weight") else v for k, v in params.items()}
    t = {"__input__": x}
    first = layers[0]["inputs"][0]
    t[first] = x
    for spec in layers:
        name, op = spec["name"], spec["op"]
        a = t[spec["inputs"][0]]
        if op == "conv2d":
            kh, kw, sh, sw, top, left, bottom, right, oh, ow = _window_geometry(spec, a, "kernel")
            xp = np.pad(a, ((0, 0), (top, bottom), (left, right), (0, 0)))
            cols = _patches(xp, kh, kw, sh, sw, oh, ow)
            wk = params[name + ".weight"].transpose(2, 3, 1, 0)  # [kh, kw, in, out]
            z = np.tensordot(cols, wk, axes=([3, 4, 5], [0, 1, 2])) + params[name + ".bias"]
            t[name + ".pre"] = z.astype(np.float32)
            y = np.maximum(z, 0) if spec.get("activation", "none") == "relu" else z
        elif op == "maxpool":
            kh, kw, sh, sw, top, left, bottom, right, oh, ow = _window_geometry(spec, a, "pool")
            xp = np.pad(a, ((0, 0), (top, bottom), (left, right), (0, 0)),
                        constant_values=-np.inf)
            y = _patches(xp, kh, kw, sh, sw, oh, ow).max(axis=(3, 4))
        elif op == "add":
            z = a + t[spec["inputs"][1]]
            t[name + ".pre"] = z
            y = np.maximum(z, 0) if spec.get("activation", "none") == "relu" else z
        elif op == "global_avgpool":
            y = a.mean(axis=(1, 2), keepdims=True, dtype=np.float32)
        elif op == "flatten":
            y = a.reshape(a.shape[0], -1)
        elif op == "dense":
            z = a @ params[name + ".weight"].T + params[name + ".bias"]
            t[name + ".pre"] = z
            y = np.maximum(z, 0) if spec.get("activation", "none") == "relu" else z
        elif op == "softmax":
            t["__logits__"] = a
            continue
        else:
            raise ValueError(f"layer {name}: op {op} is not in this reference")
        t[name] = stored(y.astype(np.float32))
    return t["__logits__"], t


def _accumulate(grads, tensor, g):
    grads[tensor] = grads[tensor] + g if tensor in grads else g


def backward(layers, params, t, dlogits, stored=_same):
    """Every parameter's gradient from the logits' gradient."""
    if stored is not _same:
        params = {k: stored(v) if k.endswith(".weight") else v for k, v in params.items()}
    g = {layers[-1]["inputs"][0]: dlogits}
    out = {}
    for spec in reversed(layers[:-1]):
        name, op = spec["name"], spec["op"]
        if name not in g:
            continue
        dy = stored(g.pop(name))
        a_name = spec["inputs"][0]
        a = t[a_name]
        if op in ("conv2d", "dense", "add") and spec.get("activation", "none") == "relu":
            dy = stored(dy * (t[name + ".pre"] > 0))
        if op == "conv2d":
            kh, kw, sh, sw, top, left, bottom, right, oh, ow = _window_geometry(spec, a, "kernel")
            xp = np.pad(a, ((0, 0), (top, bottom), (left, right), (0, 0)))
            cols = _patches(xp, kh, kw, sh, sw, oh, ow)
            dwk = np.tensordot(cols, dy, axes=([0, 1, 2], [0, 1, 2]))  # [kh, kw, in, out]
            out[name + ".weight"] = dwk.transpose(3, 2, 0, 1)
            out[name + ".bias"] = dy.sum(axis=(0, 1, 2))
            if a_name in t and a_name != layers[0]["inputs"][0]:
                wk = params[name + ".weight"].transpose(2, 3, 1, 0)
                dcols = np.tensordot(dy, wk, axes=([3], [3]))  # [N, OH, OW, kh, kw, in]
                dxp = np.zeros_like(xp)
                for i in range(kh):  # col2im: each patch's gradient back where it was read
                    for j in range(kw):
                        dxp[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :] += \
                            dcols[:, :, :, i, j, :]
                _accumulate(g, a_name, dxp[:, top:top + a.shape[1], left:left + a.shape[2], :])
        elif op == "maxpool":
            kh, kw, sh, sw, top, left, bottom, right, oh, ow = _window_geometry(spec, a, "pool")
            xp = np.pad(a, ((0, 0), (top, bottom), (left, right), (0, 0)),
                        constant_values=-np.inf)
            win = _patches(xp, kh, kw, sh, sw, oh, ow)
            n, _, _, _, _, c = win.shape
            flat = win.transpose(0, 1, 2, 5, 3, 4).reshape(n, oh, ow, c, kh * kw)
            first = flat.argmax(axis=4)  # the first maximum in row-major order
            dxp = np.zeros_like(xp)
            ni, yi, xi, ci = np.indices(first.shape)
            rows = yi * sh + first // kw
            colsx = xi * sw + first % kw
            np.add.at(dxp, (ni, rows, colsx, ci), dy)
            _accumulate(g, a_name, dxp[:, top:top + a.shape[1], left:left + a.shape[2], :])
        elif op == "add":
            for src in spec["inputs"]:
                _accumulate(g, src, dy)
        elif op == "global_avgpool":
            h, w = a.shape[1], a.shape[2]
            _accumulate(g, a_name, np.broadcast_to(dy / np.float32(h * w), a.shape).copy())
        elif op == "flatten":
            _accumulate(g, a_name, dy.reshape(a.shape))
        elif op == "dense":
            out[name + ".weight"] = dy.T @ a
            out[name + ".bias"] = dy.sum(axis=0)
            _accumulate(g, a_name, dy @ params[name + ".weight"])
    return {k: v.astype(np.float32) for k, v in out.items()}


def loss_and_gradients(layers, params, x, y, stored=_same):
    """Mean softmax cross-entropy over the batch and every parameter's gradient; `stored` as
    forward's (bf16: what a chip that stores every tensor in bf16 computes, near enough)."""
    logits, t = forward(layers, params, x.astype(np.float32), stored)
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(n), y].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(n), y] -= 1
    dlogits = stored(stored(dlogits) / np.float32(n))
    return float(loss), backward(layers, params, t, dlogits.astype(np.float32), stored)
