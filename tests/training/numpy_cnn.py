#!/usr/bin/python3
"""An independent float32 implementation, in numpy, of training the zoo's mnist-cnn (Keras' MNIST
example CNN: conv 3x3x32 + ReLU, 2x2 max pool, flatten, dense 128 + ReLU, dense 10, softmax
cross-entropy against integer labels), to check `npusim train` against (issue 23).

Nothing here comes from npusim: the forward pass, the backward rules and the optimizers are written
from their textbook definitions, and tests/training/test_numpy_cnn.py checks them against torch's
autograd and torch.optim.

Layouts. Images are NHWC ([N, 28, 28, 1]), as the zoo model's input; the flatten after the pool
is in (row, column, channel) order, as the model computes it. Parameters are in PyTorch's layout,
one float32 array each, named `<layer>.weight` / `<layer>.bias`: convolution [out, in, kh, kw],
dense [out, in] (`in` in the model's flatten order), the form `npusim train --save-weights`
writes.

Usage (prints one JSON object: the loss per step and the held-out accuracy):
  numpy_cnn.py train --data DIR [--weights DIR] [--seed S] --steps S --batch B
                     --optimizer sgd|momentum|adam --lr LR [--eval-every K]
DIR holds x.npy / y.npy and heldout/x.npy / heldout/y.npy (scripts/digits_dataset.py).
"""

import argparse
import json
import os
import sys

import numpy as np

LAYERS = ("conv1", "fc1", "fc2")


def initial_parameters(seed, image=28, classes=10, filters=32, hidden=128):
    """Keras' defaults: Glorot-uniform kernels, zero biases."""
    rng = np.random.default_rng(seed)

    def glorot(shape, fan_in, fan_out):
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    pooled = (image - 2) // 2
    flat = pooled * pooled * filters
    return {
        "conv1.weight": glorot((filters, 1, 3, 3), 9, 9 * filters),
        "conv1.bias": np.zeros(filters, np.float32),
        "fc1.weight": glorot((hidden, flat), flat, hidden),
        "fc1.bias": np.zeros(hidden, np.float32),
        "fc2.weight": glorot((classes, hidden), hidden, classes),
        "fc2.bias": np.zeros(classes, np.float32),
    }


def load_parameters(directory):
    params = {}
    for layer in LAYERS:
        for kind in ("weight", "bias"):
            path = os.path.join(directory, f"{layer}.{kind}.npy")
            params[f"{layer}.{kind}"] = np.load(path).astype(np.float32)
    return params


def bf16(a):
    """Rounds float32 values to the nearest bfloat16 (8 significand bits), ties to even, kept as
    float32: what a matrix unit with bf16 inputs reads."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).reshape(np.shape(a))


def matmul(a, b, matrix_inputs):
    """a @ b accumulated in float32; matrix_inputs "bf16" rounds both operands to bf16 first
    (mixed precision as TPUs train), "float32" leaves them; "bf16-stored" is "bf16" with the
    loss's tensors also stored in bf16 (loss_and_gradients)."""
    if matrix_inputs != "float32":
        a, b = bf16(a), bf16(b)
    return a @ b


def rounded(a, matrix_inputs):
    """A bias gradient's summands: the gradient as a matrix product with a ones vector reads it."""
    return a if matrix_inputs == "float32" else bf16(a)


def im2col3x3(x):
    """[N, H, W, C] -> [N, H-2, W-2, 9*C], patch order (kh, kw, c)."""
    n, h, w, c = x.shape
    cols = [x[:, i:i + h - 2, j:j + w - 2, :] for i in range(3) for j in range(3)]
    return np.concatenate(cols, axis=3)


