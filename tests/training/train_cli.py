"""Runs `npusim train` for the training tests: its stats.json and the parameters it saved before
and after (--save-weights), read by `load` (numpy_mlp's or numpy_cnn's names)."""
import json
import os
import subprocess

import numpy_mlp


def train(npusim, tmp, *args, load=numpy_mlp.load_parameters):
    out, weights = os.path.join(tmp, "out"), os.path.join(tmp, "weights")
    cmd = [npusim, "train", *map(str, args), "--save-weights", weights, "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    return stats, load(os.path.join(weights, "initial")), load(os.path.join(weights, "final"))
