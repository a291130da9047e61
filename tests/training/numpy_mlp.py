#!/usr/bin/python3
"""An independent float32 implementation, in numpy, of training workloads/training/digits-mlp.json
(flatten, dense 128 + ReLU, dense 10, softmax cross-entropy against integer labels): the dense
path of `npusim train` (issue 23) is checked against it.

Like numpy_cnn.py (whose optimizers and batch order it shares), nothing here comes from npusim:
the forward pass and the backward rules are written from their definitions. Parameters are in
PyTorch's layout, `<layer>.weight` [out, in] and `<layer>.bias` [out], float32; images NHWC,
flattened in (row, column, channel) order.

Usage (prints one JSON object: the loss per step, the held-out accuracy, and with --save the
final parameters written to a directory):
  numpy_mlp.py train --data DIR --weights DIR --steps S --batch B
                     --optimizer sgd|momentum|adam --lr LR [--eval-every K] [--save DIR]
"""

import argparse
import json
import os

import numpy as np

import numpy_cnn

LAYERS = ("fc1", "fc2")


def load_parameters(directory):
    params = {}
    for layer in LAYERS:
        for kind in ("weight", "bias"):
            path = os.path.join(directory, f"{layer}.{kind}.npy")
            params[f"{layer}.{kind}"] = np.load(path).astype(np.float32)
    return params


def forward(params, x, matrix_inputs="float32"):
    mi = matrix_inputs
    flat = x.reshape(x.shape[0], -1).astype(np.float32)
    h1 = numpy_cnn.matmul(flat, params["fc1.weight"].T, mi) + params["fc1.bias"]
    a1 = np.maximum(h1, 0)
    logits = numpy_cnn.matmul(a1, params["fc2.weight"].T, mi) + params["fc2.bias"]
    return logits, dict(flat=flat, h1=h1, a1=a1)


def loss_and_gradients(params, x, y, matrix_inputs="float32"):
    """Mean softmax cross-entropy over the batch and the gradient of every parameter;
    matrix_inputs as numpy_cnn.loss_and_gradients'."""
    mi = matrix_inputs
    logits, s = forward(params, x, mi)
    return numpy_cnn.loss_head(logits, y, mi, lambda dlogits: backward(params, s, dlogits, mi))


def backward(params, s, dlogits, mi):
    g = {
        "fc2.weight": numpy_cnn.matmul(dlogits.T, s["a1"], mi),
        "fc2.bias": numpy_cnn.rounded(dlogits, mi).sum(axis=0),
    }
    dh1 = numpy_cnn.matmul(dlogits, params["fc2.weight"], mi) * (s["h1"] > 0)
    g["fc1.weight"] = numpy_cnn.matmul(dh1.T, s["flat"], mi)
    g["fc1.bias"] = numpy_cnn.rounded(dh1, mi).sum(axis=0)
    return {k: v.astype(np.float32) for k, v in g.items()}


def accuracy(params, x, y):
    logits, _ = forward(params, x)
    return float((logits.argmax(axis=1) == y).mean())


def train(params, x, y, xh, yh, steps, batch, optimizer, eval_every=0, model=None):
    return numpy_cnn.train(params, x, y, xh, yh, steps, batch, optimizer, eval_every,
                           model=model or (loss_and_gradients, accuracy))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", required=True)
    t.add_argument("--weights", required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--optimizer", default="adam")
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--eval-every", type=int, default=0)
    t.add_argument("--save", help="write the final parameters here")
    a = p.parse_args()
    x = np.load(os.path.join(a.data, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(a.data, "y.npy")).astype(np.int64)
    held = os.path.join(a.data, "heldout")
    xh = yh = None
    if os.path.isdir(held):
        xh = np.load(os.path.join(held, "x.npy")).astype(np.float32)
        yh = np.load(os.path.join(held, "y.npy")).astype(np.int64)
    params = load_parameters(a.weights)
    params, losses, evals = train(params, x, y, xh, yh, a.steps, a.batch,
                                  numpy_cnn.Optimizer(a.optimizer, a.lr), a.eval_every)
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        for k, v in params.items():
            np.save(os.path.join(a.save, f"{k}.npy"), v)
    print(json.dumps({"loss": losses, "heldout": evals}))


if __name__ == "__main__":
    main()
