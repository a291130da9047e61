#!/usr/bin/env python3
"""Builds the ONNX models the ONNX import tests read, with fixed seeds, and their expected outputs.

Usage: make_models.py OUT_DIR

For each model M it writes OUT_DIR/M.onnx and, in OUT_DIR/M/:
  input.npy          the input batch, in ONNX layout (NCHW / NCDHW), float32
  input_nhwc.npy     the same batch channels last (what npusim's IR holds), for rank-4/5 inputs
  <output>.npy       each graph output computed by the numpy float implementation below
  init_<name>.npy    every initializer, as stored in the model (ONNX layout)
The expected outputs come from the numpy code in this file, written from the ONNX operator
specification, not from an ONNX runtime. Models named bad_* are deliberately wrong inputs for the
error-message tests; corrupt_*.onnx are not ONNX at all.

Needs Debian's python3-onnx and python3-numpy only.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


# ---------------------------------------------------------------- numpy reference operators
# All take one sample (no batch dimension), channels first, like ONNX without N.

def conv(x, w, b, strides, pads, dilations, group):
    """x [C, *S], w [O, C/group, *K]; pads = begins + ends (ONNX order)."""
    nsp = x.ndim - 1
    xp = np.pad(x, [(0, 0)] + [(pads[i], pads[nsp + i]) for i in range(nsp)])
    k = w.shape[2:]
    out_sp = [(xp.shape[1 + i] - ((k[i] - 1) * dilations[i] + 1)) // strides[i] + 1
              for i in range(nsp)]
    o_total, cg = w.shape[0], w.shape[1]
    og = o_total // group
    y = np.zeros([o_total] + out_sp, dtype=np.float64)
    for tap in np.ndindex(*k):
        sl = tuple(slice(tap[i] * dilations[i],
                         tap[i] * dilations[i] + (out_sp[i] - 1) * strides[i] + 1, strides[i])
                   for i in range(nsp))
        patch = xp[(slice(None),) + sl]  # [C, *out]
        for g in range(group):
            wg = w[(slice(g * og, (g + 1) * og), slice(None)) + tap]  # [og, cg]
            y[g * og:(g + 1) * og] += np.tensordot(wg, patch[g * cg:(g + 1) * cg], axes=(1, 0))
    if b is not None:
        y += b.reshape([-1] + [1] * nsp)
    return y


def pool(x, kernel, strides, pads, kind, count_include_pad=False):
    nsp = x.ndim - 1
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0)] + [(pads[i], pads[nsp + i]) for i in range(nsp)],
                constant_values=fill)
    valid = np.pad(np.ones(x.shape[1:]), [(pads[i], pads[nsp + i]) for i in range(nsp)])
    out_sp = [(xp.shape[1 + i] - kernel[i]) // strides[i] + 1 for i in range(nsp)]
    y = np.zeros([x.shape[0]] + out_sp)
    for pos in np.ndindex(*out_sp):
        sl = tuple(slice(pos[i] * strides[i], pos[i] * strides[i] + kernel[i])
                   for i in range(nsp))
        window = xp[(slice(None),) + sl].reshape(x.shape[0], -1)
        if kind == "max":
            y[(slice(None),) + pos] = window.max(axis=1)
        else:
            count = np.prod(kernel) if count_include_pad else valid[sl].sum()
            y[(slice(None),) + pos] = window.sum(axis=1) / count
    return y


def batchnorm(x, gamma, beta, mean, var, eps):
    shape = [-1] + [1] * (x.ndim - 1)
    return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape)
            + beta.reshape(shape))


def layernorm(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


# ---------------------------------------------------------------- model building helpers

class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = {}

    def weight(self, name, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        scale = scale if scale is not None else 1.0 / math.sqrt(max(1, fan_in))
        self.inits[name] = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return name

    def const(self, name, array):
        self.inits[name] = np.asarray(array)
        return name

    def node(self, op, inputs, outputs, name=None, domain=None, **attrs):
        n = helper.make_node(op, inputs, outputs, name=name or outputs[0], **attrs)
        if domain:
            n.domain = domain
        self.nodes.append(n)
        return outputs[0]

    def model(self, input_name, input_shape, outputs, opset=13, batch_dim=1):
        inputs = [helper.make_tensor_value_info(input_name, F32, [batch_dim] + list(input_shape))]
        outs = [helper.make_tensor_value_info(o, F32, None) for o in outputs]
        inits = [numpy_helper.from_array(v, k) for k, v in self.inits.items()]
        graph = helper.make_graph(self.nodes, self.name, inputs, outs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npusim-tests")
        m.ir_version = 8
        return m


def save(out_dir, b, model, x, expected, check=True):
    # Output shapes from the expected values, with the input's batch dimension (maybe symbolic).
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    batch = batch.dim_param or batch.dim_value
    for o in model.graph.output:
        if o.name in expected:
            shape = [batch] + list(np.asarray(expected[o.name]).shape[1:])
            o.CopyFrom(helper.make_tensor_value_info(o.name, F32, shape))
    if check:
        onnx.checker.check_model(model)
        # ONNX's own shape inference must agree with the shapes of the numpy results.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        for o in inferred.graph.output:
            dims = [d.dim_value for d in o.type.tensor_type.shape.dim[1:]]
            if o.name in expected and dims != list(np.asarray(expected[o.name]).shape[1:]):
                sys.exit(f"{b.name}: output {o.name}: ONNX infers {dims}, numpy computed "
                         f"{np.asarray(expected[o.name]).shape[1:]}")
    onnx.save(model, os.path.join(out_dir, b.name + ".onnx"))
    d = os.path.join(out_dir, b.name)
    os.makedirs(d, exist_ok=True)
    if x is not None:
        np.save(os.path.join(d, "input.npy"), x.astype(np.float32))
        if x.ndim >= 4:
            np.save(os.path.join(d, "input_nhwc.npy"),
                    np.moveaxis(x, 1, -1).astype(np.float32).copy())
    for name, value in expected.items():
        np.save(os.path.join(d, name + ".npy"), np.asarray(value, dtype=np.float32))
    for name, value in b.inits.items():
        np.save(os.path.join(d, "init_" + name + ".npy"), value)


def per_sample(fn, x):
    return np.stack([fn(s) for s in x])


# ---------------------------------------------------------------- the models

def cnn(out_dir):
    """Conv + BatchNormalization + Relu, a residual Add, MaxPool, a grouped SAME conv,
    GlobalAveragePool, Flatten, Gemm, Softmax. Symbolic batch dimension."""
    b = Builder("cnn", 1)
    rng = b.rng
    b.weight("conv1_W", [8, 3, 3, 3])
    b.weight("conv1_B", [8], 0.1)
    for bn in ("bn1", "bn2"):
        b.const(bn + "_scale", rng.uniform(0.5, 1.5, 8).astype(np.float32))
        b.const(bn + "_bias", rng.uniform(-0.2, 0.2, 8).astype(np.float32))
        b.const(bn + "_mean", rng.uniform(-0.2, 0.2, 8).astype(np.float32))
        b.const(bn + "_var", rng.uniform(0.5, 2.0, 8).astype(np.float32))
    b.weight("conv2_W", [8, 8, 3, 3])
    b.weight("conv3_W", [16, 4, 3, 3])
    b.weight("conv3_B", [16], 0.1)
    b.weight("fc_W", [10, 16])
    b.weight("fc_B", [10], 0.1)

    b.node("Conv", ["x", "conv1_W", "conv1_B"], ["conv1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("BatchNormalization", ["conv1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"],
           ["bn1"], epsilon=1e-3)
    b.node("Relu", ["bn1"], ["relu1"])
    b.node("Conv", ["relu1", "conv2_W"], ["conv2"], pads=[1, 1, 1, 1])
    b.node("BatchNormalization", ["conv2", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"],
           ["bn2"])
    b.node("Add", ["bn2", "relu1"], ["residual"])
    b.node("Relu", ["residual"], ["relu2"])
    b.node("MaxPool", ["relu2"], ["pool"], kernel_shape=[2, 2], strides=[2, 2])
    b.node("Conv", ["pool", "conv3_W", "conv3_B"], ["conv3"], group=2, strides=[2, 2],
           auto_pad="SAME_UPPER")
    b.node("Relu", ["conv3"], ["relu3"])
    b.node("GlobalAveragePool", ["relu3"], ["gap"])
    b.node("Flatten", ["gap"], ["flat"])
    b.node("Gemm", ["flat", "fc_W", "fc_B"], ["fc"], transB=1)
    b.node("Softmax", ["fc"], ["probs"], axis=-1)
    model = b.model("x", [3, 12, 12], ["probs"], batch_dim="N")

    i = b.inits
    x = rng.uniform(-1, 1, [2, 3, 12, 12]).astype(np.float32)

    def run(s):
        t = conv(s, i["conv1_W"], i["conv1_B"], [1, 1], [1, 1, 1, 1], [1, 1], 1)
        r1 = relu(batchnorm(t, i["bn1_scale"], i["bn1_bias"], i["bn1_mean"], i["bn1_var"], 1e-3))
        t = conv(r1, i["conv2_W"], None, [1, 1], [1, 1, 1, 1], [1, 1], 1)
        t = batchnorm(t, i["bn2_scale"], i["bn2_bias"], i["bn2_mean"], i["bn2_var"], 1e-5)
        t = pool(relu(t + r1), [2, 2], [2, 2], [0, 0, 0, 0], "max")
        # SAME_UPPER, 6 -> 3 with stride 2 and kernel 3: total padding 1, after.
        t = relu(conv(t, i["conv3_W"], i["conv3_B"], [2, 2], [0, 0, 1, 1], [1, 1], 2))
        t = t.mean(axis=(1, 2))
        return softmax(t @ i["fc_W"].T + i["fc_B"])

    save(out_dir, b, model, x, {"probs": per_sample(run, x)})


def mlp(out_dir):
    """Gemm (transB) + Relu, MatMul + Add bias + Relu, MatMul + Add bias."""
    b = Builder("mlp", 2)
    b.weight("fc1_W", [64, 32])
    b.weight("fc1_B", [64], 0.1)
    b.weight("fc2_W", [64, 48])
    b.weight("fc2_B", [48], 0.1)
    b.weight("fc3_W", [48, 10])
    b.weight("fc3_B", [1, 10], 0.1)
    b.node("Gemm", ["x", "fc1_W", "fc1_B"], ["fc1"], transB=1)
    b.node("Relu", ["fc1"], ["relu1"])
    b.node("MatMul", ["relu1", "fc2_W"], ["mm2"])
    b.node("Add", ["mm2", "fc2_B"], ["fc2"])
    b.node("Relu", ["fc2"], ["relu2"])
    b.node("MatMul", ["relu2", "fc3_W"], ["mm3"])
    b.node("Add", ["fc3_B", "mm3"], ["logits"])
    model = b.model("x", [32], ["logits"])
    # Older exporters also list every initializer as a graph input: they are not run-time inputs.
    model.graph.input.extend(helper.make_tensor_value_info(k, F32, list(v.shape))
                             for k, v in b.inits.items())
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 32]).astype(np.float32)
    h = relu(x @ i["fc1_W"].T + i["fc1_B"])
    h = relu(h @ i["fc2_W"] + i["fc2_B"])
    save(out_dir, b, model, x, {"logits": h @ i["fc3_W"] + i["fc3_B"]})


def flatten_dense(out_dir):
    """A Flatten of a real feature map (C=4, H=W=3) into a Gemm: the dense rows are permuted."""
    b = Builder("flatten_dense", 3)
    b.weight("conv_W", [4, 2, 3, 3])
    b.weight("fc_W", [36, 6])
    b.weight("fc_B", [6], 0.1)
    b.node("Conv", ["x", "conv_W"], ["conv"])
    b.node("Relu", ["conv"], ["relu"])
    b.node("Flatten", ["relu"], ["flat"])
    b.node("Gemm", ["flat", "fc_W", "fc_B"], ["y"], alpha=0.5, beta=2.0)
    model = b.model("x", [2, 5, 5], ["y"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 2, 5, 5]).astype(np.float32)

    def run(s):
        t = relu(conv(s, i["conv_W"], None, [1, 1], [0, 0, 0, 0], [1, 1], 1))
        return 0.5 * (t.reshape(-1) @ i["fc_W"]) + 2.0 * i["fc_B"]

    save(out_dir, b, model, x, {"y": per_sample(run, x)})


def conv_grouped(out_dir):
    """Grouped conv with dilation, stride and asymmetric explicit pads."""
    b = Builder("conv_grouped", 4)
    b.weight("W", [6, 2, 3, 3])
    b.weight("B", [6], 0.1)
    pads = [1, 0, 2, 1]
    b.node("Conv", ["x", "W", "B"], ["y"], group=2, dilations=[2, 2], strides=[2, 2], pads=pads)
    model = b.model("x", [4, 9, 9], ["y"])
    x = b.rng.uniform(-1, 1, [1, 4, 9, 9]).astype(np.float32)
    y = per_sample(lambda s: conv(s, b.inits["W"], b.inits["B"], [2, 2], pads, [2, 2], 2), x)
    save(out_dir, b, model, x, {"y": y})


def conv_depthwise(out_dir):
    """Depthwise conv (multiplier 2) with SAME_LOWER padding and stride 2."""
    b = Builder("conv_depthwise", 5)
    b.weight("W", [8, 1, 3, 3])
    b.node("Conv", ["x", "W"], ["y"], group=4, strides=[2, 2], auto_pad="SAME_LOWER")
    model = b.model("x", [4, 8, 8], ["y"])
    x = b.rng.uniform(-1, 1, [1, 4, 8, 8]).astype(np.float32)
    # 8 -> 4 with stride 2, kernel 3: total padding 1, before (SAME_LOWER).
    y = per_sample(lambda s: conv(s, b.inits["W"], None, [2, 2], [1, 1, 0, 0], [1, 1], 4), x)
    save(out_dir, b, model, x, {"y": y})


def conv3d(out_dir):
    b = Builder("conv3d", 6)
    b.weight("W", [3, 2, 2, 3, 3])
    b.weight("B", [3], 0.1)
    pads = [0, 1, 1, 1, 1, 0]
    b.node("Conv", ["x", "W", "B"], ["conv"], strides=[1, 2, 1], pads=pads)
    b.node("Relu", ["conv"], ["y"])
    model = b.model("x", [2, 4, 6, 6], ["y"])
    x = b.rng.uniform(-1, 1, [1, 2, 4, 6, 6]).astype(np.float32)
    y = per_sample(lambda s: relu(conv(s, b.inits["W"], b.inits["B"], [1, 2, 1], pads,
                                       [1, 1, 1], 1)), x)
    save(out_dir, b, model, x, {"y": y})


def pools(out_dir):
    """AveragePool with and without count_include_pad, MaxPool with pads, Concat on channels."""
    b = Builder("pools", 7)
    b.node("AveragePool", ["x"], ["avg_incl"], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1], count_include_pad=1)
    b.node("AveragePool", ["x"], ["avg_excl"], kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1])
    b.node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b.node("Concat", ["avg_incl", "avg_excl", "max"], ["cat"], axis=1)
    # ceil_mode: 7 wide, kernel 2, stride 2 -> 4 windows, the last one hanging over by one.
    b.node("MaxPool", ["x"], ["max_ceil"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    b.node("AveragePool", ["x"], ["avg_ceil"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    model = b.model("x", [3, 7, 7], ["cat", "max", "max_ceil", "avg_ceil"])
    x = b.rng.uniform(-1, 1, [1, 3, 7, 7]).astype(np.float32)
    p = [1, 1, 1, 1]
    mx = per_sample(lambda s: pool(s, [3, 3], [2, 2], p, "max"), x)
    cat = np.concatenate([per_sample(lambda s: pool(s, [3, 3], [2, 2], p, "avg", True), x),
                          per_sample(lambda s: pool(s, [3, 3], [2, 2], p, "avg", False), x),
                          mx], axis=1)
    # The overhanging windows see one input column / row: the same as one pixel of end padding
    # that max ignores and the average does not count.
    ceil_pads = [0, 0, 1, 1]
    max_ceil = per_sample(lambda s: pool(s, [2, 2], [2, 2], ceil_pads, "max"), x)
    avg_ceil = per_sample(lambda s: pool(s, [2, 2], [2, 2], ceil_pads, "avg", False), x)
    save(out_dir, b, model, x, {"cat": cat, "max": mx, "max_ceil": max_ceil,
                                "avg_ceil": avg_ceil})


def activations(out_dir):
    """Sigmoid, Tanh, Clip (relu6 and a general range), the Erf form of GELU, Mul, Add."""
    b = Builder("activations", 8)
    b.const("zero", np.array(0.0, np.float32))
    b.const("six", np.array(6.0, np.float32))
    b.const("lo", np.array(-0.5, np.float32))
    b.const("hi", np.array(0.25, np.float32))
    b.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
    b.const("one", np.array(1.0, np.float32))
    b.const("half", np.array(0.5, np.float32))
    b.node("Sigmoid", ["x"], ["sigmoid"])
    b.node("Tanh", ["x"], ["tanh"])
    b.node("Clip", ["x", "zero", "six"], ["relu6"])
    b.node("Clip", ["x", "lo", "hi"], ["clip"])
    b.node("Div", ["x", "sqrt2"], ["gelu_div"])
    b.node("Erf", ["gelu_div"], ["gelu_erf"])
    b.node("Add", ["gelu_erf", "one"], ["gelu_add"])
    b.node("Mul", ["x", "gelu_add"], ["gelu_mul"])
    b.node("Mul", ["gelu_mul", "half"], ["gelu"])
    b.node("Mul", ["sigmoid", "tanh"], ["mul"])
    b.node("Add", ["mul", "gelu"], ["sum"])
    outputs = ["relu6", "clip", "sum"]
    model = b.model("x", [24], outputs)
    x = (b.rng.uniform(-1, 1, [1, 24]) * 4).astype(np.float32)
    expected = {"relu6": np.clip(x, 0, 6), "clip": np.clip(x, -0.5, 0.25),
                "sum": sigmoid(x) * np.tanh(x) + gelu(x)}
    save(out_dir, b, model, x, expected)


def sequence(out_dir):
    """Transformer-style tensors (N, rows, features): LayerNormalization, MatMul with weights
    (+ Add bias), MatMul of two activations, Softmax, Gelu, Reshape to (N, features)."""
    b = Builder("sequence", 9)
    b.const("ln_scale", b.rng.uniform(0.5, 1.5, 8).astype(np.float32))
    b.const("ln_bias", b.rng.uniform(-0.2, 0.2, 8).astype(np.float32))
    b.weight("Wa", [8, 4])
    b.weight("Wb", [8, 6])
    b.weight("Bb", [6], 0.1)
    b.weight("Wo", [24, 5])
    b.const("shape", np.array([0, -1], np.int64))
    b.node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["ln"], axis=-1, epsilon=1e-5)
    b.node("MatMul", ["ln", "Wa"], ["a"])
    b.node("MatMul", ["ln", "Wb"], ["b_mm"])
    b.node("Add", ["b_mm", "Bb"], ["b"])
    b.node("MatMul", ["a", "b"], ["ab"])
    b.node("Softmax", ["ab"], ["attn"], axis=-1)
    b.node("Gelu", ["attn"], ["act"], domain="com.microsoft")
    b.node("Reshape", ["act", "shape"], ["flat"])
    b.node("MatMul", ["flat", "Wo"], ["y"])
    model = b.model("x", [4, 8], ["y"], opset=17)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 4, 8]).astype(np.float32)

    def run(s):
        ln = layernorm(s, i["ln_scale"], i["ln_bias"], 1e-5)
        attn = softmax((ln @ i["Wa"]) @ (ln @ i["Wb"] + i["Bb"]))
        return gelu(attn).reshape(-1) @ i["Wo"]

    save(out_dir, b, model, x, {"y": per_sample(run, x)}, check=False)


def reduce_squeeze(out_dir):
    """ReduceMean over H, W (keepdims 1 and 0) as global pools, Squeeze, Unsqueeze."""
    b = Builder("reduce_squeeze", 16)
    b.weight("W", [6, 4, 3, 3])
    b.weight("B", [6], 0.1)
    b.weight("W1", [3, 6])
    b.weight("W2", [6, 3])
    b.const("sq_axes", np.array([2, 3], np.int64))
    b.const("us_axes", np.array([1], np.int64))
    b.node("Conv", ["x", "W", "B"], ["conv"], pads=[1, 1, 1, 1])
    b.node("Relu", ["conv"], ["r"])
    b.node("ReduceMean", ["r"], ["gap"], axes=[2, 3], keepdims=1)
    b.node("Squeeze", ["gap", "sq_axes"], ["sq"])
    b.node("Gemm", ["sq", "W1"], ["y1"], transB=1)
    b.node("ReduceMean", ["r"], ["mean"], axes=[-2, -1], keepdims=0)
    b.node("Unsqueeze", ["mean", "us_axes"], ["us"])
    b.node("MatMul", ["us", "W2"], ["y2"])
    model = b.model("x", [4, 5, 5], ["y1", "y2"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 4, 5, 5]).astype(np.float32)

    def mean(s):
        return relu(conv(s, i["W"], i["B"], [1, 1], [1, 1, 1, 1], [1, 1], 1)).mean(axis=(1, 2))

    y1 = per_sample(lambda s: mean(s) @ i["W1"].T, x)
    y2 = per_sample(lambda s: (mean(s) @ i["W2"])[None, :], x)
    save(out_dir, b, model, x, {"y1": y1, "y2": y2})


def aliases(out_dir):
    """Identity / Dropout between a conv and its batch norm, and an Identity as graph output."""
    b = Builder("aliases", 17)
    b.weight("W", [4, 2, 3, 3])
    b.const("bn_scale", b.rng.uniform(0.5, 1.5, 4).astype(np.float32))
    b.const("bn_bias", b.rng.uniform(-0.2, 0.2, 4).astype(np.float32))
    b.const("bn_mean", b.rng.uniform(-0.2, 0.2, 4).astype(np.float32))
    b.const("bn_var", b.rng.uniform(0.5, 2.0, 4).astype(np.float32))
    b.node("Conv", ["x", "W"], ["conv"])
    b.node("Identity", ["conv"], ["conv_id"])
    b.node("BatchNormalization", ["conv_id", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"])
    b.node("Dropout", ["bn"], ["drop"])
    b.node("Relu", ["drop"], ["relu"])
    b.node("Identity", ["relu"], ["y"])
    model = b.model("x", [2, 6, 6], ["y"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 2, 6, 6]).astype(np.float32)
    y = per_sample(lambda s: relu(batchnorm(conv(s, i["W"], None, [1, 1], [0, 0, 0, 0], [1, 1], 1),
                                            i["bn_scale"], i["bn_bias"], i["bn_mean"],
                                            i["bn_var"], 1e-5)), x)
    save(out_dir, b, model, x, {"y": y})


def pad_conv(out_dir):
    """Pad (zeros, as tf2onnx emits for SAME convs) folded into the Conv after it."""
    b = Builder("pad_conv", 19)
    b.weight("W", [5, 3, 3, 3])
    b.weight("B", [5], 0.1)
    b.const("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))
    b.node("Pad", ["x", "pads"], ["padded"])
    b.node("Conv", ["padded", "W", "B"], ["y"], strides=[2, 2], pads=[0, 1, 0, 0])
    model = b.model("x", [3, 7, 7], ["y"])
    x = b.rng.uniform(-1, 1, [1, 3, 7, 7]).astype(np.float32)
    # Pad (top 1, left 2, bottom 2, right 1) then the conv's own (left 1): zero padding of
    # top 1, left 3, bottom 2, right 1 around the input.
    y = per_sample(lambda s: conv(s, b.inits["W"], b.inits["B"], [2, 2], [1, 3, 2, 1], [1, 1],
                                  1), x)
    save(out_dir, b, model, x, {"y": y})


def opset11(out_dir):
    """Opset 11 forms: Squeeze axes as an attribute, Softmax's default axis 1 (all trailing axes),
    Clip bounds as inputs."""
    b = Builder("opset11", 21)
    b.weight("W", [6, 2, 3, 3])
    b.weight("fc_W", [6, 4], 8.0)
    b.const("lo", np.array(-0.2, np.float32))
    b.const("hi", np.array(0.3, np.float32))
    b.node("Conv", ["x", "W"], ["conv"], pads=[1, 1, 1, 1])
    b.node("Clip", ["conv", "lo", "hi"], ["clip"])
    b.node("ReduceMean", ["clip"], ["gap"], axes=[2, 3])
    b.node("Squeeze", ["gap"], ["sq"], axes=[2, 3])
    b.node("Gemm", ["sq", "fc_W"], ["fc"])
    b.node("Softmax", ["fc"], ["y"])
    model = b.model("x", [2, 5, 5], ["y"], opset=11)
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 2, 5, 5]).astype(np.float32)

    def run(s):
        t = np.clip(conv(s, i["W"], None, [1, 1], [1, 1, 1, 1], [1, 1], 1), -0.2, 0.3)
        return softmax(t.mean(axis=(1, 2)) @ i["fc_W"])

    save(out_dir, b, model, x, {"y": per_sample(run, x)})


def flatten_layernorm(out_dir):
    """LayerNormalization over a flattened 3x2x2 map: its per-feature scale and bias are permuted
    like the dense rows after it."""
    b = Builder("flatten_layernorm", 22)
    b.const("ln_scale", b.rng.uniform(0.5, 1.5, 12).astype(np.float32))
    b.const("ln_bias", b.rng.uniform(-0.5, 0.5, 12).astype(np.float32))
    b.weight("W", [12, 5])
    b.node("Flatten", ["x"], ["flat"])
    b.node("LayerNormalization", ["flat", "ln_scale", "ln_bias"], ["ln"])
    b.node("MatMul", ["ln", "W"], ["y"])
    model = b.model("x", [3, 2, 2], ["y"], opset=17)
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 3, 2, 2]).astype(np.float32)
    y = per_sample(lambda s: layernorm(s.reshape(-1), i["ln_scale"], i["ln_bias"], 1e-5) @ i["W"],
                   x)
    save(out_dir, b, model, x, {"y": y})


def attention(out_dir):
    """Single-head attention: softmax(Q K^T) V, with K^T as a Transpose of the last two axes."""
    b = Builder("attention", 23)
    for w in ("Wq", "Wk", "Wv"):
        b.weight(w, [8, 6])
    b.node("MatMul", ["x", "Wq"], ["q"])
    b.node("MatMul", ["x", "Wk"], ["k"])
    b.node("Transpose", ["k"], ["kt"], perm=[0, 2, 1])
    b.node("MatMul", ["q", "kt"], ["scores"])
    b.node("Softmax", ["scores"], ["p"], axis=-1)
    b.node("MatMul", ["x", "Wv"], ["v"])
    b.node("MatMul", ["p", "v"], ["y"])
    model = b.model("x", [5, 8], ["y"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 5, 8]).astype(np.float32)

    def run(s):
        q, k, v = s @ i["Wq"], s @ i["Wk"], s @ i["Wv"]
        return softmax(q @ k.T) @ v

    save(out_dir, b, model, x, {"y": per_sample(run, x)})


def scale_fold(out_dir):
    """Per-channel Mul and Add constants after a Conv (a batch norm as exporters sometimes
    decompose it) and a scalar Mul after a MatMul: folded into weights and biases."""
    b = Builder("scale_fold", 26)
    b.weight("W", [4, 3, 3, 3])
    b.weight("B", [4], 0.1)
    b.const("scale", b.rng.uniform(0.5, 2.0, [4, 1, 1]).astype(np.float32))
    b.const("shift", b.rng.uniform(-0.3, 0.3, [1, 4, 1, 1]).astype(np.float32))
    b.weight("fc_W", [36, 5])
    b.const("half", np.array(0.5, np.float32))
    b.node("Conv", ["x", "W", "B"], ["conv"])
    b.node("Mul", ["conv", "scale"], ["scaled"])
    b.node("Add", ["shift", "scaled"], ["shifted"])
    b.node("Relu", ["shifted"], ["relu"])
    b.node("GlobalAveragePool", ["relu"], ["gap"])
    b.node("Flatten", ["relu"], ["flat"])
    b.node("MatMul", ["flat", "fc_W"], ["fc"])
    b.node("Mul", ["half", "fc"], ["y"])
    model = b.model("x", [3, 5, 5], ["y", "gap"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [1, 3, 5, 5]).astype(np.float32)

    def features(s):
        t = conv(s, i["W"], i["B"], [1, 1], [0, 0, 0, 0], [1, 1], 1)
        return relu(t * i["scale"] + i["shift"][0])

    y = per_sample(lambda s: 0.5 * (features(s).reshape(-1) @ i["fc_W"]), x)
    gap = per_sample(lambda s: features(s).mean(axis=(1, 2), keepdims=True), x)
    save(out_dir, b, model, x, {"y": y, "gap": gap})


def arith_consts(out_dir):
    """Add / Sub / Mul / Div with broadcast constants that fold into nothing (depthwise 1x1 convs):
    per-element and per-feature constants on a (N, rows, features) tensor, a constant minus the
    tensor, a scalar divisor; and Sub of two tensors."""
    b = Builder("arith_consts", 27)
    b.const("full", b.rng.uniform(-1, 1, [4, 6]).astype(np.float32))
    b.const("feat", b.rng.uniform(0.5, 2.0, [6]).astype(np.float32))
    b.const("row", b.rng.uniform(-1, 1, [1, 4, 1]).astype(np.float32))
    b.const("three", np.array(3.0, np.float32))
    b.node("Sub", ["x", "full"], ["a"])
    b.node("Mul", ["feat", "a"], ["m"])
    b.node("Sub", ["row", "m"], ["s"])
    b.node("Div", ["s", "three"], ["y"])
    b.node("Sub", ["s", "x"], ["d"])
    model = b.model("x", [4, 6], ["y", "d"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 4, 6]).astype(np.float32)
    s = i["row"] - i["feat"] * (x - i["full"])
    save(out_dir, b, model, x, {"y": s / 3.0, "d": s - x})


def bn_alone(out_dir):
    """A BatchNormalization with no Conv to fold into (after a Relu): a depthwise 1x1 conv; an Erf
    outside the GELU pattern."""
    b = Builder("bn_alone", 28)
    for k, lo, hi in (("scale", 0.5, 2.0), ("bias", -0.5, 0.5), ("mean", -0.2, 0.2),
                      ("var", 0.5, 1.5)):
        b.const("bn_" + k, b.rng.uniform(lo, hi, [3]).astype(np.float32))
    b.node("Relu", ["x"], ["r"])
    b.node("BatchNormalization", ["r", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["y"],
           epsilon=1e-3)
    b.node("Erf", ["y"], ["e"])
    model = b.model("x", [3, 5, 5], ["y", "e"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 5, 5]).astype(np.float32)
    y = per_sample(lambda s: batchnorm(relu(s), i["bn_scale"], i["bn_bias"], i["bn_mean"],
                                       i["bn_var"], 1e-3), x)
    erf = np.vectorize(math.erf)
    save(out_dir, b, model, x, {"y": y, "e": erf(y).astype(np.float32)})


def whole_tensor(out_dir):
    """docs/onnx.md "Rank mapping": a constant that differs along axis 0 and an opset-11 Softmax
    over every axis (axis 0) make the importer run the (3, 4) input as one whole tensor."""
    b = Builder("whole_tensor", 29)
    b.const("c", b.rng.uniform(-1, 1, [3, 4]).astype(np.float32))
    b.node("Add", ["x", "c"], ["a"])
    b.node("Softmax", ["a"], ["y"], axis=0)
    model = b.model("x", [4], ["y"], opset=11, batch_dim=3)
    x = b.rng.uniform(-2, 2, [3, 4]).astype(np.float32)
    y = softmax((x + b.inits["c"]).reshape(1, -1)).reshape(3, 4)
    save(out_dir, b, model, x, {"y": y})


def rank1(out_dir):
    """A rank-1 input (5,): Mul by a per-element constant, Sub from a scalar, Clip."""
    b = Builder("rank1", 30)
    b.const("c", b.rng.uniform(0.5, 2.0, [5]).astype(np.float32))
    b.const("one", np.array([1.0], np.float32))
    b.const("lo", np.array(-1.5, np.float32))
    b.const("hi", np.array(1.0, np.float32))
    b.node("Mul", ["x", "c"], ["m"])
    b.node("Sub", ["one", "m"], ["s"])
    b.node("Clip", ["s", "lo", "hi"], ["y"])
    model = b.model("x", [], ["y"], batch_dim=5)
    x = b.rng.uniform(-1, 1, [5]).astype(np.float32)
    y = np.clip(1.0 - x * b.inits["c"], -1.5, 1.0)
    save(out_dir, b, model, x, {"y": y})


def reduce_rows(out_dir):
    """ReduceMean of a (N, rows, features) tensor over the features (keepdims 0) and over the
    rows (keepdims 1), and a Gemm whose bias C is a (1, units) row."""
    b = Builder("reduce_rows", 31)
    b.weight("W", [5, 3])
    b.const("C", b.rng.uniform(-0.5, 0.5, [1, 3]).astype(np.float32))
    b.node("ReduceMean", ["x"], ["feat_mean"], axes=[-1], keepdims=0)
    b.node("ReduceMean", ["x"], ["row_mean"], axes=[1], keepdims=1)
    b.node("Squeeze", ["row_mean"], ["rows"], axes=[1])
    b.node("Gemm", ["rows", "W", "C"], ["y"], alpha=0.5, beta=2.0)
    model = b.model("x", [4, 5], ["feat_mean", "y"], opset=12)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 4, 5]).astype(np.float32)
    feat_mean = x.mean(axis=-1)
    y = 0.5 * (x.mean(axis=1) @ i["W"]) + 2.0 * i["C"]
    save(out_dir, b, model, x, {"feat_mean": feat_mean, "y": y})


def layernorm_axes(out_dir):
    """LayerNormalization (opset 17) over the last two axes of a (N, rows, features) tensor, with
    a scale that broadcasts (one value per feature) and a full bias."""
    b = Builder("layernorm_axes", 33)
    b.const("scale", b.rng.uniform(0.5, 1.5, [5]).astype(np.float32))
    b.const("bias", b.rng.uniform(-0.5, 0.5, [4, 5]).astype(np.float32))
    b.node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=1, epsilon=1e-4)
    model = b.model("x", [4, 5], ["y"], opset=17)
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 4, 5]).astype(np.float32)
    flat = x.reshape(2, 20)
    mean = flat.mean(axis=1, keepdims=True)
    var = flat.var(axis=1, keepdims=True)
    y = ((flat - mean) / np.sqrt(var + 1e-4)).reshape(2, 4, 5) * i["scale"] + i["bias"]
    save(out_dir, b, model, x, {"y": y})


def rms_norm(out_dir):
    """RMSNorm in the two compositions torch exports (opset 17): a module's
    x * rsqrt(mean(x^2) + eps) * w (Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul by the weight)
    and Hugging Face's LlamaRMSNorm (casts to float, Mul(x, x), Reciprocal, the weight first).
    npusim imports each as one layer norm without the mean (docs/onnx.md)."""
    b = Builder("rms_norm", 47)
    b.const("two", np.array(2.0, np.float32))
    b.const("eps", np.array(1e-6, np.float32))
    b.const("one", np.array(1.0, np.float32))
    b.const("w1", b.rng.uniform(0.5, 1.5, [8]).astype(np.float32))
    b.const("w2", b.rng.uniform(0.5, 1.5, [8]).astype(np.float32))
    b.node("Pow", ["x", "two"], ["sq1"])
    b.node("ReduceMean", ["sq1"], ["ms1"], axes=[-1], keepdims=1)
    b.node("Add", ["ms1", "eps"], ["ms1_eps"])
    b.node("Sqrt", ["ms1_eps"], ["rms1"])
    b.node("Div", ["one", "rms1"], ["inv1"])
    b.node("Mul", ["x", "inv1"], ["n1"])
    b.node("Mul", ["n1", "w1"], ["y1"])
    b.node("Cast", ["x"], ["xf"], to=onnx.TensorProto.FLOAT)
    b.node("Mul", ["xf", "xf"], ["sq2"])
    b.node("ReduceMean", ["sq2"], ["ms2"], axes=[-1], keepdims=1)
    b.node("Add", ["eps", "ms2"], ["ms2_eps"])
    b.node("Sqrt", ["ms2_eps"], ["rms2"])
    b.node("Reciprocal", ["rms2"], ["inv2"])
    b.node("Mul", ["inv2", "xf"], ["n2f"])
    b.node("Cast", ["n2f"], ["n2"], to=onnx.TensorProto.FLOAT)
    b.node("Mul", ["w2", "n2"], ["y2"])
    model = b.model("x", [4, 8], ["y1", "y2"], opset=17)
    i = b.inits
    x = b.rng.uniform(-2, 2, [2, 4, 8]).astype(np.float32)
    inv = 1.0 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6)
    save(out_dir, b, model, x, {"y1": x * inv * i["w1"], "y2": x * inv * i["w2"]})


def matmul_ranks(out_dir):
    """MatMul of a (N, rows, K) tensor by a vector (K,) and by a (1, K, M) matrix."""
    b = Builder("matmul_ranks", 34)
    b.weight("v", [4])
    b.weight("B", [1, 4, 2])
    b.node("MatMul", ["x", "v"], ["y1"])
    b.node("MatMul", ["x", "B"], ["y2"])
    model = b.model("x", [3, 4], ["y1", "y2"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 4]).astype(np.float32)
    save(out_dir, b, model, x, {"y1": x @ i["v"], "y2": x @ i["B"]})


def bn_rows(out_dir):
    """BatchNormalization of a (N, C, L) tensor (channel axis 1, not the last): a depthwise 1x1
    conv with one channel per (c, l) position."""
    b = Builder("bn_rows", 35)
    for k, lo, hi in (("scale", 0.5, 2.0), ("bias", -0.5, 0.5), ("mean", -0.2, 0.2),
                      ("var", 0.5, 1.5)):
        b.const("bn_" + k, b.rng.uniform(lo, hi, [3]).astype(np.float32))
    b.node("BatchNormalization", ["x", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["y"])
    model = b.model("x", [3, 5], ["y"])
    i = b.inits
    x = b.rng.uniform(-1, 1, [2, 3, 5]).astype(np.float32)
    y = batchnorm(x.transpose(1, 0, 2), i["bn_scale"], i["bn_bias"], i["bn_mean"], i["bn_var"],
                  1e-5).transpose(1, 0, 2)
    save(out_dir, b, model, x, {"y": y})


def gemm_row_bias(out_dir):
    """A Gemm whose bias C differs per row (M, N) on a fixed (3, 6) input: whole-tensor mode, the
    bias added after the product by a depthwise 1x1 conv."""
    b = Builder("gemm_row_bias", 32)
    b.weight("W", [4, 6])
    b.const("C", b.rng.uniform(-1, 1, [3, 4]).astype(np.float32))
    b.node("Gemm", ["x", "W", "C"], ["y"], transB=1, beta=0.5)
    model = b.model("x", [6], ["y"], batch_dim=3)
    i = b.inits
    x = b.rng.uniform(-1, 1, [3, 6]).astype(np.float32)
    y = x @ i["W"].T + 0.5 * i["C"]
    save(out_dir, b, model, x, {"y": y})


# ---------------------------------------------------------------- bad inputs

def bad_ops(out_dir):
    """Two problems to be reported together; the Relu after the failed TopK stays quiet."""
    b = Builder("bad_ops", 10)
    b.const("k", np.array([2], np.int64))
    b.node("TopK", ["x", "k"], ["r", "r_idx"], name="topk_1")
    b.node("Relu", ["r"], ["rr"], name="relu_after_topk")
    b.node("Concat", ["x", "x"], ["c"], name="cat_n", axis=0)
    model = b.model("x", [3, 8, 8], ["rr", "c"], batch_dim="N")
    save(out_dir, b, model, None, {}, check=False)


def bad_softmax_axis(out_dir):
    b = Builder("bad_softmax_axis", 11)
    b.node("Softmax", ["x"], ["y"], name="softmax_rows", axis=3)
    model = b.model("x", [4, 8], ["y"])
    save(out_dir, b, model, None, {}, check=False)


def bad_reshape(out_dir):
    """Shapes computed at run time: a Shape node, and a Reshape whose shape is an activation."""
    b = Builder("bad_reshape", 12)
    b.node("Shape", ["x"], ["s"], name="shape_of_x")
    b.node("Reshape", ["x", "s"], ["y"], name="reshape_from_shape")
    b.node("Relu", ["x"], ["relu_x"], name="relu_x")
    b.node("Reshape", ["x", "relu_x"], ["z"], name="reshape_dyn")
    model = b.model("x", [3, 4, 4], ["y", "z"])
    save(out_dir, b, model, None, {}, check=False)


def bad_misc(out_dir):
    """Five problems at once, one in an unnamed node."""
    b = Builder("bad_misc", 13)
    b.const("two", np.array(2.0, np.float32))
    b.nodes.append(helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 1, 2]))
    b.node("Div", ["x", "x"], ["diff"], name="div_two_tensors")
    b.node("Div", ["two", "x"], ["inverse"], name="two_over_x")
    b.node("GlobalAveragePool", ["x"], ["gap"])
    b.node("Add", ["x", "gap"], ["sum"], name="add_broadcast")
    b.node("Gather", ["x", "x"], ["gathered"], name="gather_dyn", axis=1)
    model = b.model("x", [3, 4, 4], ["t", "diff", "inverse", "sum", "gathered"])
    save(out_dir, b, model, None, {}, check=False)


def bad_axis0_conv(out_dir):
    """A constant that differs along axis 0 after a 3-D Conv: the whole-tensor mode cannot run
    the Conv on a batch of 2, so the batched import's message stands."""
    b = Builder("bad_axis0_conv", 16)
    b.weight("W", [2, 3, 1, 1, 1])
    b.const("per_sample", np.ones([2, 2, 2, 4, 4], np.float32))
    b.node("Conv", ["x", "W"], ["conv"])
    b.node("Add", ["conv", "per_sample"], ["y"], name="add_per_sample")
    model = b.model("x", [3, 2, 4, 4], ["y"], batch_dim=2)
    save(out_dir, b, model, None, {}, check=False)