def forward(params, x, matrix_inputs="float32"):
    """Returns the logits and what the backward pass needs."""
    mi = matrix_inputs
    f = params["conv1.weight"].shape[0]
    cin = params["conv1.weight"].shape[1]
    # [out, in, kh, kw] -> [(kh, kw, in), out], the im2col patch order.
    wk = params["conv1.weight"].transpose(2, 3, 1, 0).reshape(9 * cin, f)
    cols = im2col3x3(x)
    conv = matmul(cols.reshape(-1, 9 * cin), wk, mi).reshape(*cols.shape[:3], f) + \
        params["conv1.bias"]
    act = np.maximum(conv, 0)
    n, h, w, _ = act.shape
    hp, wp = h // 2, w // 2
    windows = act[:, :2 * hp, :2 * wp, :].reshape(n, hp, 2, wp, 2, f)
    pooled = windows.max(axis=(2, 4))
    flat = pooled.reshape(n, -1)
    h1 = matmul(flat, params["fc1.weight"].T, mi) + params["fc1.bias"]
    a1 = np.maximum(h1, 0)
    logits = matmul(a1, params["fc2.weight"].T, mi) + params["fc2.bias"]
    saved = dict(cols=cols, conv=conv, act=act, windows=windows, pooled=pooled, flat=flat, h1=h1,
                 a1=a1)
    return logits, saved


def loss_and_gradients(params, x, y, matrix_inputs="float32"):
    """Mean softmax cross-entropy over the batch and the gradient of every parameter;
    matrix_inputs as matmul's ("float32", "bf16" or "bf16-stored"), for every product of the
    forward and backward passes."""
    mi = matrix_inputs
    logits, s = forward(params, x, mi)
    return loss_head(logits, y, mi, lambda dlogits: backward(params, s, dlogits, mi))


def loss_head(logits, y, matrix_inputs, backward_of):
    """The mean cross-entropy of the logits and backward_of(its gradient). "bf16-stored" rounds
    what a chip storing every tensor in bf16 stores: the logits (the loss is computed from them),
    the probabilities and their difference from the one-hot labels."""
    stored = bf16 if matrix_inputs == "bf16-stored" else (lambda a: a)
    logits = stored(logits)
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(n), y].mean()
    dlogits = stored(np.exp(logp))
    dlogits[np.arange(n), y] -= 1
    dlogits = stored(dlogits) / np.float32(n)
    return float(loss), backward_of(dlogits)


def backward(params, s, dlogits, mi):
    """Every parameter's gradient from the logits' gradient and what forward saved."""
    g = {}
    g["fc2.weight"] = matmul(dlogits.T, s["a1"], mi)
    g["fc2.bias"] = rounded(dlogits, mi).sum(axis=0)
    da1 = matmul(dlogits, params["fc2.weight"], mi)
    dh1 = da1 * (s["h1"] > 0)
    g["fc1.weight"] = matmul(dh1.T, s["flat"], mi)
    g["fc1.bias"] = rounded(dh1, mi).sum(axis=0)
    dflat = matmul(dh1, params["fc1.weight"], mi)
    dpooled = dflat.reshape(s["pooled"].shape)
    # Max-pool backward: the gradient goes to the first maximum of each window (row-major).
    win = s["windows"]  # [n, hp, 2, wp, 2, f]
    nb, hp, _, wp, _, f = win.shape
    flat_win = win.transpose(0, 1, 3, 5, 2, 4).reshape(nb, hp, wp, f, 4)
    first = flat_win.argmax(axis=4)
    mask = np.zeros_like(flat_win)
    np.put_along_axis(mask, first[..., None], 1.0, axis=4)
    dwin = (mask * dpooled[..., None]).reshape(nb, hp, wp, f, 2, 2).transpose(0, 1, 4, 2, 5, 3)
    dact = np.zeros_like(s["act"])
    dact[:, :2 * hp, :2 * wp, :] = dwin.reshape(nb, 2 * hp, 2 * wp, f)
    dconv = dact * (s["conv"] > 0)
    cin = params["conv1.weight"].shape[1]
    dwk = matmul(s["cols"].reshape(-1, 9 * cin).T, dconv.reshape(-1, f), mi)  # [(kh, kw, in), out]
    g["conv1.weight"] = dwk.reshape(3, 3, cin, f).transpose(3, 2, 0, 1)
    g["conv1.bias"] = rounded(dconv, mi).sum(axis=(0, 1, 2))
    return {k: v.astype(params[k].dtype) for k, v in g.items()}


