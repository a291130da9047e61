"""Weight-only int4 (npusim run --weight-dtype int4, docs/compression.md) against numpy: a
memory-bound dense layer's weights take half the off-chip bytes of int8 and its run takes fewer
cycles; the outputs are bit-exact against npusim's reference and follow numpy's own int4
quantization of the weights (one scale per output channel, the largest magnitude -> 7), not the
int8 one; a layer with an odd number of filters keeps int8; bad values are input errors."""

import numpy as np
import pytest

import npusim
from conftest import cli, dense_layer

RNG = np.random.default_rng(44)
K, N = 1024, 512
W = RNG.standard_normal((K, N)).astype(np.float32) * 0.05


def quantized(w, q_max):
    """Per output channel: scale = max |w| / q_max, weights rounded half away from zero."""
    s = np.abs(w).max(axis=0) / q_max
    q = np.trunc(w / s + np.copysign(0.5, w))
    return q * s


def rel_err(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def runs():
    x = RNG.standard_normal((1, K)).astype(np.float32)
    r8 = npusim.run(hw="tpu-v1", workload=dense_layer(W), inputs=x)
    r4 = npusim.run(hw="tpu-v1", workload=dense_layer(W), inputs=x, weight_dtype="int4")
    return x, r8, r4


def test_weights_take_half_the_bytes_and_fewer_cycles(runs):
    x, r8, r4 = runs
    l8, l4 = r8.stats["layers"][0], r4.stats["layers"][0]
    # The layer reads its input (K int8 values), its int32 biases (zero: MatMul has none) and
    # its weights off chip.
    assert l8["dram_read_bytes"] - K - 4 * N == K * N
    assert l4["dram_read_bytes"] - K - 4 * N == K * N // 2
    assert r4.stats["dram"]["read_bytes"] < 0.6 * r8.stats["dram"]["read_bytes"]
    assert r4.stats["total_cycles"] < 0.75 * r8.stats["total_cycles"]
    assert r4.stats["quantization"]["weight_dtype"] == "int4"
    assert r8.stats["quantization"]["weight_dtype"] == "int8"


def test_outputs_bit_exact_and_int4_quantized(runs):
    x, r8, r4 = runs
    assert r4.stats["functional_check"]["bit_exact"] is True
    y4, y8 = r4.outputs["y"], r8.outputs["y"]
    want4, want8 = x @ quantized(W, 7), x @ quantized(W, 127)
    # int4 outputs follow numpy's int4 weights more closely than the float or int8 ones.
    assert rel_err(y4, want4) < 0.5 * rel_err(y4, want8)
    assert rel_err(y4, want4) < 0.05
    assert rel_err(y8, want8) < 0.05


def test_odd_filters_keep_int8():
    w = RNG.standard_normal((64, 7)).astype(np.float32)
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    a = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x, weight_dtype="int4")
    b = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x)
    assert a.stats["layers"][0]["dram_read_bytes"] == b.stats["layers"][0]["dram_read_bytes"]
    np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])


def test_bad_weight_dtype_is_an_input_error():
    code, _, err = cli("run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--weight-dtype", "int3")
    assert code == 2 and "--weight-dtype 'int3': expected" in err
