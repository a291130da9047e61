"""fp8 on the matrix unit (npusim run --dtype fp8-e4m3 / fp8-e5m2, docs/quantization.md) against
an independent numpy fp8: the formats' values enumerated from their definitions (OCP 8-bit
floating point, E4M3 "FN" and E5M2) and rounding to the nearest, ties to the even encoding,
saturating. A dense layer's outputs follow numpy's fp8 computation (inputs and weights rounded to
fp8 with power-of-two per-tensor scales, products summed exactly, the sum rounded to bf16) within
the array's fp32 summation and one bf16 rounding, and not the bf16 computation; its weights take
half of bf16's bytes off chip; the MACs are priced as fp8; a convolutional network passes npusim's
own check; a matrix unit without fp8 refuses it (exit 2, naming the file)."""

import json
import os

import numpy as np
import pytest

import npusim
from conftest import cli, dense_layer

ROOT = os.environ.get("NPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FORMATS = {"e4m3": (4, 3, 7, True), "e5m2": (5, 2, 15, False)}  # exp bits, mantissa, bias, FN


def fp8_table(fmt):
    """The non-negative finite values of the format, ascending, with their encodings."""
    e_bits, m, bias, fn = FORMATS[fmt]
    values, codes = [], []
    for code in range(128):
        e, man = code >> m, code & ((1 << m) - 1)
        if fn and code == 0x7F:  # E4M3FN: S.1111.111 is NaN, the rest of exponent 1111 finite
            continue
        if not fn and e == (1 << e_bits) - 1:  # E5M2: infinity and NaN
            continue
        v = man * 2.0 ** (1 - bias - m) if e == 0 else (1 + man / 2 ** m) * 2.0 ** (e - bias)
        values.append(v)
        codes.append(code)
    return np.array(values), np.array(codes)


def fp8_encode(x, fmt):
    """Nearest value, ties to the even encoding, saturating; returns (values, codes)."""
    values, codes = fp8_table(fmt)
    a = np.minimum(np.abs(np.asarray(x, dtype=np.float64)), values[-1])
    hi = np.clip(np.searchsorted(values, a), 0, len(values) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo, d_hi = a - values[lo], values[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
    idx = np.where(pick_hi, hi, lo)
    sign = np.signbit(x)
    return np.where(sign, -values[idx], values[idx]), codes[idx] | np.where(sign, 0x80, 0)


def fp8_round(x, fmt, e):
    """x rounded to the format with the scale 2^e: fp8(x 2^e) 2^-e."""
    return fp8_encode(np.asarray(x, dtype=np.float64) * 2.0 ** e, fmt)[0] * 2.0 ** -e


def scale_exp(amax, fmt):
    """The largest e with amax 2^e <= the format's largest value."""
    top = fp8_table(fmt)[0][-1]
    return int(np.floor(np.log2(top / amax)))


def bf16(x):
    """float32 -> bf16 (nearest even) as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32)


def test_numpy_fp8_known_encodings():
    enc = lambda v, f: int(fp8_encode(np.array([v]), f)[1][0])  # noqa: E731
    assert enc(448, "e4m3") == 0x7E and enc(1e9, "e4m3") == 0x7E  # saturates
    assert enc(240, "e4m3") == 0x77 and enc(-1, "e4m3") == 0xB8
    assert enc(0.015625, "e4m3") == 0x08  # 2^-6, the smallest normal
    assert enc(2.0 ** -9, "e4m3") == 0x01 and enc(2.0 ** -10, "e4m3") == 0x00  # tie to even
    assert enc(57344, "e5m2") == 0x7B and enc(2.0 ** -16, "e5m2") == 0x01
    assert enc(1.0625, "e4m3") == 0x38 and enc(1.1875, "e4m3") == 0x3A  # ties to even
    assert fp8_table("e4m3")[0][-1] == 448 and fp8_table("e5m2")[0][-1] == 57344


def fp8_hw():
    with open(os.path.join(ROOT, "configs", "hw", "tpu-v4-like-core.json")) as f:
        hw = json.load(f)
    hw["data_types"]["fp8"] = ["e4m3", "e5m2"]
    return hw


RNG = np.random.default_rng(8)
K, N = 512, 256
W = (RNG.standard_normal((K, N)) * 0.05).astype(np.float32)
X = RNG.standard_normal((4, K)).astype(np.float32)


@pytest.fixture(scope="module")
def runs():
    hw = fp8_hw()
    return {d: npusim.run(hw=hw, workload=dense_layer(W), inputs=X, dtype=d)
            for d in ("bf16", "fp8-e4m3", "fp8-e5m2")}


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_dense_outputs_follow_numpy_fp8(runs, fmt):
    r = runs["fp8-" + fmt]
    assert r.stats["functional_check"]["within_tolerance"] is True
    xb = bf16(X).astype(np.float64)
    xq = fp8_round(xb, fmt, scale_exp(np.abs(xb).max(), fmt))
    wq = fp8_round(W, fmt, scale_exp(np.abs(W).max(), fmt))
    exact = xq @ wq
    want = bf16(exact.astype(np.float32)).astype(np.float64)
    y = r.outputs["y"].astype(np.float64)
    # The array sums in fp32 in its own order: within K u sum |x w| of the exact sum, then one
    # bf16 rounding (2^-8 relative) on each side.
    s = np.abs(xq) @ np.abs(wq)
    allowed = 2.0 ** -7 * np.abs(exact) + K * 2.0 ** -24 * s + 1e-30
    assert np.all(np.abs(y - want) <= allowed)
    # ...and not the bf16 computation, which is well apart at fp8's precision.
    y16 = runs["bf16"].outputs["y"].astype(np.float64)
    err = lambda a, b: np.linalg.norm(a - b) / np.linalg.norm(b)  # noqa: E731
    assert err(y, want) < 0.2 * err(y16, want)
    assert err(y, want) < 0.01


def test_weights_take_half_of_bf16s_bytes_and_fp8_macs(runs):
    l16, l8 = runs["bf16"].stats["layers"][0], runs["fp8-e4m3"].stats["layers"][0]
    # Input (4 x K bf16), biases (N fp32, zero) and weights off chip; K rows: no padding.
    assert l16["dram_read_bytes"] - 4 * K * 2 - 4 * N == K * N * 2
    assert l8["dram_read_bytes"] - 4 * K * 2 - 4 * N == K * N
    s16, s8 = runs["bf16"].stats, runs["fp8-e4m3"].stats
    assert s8["events"]["mac_fp8"] == 4 * K * N and s8["events"]["mac_bf16"] == 0
    assert s16["events"]["mac_fp8"] == 0
    assert s8["quantization"]["weight_dtype"] == "fp8-e4m3"
    assert s8["energy"]["total_j"] < s16["energy"]["total_j"]


def test_a_convolutional_network_passes_its_check():
    r = npusim.run(hw=fp8_hw(), workload="mnist-cnn", dtype="fp8-e4m3", batch=2)
    c = r.stats["functional_check"]
    assert c["checked"] is True and c["within_tolerance"] is True
    assert r.stats["events"]["mac_fp8"] > 0


def test_fp8_needs_a_matrix_unit_that_lists_it():
    code, _, err = cli("run", "--hw", "tpu-v4-like-core", "--workload", "mnist-cnn", "--dtype",
                       "fp8-e4m3", "--values", "off")
    assert code == 2 and "tpu-v4-like-core.json" in err and "data_types.fp8" in err
    code, _, err = cli("run", "--hw", "tpu-v4-like-fp8", "--workload", "mnist-cnn", "--dtype",
                       "fp8-e3m4")
    assert code == 2 and "--dtype 'fp8-e3m4': expected" in err
