"""W4A16, weight-only int4 with bf16 activations (npusim run --dtype bf16 --weight-dtype int4
[--weight-group G], docs/compression.md) against numpy: a memory-bound dense layer at batch 1
stores its weights off chip as int4 values two to a byte plus a bf16 scale per group of 128 (or
per output channel and box) and column, exactly the formula's bytes (0.25 + 1/G of bf16's, under
0.55x of int8 weights'); its outputs follow numpy's own quantization (scale = the group's largest
|w| / 7 rounded to bf16, z = w / scale rounded half away from zero, weight = z x scale rounded to
bf16) within the bf16 bound, not the bf16 weights'; group scales beat per-channel ones on rows of
spread magnitudes; a convolutional network and a decoder's generation pass npusim's own check;
bad values are input errors."""

import json
import re

import numpy as np
import pytest

import npusim
from conftest import cli, dense_layer

RNG = np.random.default_rng(416)
K, N, G = 1024, 1024, 128
HW = "tpu-v4-like-core"
# Input channels (rows) of spread magnitudes, as trained layers have: groups of small ones get
# finer steps than their channel's.
W = (RNG.standard_normal((K, N)) * 0.05 * np.exp(RNG.uniform(-2.0, 0.5, (K, 1)))).astype(
    np.float32)
X = RNG.standard_normal((1, K)).astype(np.float32)


def bf16(x):
    """float32 -> bf16 (nearest even) as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32)


def round_away(x):
    return np.trunc(x.astype(np.float64) + np.copysign(0.5, x))


def w4a16(w, g):
    """numpy's W4A16 quantization, groups of g rows per column (g = K: per channel): the
    dequantized bf16 weights."""
    k, n = w.shape
    amax = np.abs(w).reshape(k // g, g, n).max(axis=1)
    s = bf16(amax / np.float32(7))
    s_rows = np.repeat(s, g, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s_rows > 0, np.clip(round_away(w / s_rows), -7, 7), 0).astype(np.float32)
    return bf16(z * s_rows)


def rel_err(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def weight_bytes(r):
    """The layer's off-chip bytes less its input (K bf16) and biases (N fp32)."""
    return r.stats["layers"][0]["dram_read_bytes"] - 2 * K - 4 * N


@pytest.fixture(scope="module")
def runs():
    model = dense_layer(W)
    return {
        "bf16": npusim.run(hw=HW, workload=model, inputs=X, dtype="bf16"),
        "int8": npusim.run(hw=HW, workload=model, inputs=X, dtype="int8"),
        "g128": npusim.run(hw=HW, workload=model, inputs=X, dtype="bf16", weight_dtype="int4",
                           weight_group=G),
        "channel": npusim.run(hw=HW, workload=model, inputs=X, dtype="bf16",
                              weight_dtype="int4"),
    }


def test_off_chip_bytes_are_the_formulas(runs):
    assert weight_bytes(runs["bf16"]) == 2 * K * N
    assert runs["int8"].stats["layers"][0]["dram_read_bytes"] - K - 4 * N == K * N
    g = runs["g128"]
    m = re.search(r"weights stored int4-bf16 off chip, (\d+) of (\d+) B",
                  g.stats["layers"][0]["tiling"])
    assert m and int(m.group(2)) == 2 * K * N
    # Half a byte per weight and a 2-byte bf16 scale per group of G and column: 0.25 + 1/G of
    # bf16's bytes (the layer's boxes hold whole groups, so nothing is padded or repeated).
    assert weight_bytes(g) == int(m.group(1)) == K * N // 2 + 2 * (K // G) * N
    assert weight_bytes(g) / (2 * K * N) == 0.25 + 1 / G
    assert weight_bytes(g) <= 0.55 * K * N  # int8 weights' bytes
    # Per channel: one scale per column in each box of rows the tiling loads.
    c = weight_bytes(runs["channel"])
    assert K * N // 2 + 2 * N <= c <= weight_bytes(g)
    for r in (g, runs["channel"]):
        assert r.stats["quantization"]["weight_dtype"] == "int4"
        assert r.stats["dtype"] == "bf16"
        assert r.stats["events"]["decompressed_bits"] == 16 * K * N
        assert r.stats["dram"]["read_bytes"] < runs["bf16"].stats["dram"]["read_bytes"] / 3
        assert r.stats["energy"]["total_j"] < runs["bf16"].stats["energy"]["total_j"]


@pytest.mark.parametrize("name,g", [("g128", G), ("channel", K)])
def test_outputs_follow_numpys_dequantized_product(runs, name, g):
    r = runs[name]
    assert r.stats["functional_check"]["within_tolerance"] is True
    xb = bf16(X).astype(np.float64)
    wq = w4a16(W, g).astype(np.float64)
    exact = xb @ wq
    want = bf16(exact.astype(np.float32)).astype(np.float64)
    y = r.outputs["y"].astype(np.float64)
    # The bf16 bound: the array's fp32 sums within 2 gamma(K + 2) sum |x w| of the exact sum, one
    # bf16 rounding (2^-8 relative) on each side.
    s = np.abs(xb) @ np.abs(wq)
    allowed = 2.0 ** -7 * np.abs(exact) + 2 * (K + 2) * 2.0 ** -24 * s + 1e-30
    assert np.all(np.abs(y - want) <= allowed)
    # ... and not the bf16 weights' product, which is well apart at int4's precision.
    y16 = runs["bf16"].outputs["y"].astype(np.float64)
    assert rel_err(y, want) < 0.05 * rel_err(y16, want)


def test_groups_are_closer_to_the_float_layer_than_per_channel(runs):
    exact = X.astype(np.float64) @ W
    yg, yc = runs["g128"].outputs["y"], runs["channel"].outputs["y"]
    assert rel_err(yg, exact) < 0.85 * rel_err(yc, exact)
    assert rel_err(yg, exact) < 0.25


def test_a_convolutional_network_passes_its_check():
    r = npusim.run(hw=HW, workload="mnist-cnn", dtype="bf16", weight_dtype="int4", weight_group=32)
    c = r.stats["functional_check"]
    assert c["checked"] is True and c["within_tolerance"] is True
    assert "int4-bf16" in r.stats["layers"][0]["tiling"]


def test_a_decoder_generates_with_w4a16(tmp_path):
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps({
        "schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 128, "max_context": 32, "norm": "rms",
        "activation": "swiglu", "positions": "rotary"}))
    r = npusim.generate(HW, str(model), prompt_tokens=8, new_tokens=3, dtype="bf16",
                        weight_dtype="int4", weight_group=32)
    b = npusim.generate(HW, str(model), prompt_tokens=8, new_tokens=3, dtype="bf16")
    assert r.mismatch == "" and r.stats["generation"]["ids_equal_reference"]
    assert r.stats["prefill"]["quantization"]["weight_dtype"] == "int4"
    assert r.stats["prefill"]["dram"]["read_bytes"] < b.stats["prefill"]["dram"]["read_bytes"]
    # The int4 weights move the logits off the bf16 ones, not far.
    assert 0 < rel_err(r.logits, b.logits) < 0.3


def test_bad_values_are_input_errors():
    code, _, err = cli("run", "--hw", HW, "--workload", "mnist-cnn", "--dtype", "bf16",
                       "--weight-dtype", "int3")
    assert code == 2 and "--weight-dtype 'int3': expected bf16 (the run's data type) or int4" in err
    code, _, err = cli("run", "--hw", HW, "--workload", "mnist-cnn", "--dtype", "bf16",
                       "--weight-dtype", "int4", "--weight-group", "0")
    assert code == 2 and "--weight-group 0: expected 1 to 65536" in err
