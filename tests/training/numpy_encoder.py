#!/usr/bin/python3
"""An independent float32 implementation, in numpy, of one BERT encoder layer's training step
(workloads/training/tiny-encoder.json, the structure of workloads/zoo/bert-encoder.json) with the
mean squared error against targets of the output's shape: `npusim train`'s transformer rules
(issue 23) are checked against it, and it against torch's autograd (test_train_encoder.py).

Nothing here comes from npusim: the forward pass and the backward rules are written from their
definitions (attention as in Vaswani et al. 2017, post-layer-norm as in BERT, GELU in its erf
form). Parameters are in PyTorch's layout: `<layer>.weight` [out, in] and `<layer>.bias` [out]
for the dense layers, `<norm>.weight` (gamma) and `<norm>.bias` (beta) [hidden] for the layer
norms, float32.
"""

import math
import os

import numpy as np

DENSE = ("query", "key", "value", "attention_output", "intermediate", "output")
NORMS = ("attention_norm", "output_norm")
EPSILON = 1e-12


def load_parameters(directory):
    params = {}
    for layer in DENSE + NORMS:
        for kind in ("weight", "bias"):
            params[f"{layer}.{kind}"] = np.load(
                os.path.join(directory, f"{layer}.{kind}.npy")).astype(np.float32)
    return params


def dense(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(np.float32)


def layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    inv_sigma = 1.0 / np.sqrt(var + EPSILON)
    xhat = (x - mean) * inv_sigma
    return gamma * xhat + beta, (xhat, inv_sigma)


def forward(p, x, heads):
    """x [B, S, H]; returns the output [B, S, H] and what the backward pass needs."""
    b, s, h = x.shape
    d = h // heads
    x = x.astype(np.float32)

    def split(t):  # [B, S, H] -> [B, heads, S, d]
        return t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)

    q, k, v = (split(dense(p, n, x)) for n in ("query", "key", "value"))
    scores = q @ k.transpose(0, 1, 3, 2)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    r1 = dense(p, "attention_output", context) + x
    n1, ln1 = layernorm(r1, p["attention_norm.weight"], p["attention_norm.bias"])
    z = dense(p, "intermediate", n1)
    a = 0.5 * z * (1.0 + erf(z / np.float32(math.sqrt(2.0))))
    r2 = dense(p, "output", a) + n1
    y, ln2 = layernorm(r2, p["output_norm.weight"], p["output_norm.bias"])
    saved = dict(x=x, q=q, k=k, v=v, probs=probs, context=context, n1=n1, ln1=ln1, z=z, a=a,
                 ln2=ln2)
    return y.astype(np.float32), saved


def dense_backward(p, name, x, dy, g):
    """y = x W^T + b over the last dimension: the parameter gradients into g, returns dx."""
    xs, dys = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    g[f"{name}.weight"] = dys.T @ xs
    g[f"{name}.bias"] = dys.sum(axis=0)
    return dy @ p[f"{name}.weight"]


def layernorm_backward(p, name, saved, dy, g):
    xhat, inv_sigma = saved
    g[f"{name}.weight"] = (dy * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0)
    g[f"{name}.bias"] = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    dxhat = dy * p[f"{name}.weight"]
    return inv_sigma * (dxhat - dxhat.mean(axis=-1, keepdims=True) -
                        xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))


def loss_and_gradients(p, x, target, heads):
    """Mean squared error over every element and the gradient of every parameter."""
    y, s = forward(p, x, heads)
    diff = y - target.astype(np.float32)
    loss = float(np.mean(diff.astype(np.float64) ** 2))
    g = {}
    dy = (2.0 / diff.size) * diff
    dr2 = layernorm_backward(p, "output_norm", s["ln2"], dy, g)
    da = dense_backward(p, "output", s["a"], dr2, g)
    z = s["z"]
    pdf = np.exp(-0.5 * z * z) / np.float32(math.sqrt(2.0 * math.pi))
    cdf = 0.5 * (1.0 + erf(z / np.float32(math.sqrt(2.0))))
    dz = da * (cdf + z * pdf)
    dn1 = dense_backward(p, "intermediate", s["n1"], dz, g) + dr2
    dr1 = layernorm_backward(p, "attention_norm", s["ln1"], dn1, g)
    dcontext = dense_backward(p, "attention_output", s["context"], dr1, g)
    b, sq, h = dcontext.shape
    heads_, d = s["q"].shape[1], s["q"].shape[3]
    dctx = dcontext.reshape(b, sq, heads_, d).transpose(0, 2, 1, 3)
    probs = s["probs"]
    dprobs = dctx @ s["v"].transpose(0, 1, 3, 2)
    dv = probs.transpose(0, 1, 3, 2) @ dctx
    dscores = probs * (dprobs - (dprobs * probs).sum(axis=-1, keepdims=True))
    dq = dscores @ s["k"]
    dk = dscores.transpose(0, 1, 3, 2) @ s["q"]

    def merge(t):  # [B, heads, S, d] -> [B, S, H]
        return t.transpose(0, 2, 1, 3).reshape(b, sq, h)

    for name, dt in (("query", dq), ("key", dk), ("value", dv)):
        dense_backward(p, name, s["x"], merge(dt), g)
    return loss, {k: v.astype(np.float32) for k, v in g.items()}
