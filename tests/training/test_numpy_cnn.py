"""Checks the numpy training reference (numpy_cnn.py) against torch's autograd and optimizers, and
that it learns the bundled digits (scripts/digits_dataset.py): the independent side of issue 23's
agreement test must itself be right."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import numpy_cnn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def torch_model_loss(params, x, y):
    """The same network in torch (NCHW inside, flattened in NHWC order as the zoo model does)."""
    xt = torch.from_numpy(x).permute(0, 3, 1, 2)
    conv = torch.nn.functional.conv2d(xt, params["conv1.weight"], params["conv1.bias"])
    pooled = torch.nn.functional.max_pool2d(torch.relu(conv), 2)
    flat = pooled.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
    h = torch.relu(flat @ params["fc1.weight"].T + params["fc1.bias"])
    logits = h @ params["fc2.weight"].T + params["fc2.bias"]
    return torch.nn.functional.cross_entropy(logits, torch.from_numpy(y))


def random_batch(n=8, size=28, seed=1):
    rng = np.random.default_rng(seed)
    return rng.random((n, size, size, 1), dtype=np.float32), rng.integers(0, 10, n)


def test_loss_and_gradients_equal_torch_autograd():
    params = numpy_cnn.initial_parameters(3)
    x, y = random_batch()
    loss, grads = numpy_cnn.loss_and_gradients(params, x, y)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tl = torch_model_loss(tp, x, y)
    tl.backward()
    assert loss == pytest.approx(tl.item(), rel=1e-5)
    for k, g in grads.items():
        ref = tp[k].grad.numpy()
        assert g.shape == ref.shape, k
        err = np.abs(g - ref).max() / max(np.abs(ref).max(), 1e-12)
        assert err < 1e-4, f"{k}: max error {err:.2e} of the gradient's range"


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_optimizer_steps_equal_torch_optim(kind):
    params = numpy_cnn.initial_parameters(5)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    lr = 1e-2 if kind != "adam" else 1e-3
    if kind == "adam":
        topt = torch.optim.Adam(tp.values(), lr=lr, eps=1e-7)
    else:
        topt = torch.optim.SGD(tp.values(), lr=lr, momentum=0.9 if kind == "momentum" else 0)
    opt = numpy_cnn.Optimizer(kind, lr)
    for step in range(3):
        x, y = random_batch(seed=10 + step)
        _, grads = numpy_cnn.loss_and_gradients(params, x, y)
        params = opt.step(params, grads)
        topt.zero_grad()
        torch_model_loss(tp, x, y).backward()
        topt.step()
    for k, v in params.items():
        ref = tp[k].detach().numpy()
        assert np.abs(v - ref).max() < 1e-5, f"{kind} {k}"


def test_bf16_rounding_equals_torch_bfloat16():
    """numpy_cnn.bf16 (the mixed-precision variant's rounding of matrix inputs) is torch's
    float32 -> bfloat16 conversion: nearest, ties to even."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(10000).astype(np.float32) * 10.0 ** rng.integers(
        -20, 20, 10000), np.float32([0.0, -0.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 65504.0])])
    ref = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
    assert np.array_equal(numpy_cnn.bf16(x), ref)


@pytest.mark.parametrize("mode", ["bf16", "bf16-stored"])
def test_bf16_variants_change_the_gradients_little(mode):
    """The bf16 variants are the same step: gradients within bf16's rounding of float32's."""
    params = numpy_cnn.initial_parameters(3)
    x, y = random_batch()
    loss, grads = numpy_cnn.loss_and_gradients(params, x, y)
    loss16, grads16 = numpy_cnn.loss_and_gradients(params, x, y, matrix_inputs=mode)
    assert loss16 == pytest.approx(loss, rel=1e-2) and loss16 != loss
    for k, g in grads.items():
        a, b = g.astype(np.float64).ravel(), grads16[k].astype(np.float64).ravel()
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.99, k
        assert not np.array_equal(a, b), k


def test_batches_in_file_order_wrap_around():
    got = [list(b) for b in numpy_cnn.batches(5, 2, 4)]
    assert got == [[0, 1], [2, 3], [4, 0], [1, 2]]


def test_adam_learns_the_digits(tmp_path):
    """The seed workload of issue 23: 200 Adam steps of batch 64 (lr 1e-3) on the digits upscaled
    to 28x28 reach >= 90 % held-out accuracy."""
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"),
                    str(tmp_path)], check=True, capture_output=True)
    x = np.load(tmp_path / "x.npy")
    y = np.load(tmp_path / "y.npy")
    assert x.shape == (1500, 28, 28, 1) and x.dtype == np.float32
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(np.unique(y)) == set(range(10))
    xh = np.load(tmp_path / "heldout" / "x.npy")
    yh = np.load(tmp_path / "heldout" / "y.npy")
    params = numpy_cnn.initial_parameters(0)
    _, losses, evals = numpy_cnn.train(params, x, y, xh, yh, 200, 64,
                                       numpy_cnn.Optimizer("adam", 1e-3))
    assert losses[-1] < 0.5 * losses[0]
    assert evals[-1]["accuracy"] >= 0.90, evals
