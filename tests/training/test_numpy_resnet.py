"""numpy_resnet.py (the independent numpy reference of a residual CNN's training step) against
torch's autograd: the same graph (workloads/training/residual-cnn.json), weights and batch give
the same loss and every parameter's gradient (within 1e-4 of the gradient's range)."""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import numpy_resnet  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPH = os.path.join(ROOT, "workloads", "training", "residual-cnn.json")


def random_parameters(layers, x, rng):
    """Shapes from a forward pass of numpy_resnet itself, values uniform."""
    params, cin = {}, x.shape[3]
    shapes = {layers[0]["inputs"][0]: x.shape[1:]}
    for spec in layers[:-1]:  # before the softmax
        src = shapes[spec["inputs"][0]]
        if spec["op"] == "conv2d":
            kh, kw = spec["kernel"]
            cin = src[2]
            params[spec["name"] + ".weight"] = rng.uniform(
                -0.5, 0.5, (spec["filters"], cin, kh, kw)).astype(np.float32) / np.sqrt(kh * kw)
            params[spec["name"] + ".bias"] = rng.uniform(-0.1, 0.1, spec["filters"]).astype(
                np.float32)
        elif spec["op"] == "dense":
            fan = int(np.prod(src))
            params[spec["name"] + ".weight"] = rng.uniform(
                -0.5, 0.5, (spec["units"], fan)).astype(np.float32)
            params[spec["name"] + ".bias"] = np.zeros(spec["units"], np.float32)
        _, t = numpy_resnet.forward(layers[:layers.index(spec) + 1] + [
            {"name": "s", "op": "softmax", "inputs": [spec["name"]]}], params, x[:1])
        shapes[spec["name"]] = t["__logits__"].shape[1:]
    return params


def torch_loss_and_gradients(layers, params, x, y):
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    t = {layers[0]["inputs"][0]: torch.tensor(x).permute(0, 3, 1, 2)}  # NCHW
    for spec in layers:
        a, name, op = t[spec["inputs"][0]], spec["name"], spec["op"]
        relu = spec.get("activation", "none") == "relu"
        pads = spec.get("pads", [0, 0, 0, 0])
        if op == "conv2d":
            y_ = F.conv2d(F.pad(a, (pads[1], pads[3], pads[0], pads[2])), p[name + ".weight"],
                          p[name + ".bias"], stride=spec.get("strides", [1, 1]))
        elif op == "maxpool":
            y_ = F.max_pool2d(F.pad(a, (pads[1], pads[3], pads[0], pads[2]),
                                    value=-float("inf")), spec["pool"], spec["strides"])
        elif op == "add":
            y_ = a + t[spec["inputs"][1]]
        elif op == "global_avgpool":
            y_ = a.mean(dim=(2, 3), keepdim=True)
        elif op == "flatten":
            y_ = a.permute(0, 2, 3, 1).reshape(a.shape[0], -1)  # (row, column, channel)
        elif op == "dense":
            y_ = a @ p[name + ".weight"].T + p[name + ".bias"]
        elif op == "softmax":
            loss = F.cross_entropy(a, torch.tensor(y))
            break
        t[name] = torch.relu(y_) if relu else y_
    loss.backward()
    return float(loss), {k: v.grad.numpy() for k, v in p.items()}


def test_residual_cnn_gradients_equal_torch():
    rng = np.random.default_rng(3)
    layers = numpy_resnet.load_graph(GRAPH)
    x = rng.uniform(0, 1, (4, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, 4)
    params = random_parameters(layers, x, rng)
    loss, grads = numpy_resnet.loss_and_gradients(layers, params, x, y)
    want_loss, want = torch_loss_and_gradients(layers, params, x, y)
    assert abs(loss - want_loss) < 1e-5 * max(1.0, abs(want_loss))
    assert set(grads) == set(want)
    for k, g in want.items():
        scale = max(float(np.abs(g).max()), 1e-12)
        assert np.abs(grads[k] - g).max() <= 1e-4 * scale, k
