"""Data-parallel `npusim train` (issue 23 item 7, docs/training.md "Data parallel"): the step on
2 and 4 cores, each on its share of the batch, its gradients summed by a ring all-reduce over the
interconnect, against the same step on one core.

The summation bound (one SGD step of digits-mlp, batch 16, per parameter element). One core
computes g1 = bf16(S), S the batch's gradient accumulated in fp32 in the matrix unit. On N cores,
core c computes p_c = bf16(S_c) over its share (the loss still the mean over the whole batch), and
the ring adds the N partials in bf16, N - 1 adds per chunk, each rounding to nearest
(u = 2^-8, bf16's 8 significand bits). With r_j the ring's partial sums (|r_j| <= (1 + u)^j
sum_c |p_c|):
    |gN - g1| <= u (1 + u)^(N+1) (|g1| + N sum_c |p_c|) + 2 (B - 1) 2^-24 A
where the last term bounds the fp32 accumulations of S and of the S_c in other orders (A: the sum
over the batch of the per-sample products' magnitudes, estimated with numpy_mlp.py and doubled).
Every per-sample value before the sum over the batch is the same on one core and on N (the rows
of a product are independent, and the loss gradient is scaled by 1 / B either way), so nothing
else differs. The partials p_c are measured independently: core c's share trained alone on one
core with batch B / N gives N p_c exactly (1 / (B / N) = N / B, N a power of two, scales every
bf16 and fp32 value exactly). The gradients are recovered from the saved weights of one SGD step
with lr 1024 (a power of two: w1 = fl(w0 - 1024 g), so g = (w0 - w1) / 1024 within
2^-24 |w1| / 1024; the test adds twice these recovery errors to the bound).

Over several steps the trajectories part by more than one step's rounding (a ReLU that flips
changes a whole row), so three SGD steps are compared by the losses and the direction of the
weight change. The communication: the link bytes of a ring all-reduce, 2 (N - 1) / N of the
gradients per core, and at least that many bytes' cycles on one link."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import numpy_mlp  # noqa: E402
import train_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPUSIM = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
WORKLOAD = os.path.join(ROOT, "workloads", "training", "digits-mlp.json")
BATCH = 16
LR = 1024.0
U = 2.0 ** -8


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    out = tmp_path_factory.mktemp("digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return str(out)


@pytest.fixture(scope="module")
def four_cores(tmp_path_factory):
    """tpu-v4-like-core with four cores on a ring (the chip presets have 2 and 32)."""
    with open(os.path.join(ROOT, "configs", "hw", "tpu-v4-like-core.json")) as f:
        hw = json.load(f)
    hw["name"] = "tpu-v4-like-core-x4"
    hw["cores"] = 4
    hw["interconnect"] = {"topology": "ring", "link_bytes_per_cycle": 64, "hop_latency_cycles": 4}
    path = tmp_path_factory.mktemp("hw") / "x4.json"
    path.write_text(json.dumps(hw))
    return str(path)


def train(tmp, hw, data, batch, *args):
    return train_cli.train(NPUSIM, tmp, "--hw", hw, "--workload", WORKLOAD, "--data", data,
                           "--batch", batch, *args)


def sgd_gradient(tmp, hw, data, batch, *args):
    """One SGD step at lr 1024: its stats, the gradient (float64) and the final weights."""
    stats, w0, w1 = train(tmp, hw, data, batch, "--steps", "1", "--optimizer", "sgd", "--lr",
                          str(LR), *args)
    return stats, {k: (w0[k].astype(np.float64) - w1[k]) / LR for k in w0}, w1, w0


def magnitudes(params, x, y):
    """A: per parameter, the sum over the batch of |per-sample product| (numpy, float32)."""
    logits, s = numpy_mlp.forward(params, x)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    dlogits = np.abs(p / np.float32(len(y)))
    dh1 = np.abs((p / np.float32(len(y))) @ params["fc2.weight"] * (s["h1"] > 0))
    return {"fc2.weight": dlogits.T @ np.abs(s["a1"]), "fc2.bias": dlogits.sum(axis=0),
            "fc1.weight": dh1.T @ np.abs(s["flat"]), "fc1.bias": dh1.sum(axis=0)}


def hardware(name, four_cores):
    return four_cores if name == "x4" else name


@pytest.fixture(scope="module")
def one_step(tmp_path_factory, digits, four_cores):
    """sgd_gradient on a hardware name ("tpu-v4-like-core", "tpu-v4-like", "x4"), run once."""
    runs = {}

    def get(hw):
        if hw not in runs:
            runs[hw] = sgd_gradient(str(tmp_path_factory.mktemp("step")),
                                    hardware(hw, four_cores), digits, BATCH)
        return runs[hw]
    return get


@pytest.mark.parametrize("hw, cores", [("tpu-v4-like", 2), ("x4", 4)])
def test_one_step_on_n_cores_is_one_core_within_the_summation_bound(tmp_path, digits, one_step,
                                                                    hw, cores):
    stats1, g1, w1, w0 = one_step("tpu-v4-like-core")
    statsn, gn, wn, _ = one_step(hw)
    t = statsn["training"]
    assert t["parallel"] == "data" and t["cores"] == cores and t["samples_per_core"] == BATCH // cores
    assert statsn["first_step"]["functional_check"]["within_tolerance"]
    assert stats1["training"]["cores"] == 1 and stats1["training"]["communication_cycles"] == 0
    # The same logits: the loss of the first step is bit for bit one core's.
    assert t["loss"][0] == stats1["training"]["loss"][0]

    # Core c's partial, measured alone on one core: its share first in the data, batch B / N.
    x, y = np.load(os.path.join(digits, "x.npy")), np.load(os.path.join(digits, "y.npy"))
    share = BATCH // cores
    partials, rec = [], {k: (np.abs(w1[k]) + np.abs(wn[k])) * 2.0 ** -24 / LR for k in g1}
    for c in range(cores):
        data = tmp_path / f"share{c}"
        data.mkdir()
        np.save(data / "x.npy", x[c * share:])
        np.save(data / "y.npy", y[c * share:])
        _, gc, wc, _ = sgd_gradient(str(tmp_path / f"core{c}"), "tpu-v4-like-core", str(data),
                                    share)
        partials.append({k: v / cores for k, v in gc.items()})
        for k in rec:
            rec[k] += np.abs(wc[k]) * 2.0 ** -24 / LR / cores
    a = magnitudes(w0, x[:BATCH], y[:BATCH])
    for name in g1:
        p = np.abs(np.stack([q[name] for q in partials])).sum(axis=0)
        bound = (U * (1 + U) ** (cores + 1) * (np.abs(g1[name]) + cores * p)
                 + 2 * (BATCH - 1) * 2.0 ** -24 * 2 * a[name] + 2 * rec[name])
        diff = np.abs(gn[name] - g1[name])
        assert (diff <= bound).all(), (name, float((diff / bound).max()))
        # The bound is not vacuous: the sums differ, by a rounding or two of bf16.
        assert diff.max() > 0 and diff.max() < 4 * U * np.abs(g1[name]).max(), name


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory, digits, four_cores):
    """Three SGD steps (lr 0.1) on a hardware name, run once."""
    runs = {}

    def get(hw):
        if hw not in runs:
            runs[hw] = train(str(tmp_path_factory.mktemp("steps")), hardware(hw, four_cores),
                             digits, BATCH, "--steps", "3", "--optimizer", "sgd", "--lr", "0.1")
        return runs[hw]
    return get


@pytest.mark.parametrize("hw", ["tpu-v4-like", "x4"])
def test_three_steps_on_n_cores_follow_one_core(three_steps, hw):
    s1, w0, f1 = three_steps("tpu-v4-like-core")
    sn, _, fn = three_steps(hw)
    assert sn["training"]["loss"] == pytest.approx(s1["training"]["loss"], rel=2e-3)
    for name in w0:
        a, b = (f1[name] - w0[name]).ravel(), (fn[name] - w0[name]).ravel()
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) >= 0.999, name


@pytest.mark.parametrize("hw, cores", [("tpu-v4-like", 2), ("x4", 4)])
def test_allreduce_link_bytes_and_cycles_follow_the_link_model(one_step, hw, cores):
    stats = one_step(hw)[0]
    t, first = stats["training"], stats["first_step"]
    # digits-mlp's gradients: fc1 [128, 784 + 1], fc2 [10, 128 + 1], bf16.
    gradient_bytes = 2 * (128 * 785 + 10 * 129)
    ar = t["allreduce"]
    assert ar["gradient_bytes"] == gradient_bytes
    # A ring all-reduce: each core sends 2 (N - 1) chunks of 1 / N of every gradient.
    assert ar["link_bytes"] == 2 * (cores - 1) * gradient_bytes
    assert first["interconnect"]["bytes"] == ar["link_bytes"]
    assert sum(c["link_bytes"] for c in first["cores"]) == ar["link_bytes"]
    per_core = 2 * (cores - 1) * gradient_bytes / cores
    assert ar["max_core_link_bytes"] == pytest.approx(per_core, rel=0.01)
    # Each core loads its partials and the owners store the sums, once.
    assert ar["dram_read_bytes"] == cores * gradient_bytes
    assert ar["dram_write_bytes"] == gradient_bytes
    # A core's link moves 64 bytes a cycle (tpu-v4-like's interconnect): the all-reduce takes at
    # least its busiest core's bytes at that rate, and the phases add up to the step (the
    # optimizer's update on the chip after the all-reduce).
    assert t["communication_cycles"] >= per_core / 64
    assert t["optimizer_cycles"] > 0
    assert t["step_cycles"] == pytest.approx(t["forward_cycles"] + t["backward_cycles"] +
                                             t["communication_cycles"] + t["optimizer_cycles"])
    clock = first["clock_mhz"] * 1e6
    assert t["samples_per_s"] == pytest.approx(BATCH / (t["step_cycles"] / clock))
    assert first["chip"]["parallel"].startswith("data parallel training step")


@pytest.mark.parametrize("args, message", [
    (["--hw", "tpu-v4-like", "--batch", "7", "--parallel", "data"],
     "--parallel data: --batch 7 does not split evenly over the 2 cores of 'tpu-v4-like'"),
    (["--hw", "tpu-v4-like", "--parallel", "tensor"],
     "--parallel 'tensor': training runs data parallel"),
])
def test_bad_parallel_input_exits_2(tmp_path, args, message):
    cmd = [NPUSIM, "train", "--workload", WORKLOAD, "--steps", "1", "--out",
           str(tmp_path / "out"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_auto_keeps_an_uneven_batch_on_one_core(tmp_path, digits):
    stats, _, _ = train(str(tmp_path), "tpu-v4-like", digits, 7)
    t = stats["training"]
    assert t["cores"] == 1 and t["communication_cycles"] == 0
    assert "does not split evenly" in t["parallel_summary"]
