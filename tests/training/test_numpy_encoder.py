"""numpy_encoder.py, the independent float32 numpy training step of a BERT encoder layer with the
mean squared error, against torch's autograd in float64: the loss and every parameter's gradient
(within 1e-4 of the largest gradient of that parameter; key.bias's, which is exactly 0, within
1e-7 of the largest gradient of all)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import numpy_encoder  # noqa: E402

HEADS = 2


def test_numpy_encoder_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    h, ffn = 32, 64
    p = {}
    for name, (o, i) in {"query": (h, h), "key": (h, h), "value": (h, h),
                         "attention_output": (h, h), "intermediate": (ffn, h),
                         "output": (h, ffn)}.items():
        p[f"{name}.weight"] = rng.normal(0, 0.2, (o, i)).astype(np.float32)
        p[f"{name}.bias"] = rng.normal(0, 0.1, o).astype(np.float32)
    for name in numpy_encoder.NORMS:
        p[f"{name}.weight"] = rng.normal(1, 0.2, h).astype(np.float32)
        p[f"{name}.bias"] = rng.normal(0, 0.1, h).astype(np.float32)
    x = rng.normal(0, 1, (3, 8, h)).astype(np.float32)
    t = rng.normal(0, 1, (3, 8, h)).astype(np.float32)
    loss, grads = numpy_encoder.loss_and_gradients(p, x, t, HEADS)

    tp = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.items()}
    tx = torch.tensor(x, dtype=torch.float64)

    def lin(name, v):
        return torch.nn.functional.linear(v, tp[f"{name}.weight"], tp[f"{name}.bias"])

    def norm(name, v):
        return torch.nn.functional.layer_norm(v, (h,), tp[f"{name}.weight"], tp[f"{name}.bias"],
                                              numpy_encoder.EPSILON)

    def heads(v):
        return v.reshape(3, 8, HEADS, h // HEADS).permute(0, 2, 1, 3)

    q, k, v = heads(lin("query", tx)), heads(lin("key", tx)), heads(lin("value", tx))
    probs = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
    ctx = (probs @ v).permute(0, 2, 1, 3).reshape(3, 8, h)
    n1 = norm("attention_norm", lin("attention_output", ctx) + tx)
    y = norm("output_norm", lin("output", torch.nn.functional.gelu(lin("intermediate", n1))) + n1)
    tl = torch.mean((y - torch.tensor(t, dtype=torch.float64)) ** 2)
    tl.backward()
    assert loss == pytest.approx(tl.item(), rel=1e-5)
    scale = max(np.max(np.abs(tp[name].grad.numpy())) for name in grads)
    for name, g in grads.items():
        ref = tp[name].grad.numpy()
        # key.bias's gradient is 0: q . (k + b) adds the same q . b to every score of a row.
        assert np.max(np.abs(g - ref)) <= 1e-4 * max(np.max(np.abs(ref)), 1e-3 * scale), name