def bad_input_dims(out_dir):
    b = Builder("bad_input_dims", 14)
    b.node("Relu", ["x"], ["y"])
    model = b.model("x", [3, "height", 8], ["y"])
    save(out_dir, b, model, None, {}, check=False)


def bad_opset(out_dir):
    """Relu is defined the same way since opset 6, Pad is not (its pads became an input in 11)."""
    b = Builder("bad_opset", 15)
    b.node("Relu", ["x"], ["r"])
    b.node("Pad", ["r"], ["y"], pads=[0, 1, 0, 1])
    model = b.model("x", [8], ["y"], opset=9)
    save(out_dir, b, model, None, {}, check=False)


def bad_bn_shared(out_dir):
    """The conv output reaches a batch norm through an Identity and a Relu directly."""
    b = Builder("bad_bn_shared", 18)
    b.weight("W", [4, 2, 3, 3])
    for k in ("scale", "bias", "mean", "var"):
        b.const("bn_" + k, np.ones(4, np.float32))
    b.node("Conv", ["x", "W"], ["conv"])
    b.node("Identity", ["conv"], ["conv_id"])
    b.node("BatchNormalization", ["conv_id", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"],
           name="bn_shared")
    b.node("Relu", ["conv"], ["relu"])
    model = b.model("x", [2, 6, 6], ["bn", "relu"])
    save(out_dir, b, model, None, {}, check=False)


def bad_pad(out_dir):
    """Padding of the batch axis, and an unknown mode."""
    b = Builder("bad_pad", 20)
    b.const("pads", np.array([1, 0, 1, 1, 0, 0, 1, 1], np.int64))
    b.node("Pad", ["x", "pads"], ["padded"], name="pad_batch")
    b.node("Relu", ["padded"], ["y"], name="relu_of_pad")
    b.node("Pad", ["x", "pads"], ["wrapped"], name="pad_wrap", mode="wrap")
    model = b.model("x", [3, 4, 4], ["y", "wrapped"], batch_dim="N")
    save(out_dir, b, model, None, {}, check=False)


def bad_transpose(out_dir):
    """A perm that is not a permutation, and a Slice of the batch."""
    b = Builder("bad_transpose", 24)
    b.node("Transpose", ["x"], ["xt"], name="transpose_twice", perm=[0, 2, 2])
    b.node("Relu", ["xt"], ["r"], name="relu_of_transpose")
    b.const("starts", np.array([1], np.int64))
    b.const("ends", np.array([2], np.int64))
    b.const("axes", np.array([0], np.int64))
    b.node("Slice", ["x", "starts", "ends", "axes"], ["m"], name="slice_batch")
    model = b.model("x", [4, 4], ["r", "m"], batch_dim="N")
    save(out_dir, b, model, None, {}, check=False)


def bad_external(out_dir):
    """Weights saved in a separate file (onnx.save with save_as_external_data)."""
    b = Builder("bad_external", 25)
    b.weight("W", [4, 3, 3, 3])
    b.node("Conv", ["x", "W"], ["y"])
    model = b.model("x", [3, 6, 6], ["y"])
    onnx.save(model, os.path.join(out_dir, "bad_external.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="bad_external.weights", size_threshold=0)


def corrupt(out_dir):
    with open(os.path.join(out_dir, "corrupt_text.onnx"), "wb") as f:
        f.write(b"this is not an ONNX model\n\xff\xff\xff\xff")
    with open(os.path.join(out_dir, "cnn.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(out_dir, "corrupt_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for build in (cnn, mlp, flatten_dense, conv_grouped, conv_depthwise, conv3d, pools,
                  activations, sequence, reduce_squeeze, aliases, pad_conv, opset11,
                  flatten_layernorm, attention, scale_fold, arith_consts, bn_alone,
                  whole_tensor, rank1, reduce_rows, gemm_row_bias, layernorm_axes, matmul_ranks,
                  bn_rows, rms_norm,
                  bad_ops, bad_softmax_axis, bad_reshape, bad_misc, bad_input_dims,
                  bad_opset, bad_bn_shared, bad_axis0_conv, bad_pad, bad_transpose,
                  bad_external, corrupt):
        build(out_dir)


if __name__ == "__main__":
    main()
