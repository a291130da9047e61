"""`npusim train` of a transformer encoder layer (workloads/training/tiny-encoder.json, the
structure of the zoo's bert-encoder at small width) with the mean squared error, against the
independent numpy float32 implementation numpy_encoder.py (itself checked against torch's
autograd in test_numpy_encoder.py): from the same saved initial weights and the same batch, one
SGD step moves every parameter the same way (cosine >= 0.999, the same step size within 2 %;
key.bias, whose gradient is 0, by less than 1e-3 of the largest step) and the loss agrees within
1 %. The mean squared error alone on a small regression MLP, the refusals (exit 2), and the
encoder's timing-only step (--values off) against the step with values."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import numpy_encoder  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPUSIM = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
ENCODER = os.path.join(ROOT, "workloads", "training", "tiny-encoder.json")
DIGITS_MLP = os.path.join(ROOT, "workloads", "training", "digits-mlp.json")
HW = "tpu-v4-like-core"
HEADS = 2
REGRESSION_MLP = {
    "schema_version": 1, "name": "regression-mlp", "batch": 1,
    "input": {"name": "x", "shape": [12], "dtype": "int8", "layout": "NHWC"},
    "layers": [{"name": "fc1", "op": "dense", "units": 16, "activation": "relu"},
               {"name": "fc2", "op": "dense", "units": 3}],
    "outputs": ["fc2"]}


def bf16(a):
    """float32 values rounded to the nearest bf16 (ties to even), as float32."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def write_data(directory, x, y):
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"), x.astype(np.float32))
    np.save(os.path.join(directory, "y.npy"), y)
    return directory


def train(tmp, workload, data, *args):
    out, weights = os.path.join(tmp, "out"), os.path.join(tmp, "weights")
    cmd = [NPUSIM, "train", "--hw", HW, "--workload", workload, "--data", data, "--save-weights",
           weights, "--out", out, *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f), os.path.join(weights, "initial"), os.path.join(weights, "final")


def load(directory):
    return {f[:-4]: np.load(os.path.join(directory, f)) for f in os.listdir(directory)}


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_one_sgd_step_of_the_encoder_moves_every_parameter_as_numpy(tmp_path):
    rng = np.random.default_rng(0)
    x, y = bf16(rng.normal(0, 1, (4, 8, 32))), bf16(rng.normal(0, 1, (4, 8, 32)))
    data = write_data(str(tmp_path / "data"), x, y.astype(np.float32))
    stats, initial_dir, final_dir = train(str(tmp_path), ENCODER, data, "--batch", "4",
                                          "--steps", "1", "--optimizer", "sgd", "--lr", "0.1")
    assert stats["training"]["loss_function"] == "mse"
    initial, final = load(initial_dir), load(final_dir)
    assert sorted(initial) == sorted(f"{n}.{k}" for n in numpy_encoder.DENSE + numpy_encoder.NORMS
                                     for k in ("weight", "bias"))
    loss, grads = numpy_encoder.loss_and_gradients(initial, x, y, HEADS)
    largest = max(np.linalg.norm(g) for g in grads.values())
    for name, g in grads.items():
        change = final[name] - initial[name]
        if name == "key.bias":  # its gradient is 0 (softmax ignores a row's common shift)
            assert np.linalg.norm(change) <= 1e-3 * 0.1 * largest
            continue
        assert cosine(change, -0.1 * g) >= 0.999, name
        assert np.linalg.norm(change) == pytest.approx(0.1 * np.linalg.norm(g), rel=0.02), name
    assert stats["training"]["loss"][0] == pytest.approx(loss, rel=0.01)
    first = stats["first_step"]["functional_check"]
    assert first["checked"] and first["within_tolerance"]


def test_mean_squared_error_of_a_regression_mlp_as_numpy(tmp_path):
    workload = tmp_path / "regression.json"
    workload.write_text(json.dumps(REGRESSION_MLP))
    rng = np.random.default_rng(1)
    x, y = bf16(rng.uniform(-1, 1, (16, 12))), rng.normal(0, 1, (16, 3)).astype(np.float32)
    data = write_data(str(tmp_path / "data"), x, y)
    stats, initial_dir, final_dir = train(str(tmp_path), str(workload), data, "--batch", "16",
                                          "--loss", "mse", "--optimizer", "sgd", "--lr", "0.1")
    p, final = load(initial_dir), load(final_dir)
    h = x @ p["fc1.weight"].T + p["fc1.bias"]
    a = np.maximum(h, 0)
    out = a @ p["fc2.weight"].T + p["fc2.bias"]
    d = 2.0 * (out - y) / out.size
    dh = (d @ p["fc2.weight"]) * (h > 0)
    grads = {"fc2.weight": d.T @ a, "fc2.bias": d.sum(0), "fc1.weight": dh.T @ x,
             "fc1.bias": dh.sum(0)}
    for name, g in grads.items():
        assert cosine(final[name] - p[name], -0.1 * g) >= 0.999, name
    assert stats["training"]["loss"][0] == pytest.approx(float(np.mean((out - y) ** 2)), rel=0.01)


@pytest.mark.parametrize("workload,loss,labels,message", [
    (ENCODER, "xent", False, "--loss xent needs a classifier"),
    (DIGITS_MLP, "mse", True, "--loss mse: the workload's output is a final softmax"),
    (ENCODER, "mse", True, "expected float targets [4, ...] with 256 values per sample"),
    (ENCODER, "hinge", False, "--loss 'hinge': expected xent, mse or auto"),
])
def test_loss_mismatches_exit_2(tmp_path, workload, loss, labels, message):
    shape = (4, 28, 28, 1) if workload == DIGITS_MLP else (4, 8, 32)
    y = np.zeros(4, np.int64) if labels else np.zeros((4, 8, 32), np.float32)
    data = write_data(str(tmp_path / "data"), np.zeros(shape, np.float32), y)
    cmd = [NPUSIM, "train", "--hw", HW, "--workload", workload, "--data", data, "--loss", loss,
           "--batch", "4"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_timing_only_encoder_step_equals_the_step_with_values(tmp_path):
    """--values off (the bert-encoder scaling table's mode) on the encoder's rules, data parallel
    on both TensorCores: the same cycles, phases and energy as the step with values."""
    rng = np.random.default_rng(2)
    data = write_data(str(tmp_path / "data"), bf16(rng.normal(0, 1, (8, 8, 32))),
                      rng.normal(0, 1, (8, 8, 32)).astype(np.float32))
    stats = {}
    for values, extra in (("on", ["--data", data]), ("off", [])):
        out = str(tmp_path / values)
        cmd = [NPUSIM, "train", "--hw", "tpu-v4-like", "--workload", ENCODER, "--batch", "8",
               "--values", values, "--out", out, *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(os.path.join(out, "stats.json")) as f:
            stats[values] = json.load(f)["training"]
    assert stats["off"]["cores"] == 2
    for key in ("step_cycles", "forward_cycles", "backward_cycles", "communication_cycles",
                "optimizer_cycles", "energy_per_step_j", "parameters"):
        assert stats["off"][key] == stats["on"][key], key
