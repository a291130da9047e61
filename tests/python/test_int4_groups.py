"""Group-wise int4 weights (npusim run --weight-dtype int4 --weight-group G, docs/compression.md)
against numpy: a memory-bound dense layer whose input channels differ in magnitude (as real
layers' do) stores its int4 weights and one scale byte per group of 128 and output channel off
chip (0.5 + 1/128 of int8's bytes), its outputs are bit-exact against npusim's reference and
follow numpy's own group quantization (the channel's largest magnitude -> 126, integer group
scales in [1, 18], int4 values rounded half away from zero), and they are closer to the float
layer than per-channel int4's; bad values are input errors."""

import re

import numpy as np
import pytest

import npusim
from conftest import cli, dense_layer

RNG = np.random.default_rng(125)
K, N, G = 1024, 512, 128
# Input channels (rows) of spread magnitudes: a group of small ones gets a finer step.
W = (RNG.standard_normal((K, N)) * np.exp(RNG.uniform(-2.0, 0.5, (K, 1)))).astype(np.float32)


def round_away(x):
    return np.trunc(x.astype(np.float64) + np.copysign(0.5, x))


def group_quantized(w, g):
    """numpy's group quantization, in float32 as npusim computes it: the dequantized weights."""
    s = np.abs(w).max(axis=0) / np.float32(126)
    s[s == 0] = 1
    gmax = np.abs(w).reshape(-1, g, w.shape[1]).max(axis=1)
    q = np.clip(np.ceil(gmax / s / np.float32(7)), 1, 18).astype(np.float32)
    q_rows = np.repeat(q, g, axis=0)
    z = np.clip(round_away(w / (s * q_rows)), -7, 7)
    return z * q_rows * s


def channel_quantized(w):
    s = np.abs(w).max(axis=0) / 7
    return round_away(w / s) * s


def rel_err(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def runs():
    x = RNG.standard_normal((1, K)).astype(np.float32)
    r4 = npusim.run(hw="tpu-v1", workload=dense_layer(W), inputs=x, weight_dtype="int4")
    rg = npusim.run(hw="tpu-v1", workload=dense_layer(W), inputs=x, weight_dtype="int4",
                    weight_group=G)
    return x, r4, rg


def test_scales_counted_off_chip(runs):
    _, r4, rg = runs
    weights4 = r4.stats["layers"][0]["dram_read_bytes"] - K - 4 * N
    weightsg = rg.stats["layers"][0]["dram_read_bytes"] - K - 4 * N
    assert weights4 == K * N // 2
    m = re.search(r"weights stored int4-groups off chip, (\d+) of (\d+) B",
                  rg.stats["layers"][0]["tiling"])
    assert m and int(m.group(2)) == K * N
    # The int4 values and a scale byte per group and column, each box padded to whole rows of
    # its columns (one row of at most 256 bytes per box) and a box's scales for every group it
    # touches.
    want = K * N // 2 + K // G * N
    assert want <= weightsg == int(m.group(1)) < want + 0.01 * K * N
    assert weightsg / (K * N) == pytest.approx(0.5 + 1 / G, abs=0.005)
    assert rg.stats["quantization"]["weight_dtype"] == "int4"


def test_bit_exact_and_closer_than_per_channel(runs):
    x, r4, rg = runs
    assert rg.stats["functional_check"]["bit_exact"] is True
    yg, y4 = rg.outputs["y"], r4.outputs["y"]
    want_g, want_c, exact = x @ group_quantized(W, G), x @ channel_quantized(W), x @ W
    # npusim's group-wise outputs follow numpy's group quantization (the rest is int8
    # activations and output requantization) ...
    assert rel_err(yg, want_g) < 0.5 * rel_err(yg, want_c)
    assert rel_err(yg, want_g) < 0.03
    # ... which is closer to the float layer than per-channel int4.
    assert rel_err(want_g, exact) < 0.85 * rel_err(want_c, exact)
    assert rel_err(yg, exact) < 0.85 * rel_err(y4, exact)


def test_bad_group_is_an_input_error():
    code, _, err = cli("run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--weight-group", "128")
    assert code == 2 and "group scales are for --weight-dtype int4" in err
    code, _, err = cli("run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--dtype", "int8",
                       "--weight-dtype", "int4", "--weight-group", "0")
    assert code == 2 and "--weight-group 0: expected 1 to 65536" in err
