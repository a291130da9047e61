"""`npusim train --values off`: the training step timed only (no values computed or checked, no
weights drawn, no loss). Its cycles, phases and energy are those of the same step with values on
(nothing in the step's timing depends on the values), on one core and data parallel on two; the
loss is absent from stats.json; the options that need values are refused with exit code 2."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NPUSIM = os.environ.get("NPUSIM", os.path.join(ROOT, "build", "sim", "npusim"))
MLP = os.path.join(ROOT, "workloads", "training", "digits-mlp.json")
PHASES = ("step_cycles", "forward_cycles", "backward_cycles", "communication_cycles",
          "optimizer_cycles", "energy_per_step_j")


def train(tmp, name, *args):
    out = os.path.join(tmp, name)
    r = subprocess.run([NPUSIM, "train", "--out", out, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f), r.stdout


@pytest.mark.parametrize("hw,workload,batch", [("tpu-v4-like-core", "mnist-cnn", 8),
                                               ("tpu-v4-like", MLP, 16)])
def test_timing_only_step_times_as_the_step_with_values(tmp_path, hw, workload, batch):
    args = ["--hw", hw, "--workload", workload, "--batch", str(batch)]
    on, _ = train(str(tmp_path), "on", *args)
    off, report = train(str(tmp_path), "off", *args, "--values", "off", "--steps", "2")
    t_on, t_off = on["training"], off["training"]
    assert t_off["values"] == "off" and t_on["values"] == "on"
    assert "loss" not in t_off and "heldout" not in t_off
    assert all("loss" not in s for s in off["steps"]) and len(off["steps"]) == 2
    assert off["first_step"]["values"] == "off"
    assert not off["first_step"]["functional_check"]["checked"]
    assert t_off["cores"] == t_on["cores"] == (2 if hw == "tpu-v4-like" else 1)
    for key in PHASES:
        assert t_off[key] == pytest.approx(t_on[key], rel=1e-12), key
    assert t_off["step_cycles"] > 0 and (t_off["communication_cycles"] > 0) == (t_off["cores"] > 1)
    assert t_off["offchip"] == t_on["offchip"]
    assert t_off["parameters"] == t_on["parameters"]
    assert "timing only" in report


@pytest.mark.parametrize("extra,flag", [(["--data", "."], "--data"),
                                        (["--save-weights", "w"], "--save-weights"),
                                        (["--eval-every", "5"], "--eval-every"),
                                        (["--shuffle"], "--shuffle")])
def test_timing_only_refuses_what_needs_values(tmp_path, extra, flag):
    r = subprocess.run([NPUSIM, "train", "--hw", "tpu-v4-like-core", "--workload", MLP,
                        "--values", "off", *extra], capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{flag} needs the values" in r.stderr


def test_values_takes_on_or_off(tmp_path):
    r = subprocess.run([NPUSIM, "train", "--hw", "tpu-v4-like-core", "--workload", MLP,
                        "--values", "maybe"], capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 2 and "--values 'maybe': expected on or off" in r.stderr
