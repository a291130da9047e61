"""Shared helpers of the module's tests: the npusim binary ($NPUSIM) and the source tree."""

import json
import os
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

SOURCE = os.environ.get("NPUSIM_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def npusim_binary():
    path = os.environ.get("NPUSIM", os.path.join(SOURCE, "build", "sim", "npusim"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"npusim binary not found at {path}: build it or set NPUSIM")
    return path


def cli(*args):
    """Runs `npusim args...`; returns (exit code, stdout, stderr)."""
    r = subprocess.run([npusim_binary()] + [str(a) for a in args], capture_output=True,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def cli_run(tmp_path, *args):
    """`npusim run ARGS --out DIR`: (stats.json as a dict, DIR)."""
    out = tmp_path / "cli-out"
    code, _, err = cli("run", *args, "--out", out)
    assert code == 0, err
    with open(out / "stats.json", encoding="utf-8") as f:
        return json.load(f), out


def without_host(stats):
    """stats.json less `host`, the only figures that differ between two runs of one input."""
    return {k: v for k, v in stats.items() if k != "host"}


def load_npy_dir(path):
    return {f[:-4]: np.load(os.path.join(path, f)) for f in sorted(os.listdir(path))
            if f.endswith(".npy")}


def dense_layer(w):
    """An ONNX model of one MatMul by the constant `w` [K, N], batch symbolic, as bytes."""
    k, n = w.shape
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "dense",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", n])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
