"""The optimizer's update on the chip (`npusim train --optimizer-on chip`, docs/training.md "The
optimizer on the chip"): three steps of SGD, momentum and Adam of workloads/training/digits-mlp.json
on the digits give, bit for bit, the final weights of the host's fp32 update
(`--optimizer-on host`), on one core and on two (after the all-reduce); the same as torch.optim
trained in float32 from the same weights and batches within the mixed precision's difference
(cosine >= 0.99 of every parameter's change, norm within 2 %); the
phases' spans of the Chrome trace (`--trace-json`) are stats.json's phase cycles."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import train_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPUSIM = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
WORKLOAD = os.path.join(ROOT, "workloads", "training", "digits-mlp.json")
BATCH, STEPS = 16, 3
LR = {"sgd": 0.1, "momentum": 0.05, "adam": 0.001}


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    out = tmp_path_factory.mktemp("digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    train_only = out / "train_only"  # no held-out evaluation (test time)
    train_only.mkdir()
    for name in ("x.npy", "y.npy"):
        os.symlink(out / name, train_only / name)
    return str(train_only)


def train(tmp, data, optimizer, where, *args, hw="tpu-v4-like-core"):
    return train_cli.train(NPUSIM, tmp, "--hw", hw, "--workload", WORKLOAD, "--data", data,
                           "--batch", BATCH, "--steps", STEPS, "--optimizer", optimizer, "--lr",
                           LR[optimizer], "--optimizer-on", where, *args)


def torch_steps(initial, x, y, optimizer):
    """STEPS steps of the MLP in float32 with torch.optim (Keras' Adam epsilon)."""
    p = {k: torch.tensor(v, requires_grad=True) for k, v in initial.items()}
    lr = LR[optimizer]
    opt = (torch.optim.Adam(p.values(), lr=lr, eps=1e-7) if optimizer == "adam" else
           torch.optim.SGD(p.values(), lr=lr, momentum=0.9 if optimizer == "momentum" else 0))
    for step in range(STEPS):
        xb = torch.tensor(x[step * BATCH:(step + 1) * BATCH].reshape(BATCH, -1), dtype=torch.float32)
        yb = torch.tensor(y[step * BATCH:(step + 1) * BATCH], dtype=torch.int64)
        h = torch.relu(xb @ p["fc1.weight"].T + p["fc1.bias"])
        loss = torch.nn.functional.cross_entropy(h @ p["fc2.weight"].T + p["fc2.bias"], yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in p.items()}


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_chip_update_equals_host_and_torch(tmp_path, digits, optimizer):
    chip, initial, final = train(str(tmp_path / "chip"), digits, optimizer, "chip")
    host, initial_h, final_h = train(str(tmp_path / "host"), digits, optimizer, "host")
    for name in final:
        assert np.array_equal(initial[name], initial_h[name]), name
        # Bit for bit: the chip rounds every operation as the host's fp32 code does.
        assert np.array_equal(final[name].view(np.uint32), final_h[name].view(np.uint32)), name
    c, h = chip["training"], host["training"]
    assert c["loss"] == h["loss"]
    assert c["optimizer_on"] == "chip" and h["optimizer_on"] == "host"
    assert h["optimizer_cycles"] == 0 and c["optimizer_cycles"] > 0
    assert c["step_cycles"] == pytest.approx(c["forward_cycles"] + c["backward_cycles"] +
                                             c["optimizer_cycles"])
    # The step before the update is the same program.
    for key in ("forward_cycles", "backward_cycles"):
        assert c[key] == h[key], key
    assert c["phase_energy_j"]["optimizer"] > 0 and h["phase_energy_j"]["optimizer"] == 0
    assert chip["first_step"]["events"]["vector_fp32_add_mul"] > 0
    assert host["first_step"]["events"]["vector_fp32_add_mul"] == 0
    # torch.optim in float32 on the same batches: the same steps up to the chip's bf16 gradients
    # (measured: cosine 0.992 to 0.99999, lowest Adam's fc1.bias; norms within 0.6 %).
    x, y = np.load(os.path.join(digits, "x.npy")), np.load(os.path.join(digits, "y.npy"))
    ref = torch_steps(initial, x, y, optimizer)
    for name in final:
        change, want = final[name] - initial[name], ref[name] - initial[name]
        assert cosine(change, want) >= 0.99, name
        assert np.linalg.norm(change) == pytest.approx(np.linalg.norm(want), rel=0.02), name


def test_data_parallel_chip_update_and_trace_phases(tmp_path, digits):
    """On tpu-v4-like's two cores the update reads the all-reduced gradients, each core updating
    its share of the tiles; the trace's phase spans are stats.json's phases."""
    trace = str(tmp_path / "trace.json")
    chip, _, final = train(str(tmp_path / "chip"), digits, "adam", "chip", "--trace-json", trace,
                           hw="tpu-v4-like")
    _, _, final_h = train(str(tmp_path / "host"), digits, "adam", "host", hw="tpu-v4-like")
    for name in final:
        assert np.array_equal(final[name].view(np.uint32), final_h[name].view(np.uint32)), name
    t = chip["training"]
    assert t["cores"] == 2 and t["communication_cycles"] > 0 and t["optimizer_cycles"] > 0
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    pid = next(e["pid"] for e in events
               if e.get("name") == "process_name" and e["args"]["name"] == "phases")
    spans = {e["name"]: e["args"]["cycles"] for e in events if e["pid"] == pid and e["ph"] == "X"}
    first = chip["steps"][0]
    assert spans == {"forward": first["forward_cycles"], "backward": first["backward_cycles"],
                     "all-reduce": first["communication_cycles"],
                     "optimizer": first["optimizer_cycles"]}
    layers = {e["args"]["layer"] for e in events if e.get("ph") == "X" and e.get("cat") == "vector"}
    assert any(name.startswith("optimizer ") for name in layers)


def test_bad_optimizer_place_is_refused(tmp_path, digits):
    r = subprocess.run([NPUSIM, "train", "--hw", "tpu-v4-like-core", "--workload", WORKLOAD,
                        "--optimizer-on", "gpu", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--optimizer-on 'gpu': expected chip or host" in r.stderr


def test_a_row_larger_than_the_update_tile_is_refused(tmp_path):
    """A unified buffer of 16 KiB holds Adam tiles of 64 elements (an eighth of it at 26 bytes per
    element): fc1's rows of 128 outputs do not fit."""
    with open(os.path.join(ROOT, "configs", "hw", "tpu-v4-like-core.json")) as f:
        hw = json.load(f)
    hw["name"] = "small-buffer"
    hw["buffers"]["unified_buffer"]["capacity_bytes"] = 16384
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(hw))
    r = subprocess.run([NPUSIM, "train", "--hw", str(path), "--workload", WORKLOAD, "--batch", "4",
                        "--optimizer", "adam", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert ("--optimizer-on chip: layer 'fc1': a row of 128 parameters does not fit the update's "
            "tile of 64 elements") in r.stderr