class Optimizer:
    """SGD, momentum (v = mu v + g; w -= lr v, as torch.optim.SGD) and Adam (Kingma & Ba, with
    bias correction; eps added to the square root of the corrected second moment)."""

    def __init__(self, kind, lr, momentum=0.9, beta1=0.9, beta2=0.999, eps=1e-7):
        if kind not in ("sgd", "momentum", "adam"):
            raise ValueError(f"optimizer {kind!r}: expected sgd, momentum or adam")
        self.kind, self.lr, self.mu = kind, lr, momentum
        self.b1, self.b2, self.eps = beta1, beta2, eps
        self.t = 0
        self.state = {}

    def step(self, params, grads):
        self.t += 1
        for k, g in grads.items():
            if self.kind == "sgd":
                params[k] = params[k] - np.float32(self.lr) * g
            elif self.kind == "momentum":
                v = self.state.get(k, np.zeros_like(g))
                v = np.float32(self.mu) * v + g
                self.state[k] = v
                params[k] = params[k] - np.float32(self.lr) * v
            else:
                m, v = self.state.get(k, (np.zeros_like(g), np.zeros_like(g)))
                m = np.float32(self.b1) * m + np.float32(1 - self.b1) * g
                v = np.float32(self.b2) * v + np.float32(1 - self.b2) * g * g
                self.state[k] = (m, v)
                mhat = m / np.float32(1 - self.b1**self.t)
                vhat = v / np.float32(1 - self.b2**self.t)
                params[k] = params[k] - np.float32(self.lr) * mhat / (np.sqrt(vhat) +
                                                                      np.float32(self.eps))
        return params


def batches(n, batch, steps, shuffle_seed=None):
    """The sample indices of each step: file order, wrapping around (or a fresh seeded
    permutation per pass over the data with a shuffle seed)."""
    order = np.arange(n)
    rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None
    pos = n  # start a pass at the first step
    for _ in range(steps):
        idx = []
        while len(idx) < batch:
            if pos == n:
                pos = 0
                if rng is not None:
                    order = rng.permutation(n)
            take = min(batch - len(idx), n - pos)
            idx.extend(order[pos:pos + take])
            pos += take
        yield np.array(idx)


def accuracy(params, x, y, chunk=256):
    right = 0
    for i in range(0, len(y), chunk):
        logits, _ = forward(params, x[i:i + chunk])
        right += int((logits.argmax(axis=1) == y[i:i + chunk]).sum())
    return right / len(y)


def train(params, x, y, xh, yh, steps, batch, optimizer, eval_every=0, shuffle_seed=None,
          model=None):
    """model: (loss_and_gradients, accuracy) of another network (numpy_mlp.py); this CNN's own
    by default."""
    step_of, accuracy_of = model or (loss_and_gradients, accuracy)
    losses, evals = [], []
    for step, idx in enumerate(batches(len(y), batch, steps, shuffle_seed), start=1):
        loss, g = step_of(params, x[idx], y[idx])
        losses.append(loss)
        params = optimizer.step(params, g)
        if xh is not None and ((eval_every and step % eval_every == 0) or step == steps):
            evals.append({"step": step, "accuracy": accuracy_of(params, xh, yh)})
    return params, losses, evals


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", required=True)
    t.add_argument("--weights", help="directory of <layer>.weight.npy / .bias.npy to start from")
    t.add_argument("--seed", type=int, default=0, help="initial weights without --weights")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--optimizer", default="adam")
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--eval-every", type=int, default=0)
    a = p.parse_args()
    x = np.load(os.path.join(a.data, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(a.data, "y.npy")).astype(np.int64)
    xh = np.load(os.path.join(a.data, "heldout", "x.npy")).astype(np.float32)
    yh = np.load(os.path.join(a.data, "heldout", "y.npy")).astype(np.int64)
    if x.ndim != 4 or x.shape[3] != 1:
        sys.exit(f"{a.data}/x.npy: expected NHWC images [N, H, W, 1], got {list(x.shape)}")
    params = load_parameters(a.weights) if a.weights else initial_parameters(a.seed, x.shape[1])
    _, losses, evals = train(params, x, y, xh, yh, a.steps, a.batch, Optimizer(a.optimizer, a.lr),
                             a.eval_every)
    print(json.dumps({"loss": losses, "heldout": evals}))


if __name__ == "__main__":
    main()
