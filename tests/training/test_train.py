"""`npusim train` against the independent numpy references from the same saved initial weights and
the same batches of the bundled digits: the zoo's mnist-cnn (Keras' MNIST CNN) against
numpy_cnn.py, batch 16, one SGD step; workloads/training/digits-mlp.json against numpy_mlp.py,
batch 64: one SGD step moves every parameter the same way (cosine >= 0.999; the
difference is the bf16 rounding of the weights the step's matrix products read, about 0.9998 here)
and a few Adam steps give the same losses (within 2 %). Bad input is refused with exit code 2."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import numpy_cnn  # noqa: E402
import numpy_mlp  # noqa: E402
import train_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPUSIM = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
WORKLOAD = os.path.join(ROOT, "workloads", "training", "digits-mlp.json")
HW = "tpu-v4-like-core"
# An average pool that is not global: no backward rule yet.
AVERAGE_POOL = {
    "schema_version": 1, "name": "average", "batch": 1,
    "input": {"name": "x", "shape": [9, 9, 1], "dtype": "int8", "layout": "NHWC"},
    "layers": [{"name": "conv", "op": "conv2d", "filters": 2, "kernel": [1, 1],
                "activation": "relu"},
               {"name": "pool", "op": "avgpool", "pool": [3, 3], "strides": [2, 2]},
               {"name": "flatten", "op": "flatten"},
               {"name": "fc", "op": "dense", "units": 4},
               {"name": "probs", "op": "softmax"}],
    "outputs": ["probs"]}


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    out = tmp_path_factory.mktemp("digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    # The training part alone: no held-out evaluation after the last step (test time).
    train_only = out / "train_only"
    train_only.mkdir()
    for name in ("x.npy", "y.npy"):
        os.symlink(out / name, train_only / name)
    return str(train_only)


def train(tmp, data, *args):
    return train_cli.train(NPUSIM, tmp, "--hw", HW, "--workload", WORKLOAD, "--data", data, *args)


def train_cnn(tmp, data, *args):
    """The zoo's mnist-cnn: the parameters in numpy_cnn.py's names."""
    return train_cli.train(NPUSIM, tmp, "--hw", HW, "--workload", "mnist-cnn", "--data", data,
                           *args, load=numpy_cnn.load_parameters)


def load_xy(data):
    return np.load(os.path.join(data, "x.npy")), np.load(os.path.join(data, "y.npy"))


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_one_sgd_step_moves_every_parameter_as_numpy(tmp_path, digits):
    stats, initial, final = train(str(tmp_path), digits, "--batch", "64", "--steps", "1",
                                  "--optimizer", "sgd", "--lr", "0.1")
    x, y = load_xy(digits)
    loss, grads = numpy_mlp.loss_and_gradients(initial, x[:64], y[:64])
    for name, g in grads.items():
        change = final[name] - initial[name]
        assert cosine(change, -0.1 * g) >= 0.999, name
        # The same size of step, not only the same direction.
        assert np.linalg.norm(change) == pytest.approx(0.1 * np.linalg.norm(g), rel=0.01), name
    assert stats["training"]["loss"][0] == pytest.approx(loss, rel=0.01)
    first = stats["first_step"]["functional_check"]
    assert first["checked"] and first["within_tolerance"]


def test_one_sgd_step_of_the_keras_cnn_moves_every_parameter_as_numpy(tmp_path, digits):
    stats, initial, final = train_cnn(str(tmp_path), digits, "--batch", "16", "--steps", "1",
                                      "--optimizer", "sgd", "--lr", "0.1")
    x, y = load_xy(digits)
    loss, grads = numpy_cnn.loss_and_gradients(initial, x[:16], y[:16])
    for name, g in grads.items():
        change = final[name] - initial[name]
        assert cosine(change, -0.1 * g) >= 0.999, name
        assert np.linalg.norm(change) == pytest.approx(0.1 * np.linalg.norm(g), rel=0.01), name
    assert stats["training"]["loss"][0] == pytest.approx(loss, rel=0.01)
    assert stats["first_step"]["functional_check"]["within_tolerance"]


@pytest.mark.parametrize("optimizer, lr, state", [("adam", 0.001, 2), ("momentum", 0.05, 1)])
def test_optimizer_steps_give_numpy_losses(tmp_path, digits, optimizer, lr, state):
    stats, initial, final = train(str(tmp_path), digits, "--batch", "64", "--steps", "4",
                                  "--optimizer", optimizer, "--lr", str(lr))
    x, y = load_xy(digits)
    params, losses, _ = numpy_mlp.train(dict(initial), x, y, None, None, 4, 64,
                                        numpy_cnn.Optimizer(optimizer, lr))
    assert stats["training"]["loss"] == pytest.approx(losses, rel=0.02)
    for name in params:
        assert cosine(final[name] - initial[name], params[name] - initial[name]) >= 0.99, name
    t = stats["training"]
    assert t["step_cycles"] == pytest.approx(t["forward_cycles"] + t["backward_cycles"] +
                                             t["optimizer_cycles"])
    assert t["offchip"]["optimizer_state_bytes"] == state * t["offchip"]["master_weight_bytes"]


@pytest.mark.parametrize("args, message", [
    (["--dtype", "int8"], "--dtype int8: training runs bf16"),
    (["--optimizer", "rmsprop"], "--optimizer 'rmsprop': expected sgd, momentum or adam"),
    (["--workload=lenet5"],
     "--workload 'lenet5': layer 'c1': training has no backward rule for its fused activation "
     "'tanh'"),
    (["--workload=AVERAGE"], "layer 'pool' (avgpool): training has no backward rule for "
     "average pooling other than global"),
    # A workload that is no classifier trains with the mean squared error (--loss auto), not xent.
    (["--workload=mlp-1000", "--loss", "xent"], "--loss xent needs a classifier whose one output "
     "is a final softmax"),
])
def test_bad_input_exits_2(tmp_path, args, message):
    graph = tmp_path / "average.json"
    graph.write_text(json.dumps(AVERAGE_POOL))
    args = [a.replace("AVERAGE", str(graph)) for a in args]
    workload = [] if any(a.startswith("--workload") for a in args) else ["--workload", WORKLOAD]
    cmd = [NPUSIM, "train", "--hw", HW, *workload, "--steps", "1", "--batch", "4",
           "--out", str(tmp_path / "out"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
