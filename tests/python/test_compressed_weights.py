"""Compressed weights off chip (npusim run --compress-weights auto, docs/compression.md): a
memory-bound dense layer pruned to 50 % unstructured zeros stores its weights in the bitmap
format, 0.625x of int8's bytes and 0.5625x of bf16's (a presence bit per weight plus the non-zeros,
counted here from the pruned weights with numpy), reads only those bytes off chip, takes fewer
cycles and less DRAM energy, and computes bit-identical outputs (bit-exact against the reference:
the compression is lossless); with --compress-weights huffman the int8 layer's non-zeros are
Huffman-coded, under 0.6x of int8's bytes and within one bit per non-zero of their entropy; at
97 % zeros the CSR-like format is smaller and chosen; dense weights stay dense; bad values are
input errors."""

import re

import numpy as np
import pytest

import npusim
from conftest import cli, dense_layer

RNG = np.random.default_rng(25)
K, N = 1024, 512


def pruned(fraction):
    """Weights with `fraction` of them zero, the smallest magnitudes, as --prune magnitude:F."""
    w = RNG.standard_normal((K, N)).astype(np.float32) * 0.05
    order = np.argsort(np.abs(w), axis=None, kind="stable")
    w.reshape(-1)[order[:int(fraction * w.size)]] = 0.0
    return w


def weight_bytes(r, dtype_bytes):
    """Off-chip bytes the layer read for its weights: less its input and int32 biases."""
    return r.stats["layers"][0]["dram_read_bytes"] - K * dtype_bytes - 4 * N


def stored(r):
    """(format, stored bytes, dense bytes) from the layer's tiling line."""
    m = re.search(r"weights stored (\w+) off chip, (\d+) of (\d+) B", r.stats["layers"][0]["tiling"])
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def dram_j(r):
    return r.stats["energy"]["by_component_j"]["dram"]


@pytest.fixture(scope="module")
def half():
    w = pruned(0.5)
    x = RNG.standard_normal((1, K)).astype(np.float32)
    runs = {}
    for dtype in ("int8", "bf16"):
        for mode in ("off", "auto", "huffman"):
            runs[dtype, mode] = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x,
                                           dtype=dtype, compress_weights=mode)
    return w, runs


@pytest.mark.parametrize("dtype,eb", [("int8", 1), ("bf16", 2)])
def test_half_pruned_weights_take_bitmap_bytes(half, dtype, eb):
    w, runs = half
    off, on = runs[dtype, "off"], runs[dtype, "auto"]
    assert weight_bytes(off, eb) == K * N * eb and stored(off) is None
    fmt, nbytes, dense = stored(on)
    assert fmt == "bitmap" and dense == K * N * eb
    # The boxes' rows are 256 or fewer weights: one presence byte per 8, plus each non-zero; each
    # box padded to whole rows of its dense width (at most one row of the box's many).
    nonzeros = int(np.count_nonzero(w))
    bitmap = K * N // 8 + nonzeros * eb
    assert bitmap <= nbytes < bitmap + 0.01 * K * N * eb
    assert weight_bytes(on, eb) == nbytes  # each box read once at batch 1
    ratio = weight_bytes(on, eb) / weight_bytes(off, eb)
    assert ratio == pytest.approx(0.625 if eb == 1 else 0.5625, abs=0.006)
    # Memory-bound on tpu-v1's DDR3: fewer bytes, fewer cycles, less DRAM energy.
    assert on.stats["total_cycles"] < 0.8 * off.stats["total_cycles"]
    assert dram_j(on) < 0.8 * dram_j(off)
    # The decompressor writes every dense bit once and is priced.
    assert on.stats["events"]["decompressed_bits"] == 8 * K * N * eb
    assert off.stats["events"]["decompressed_bits"] == 0


def int8_codes(w):
    """The int8 weights as npusim quantizes them: per output channel, the largest magnitude at
    127, rounded half away from zero."""
    scale = np.abs(w).max(axis=0) / 127.0
    q = w / scale
    return (np.sign(q) * np.floor(np.abs(q) + 0.5)).astype(np.int64)


def test_half_pruned_int8_weights_huffman(half):
    w, runs = half
    off, bitmap, huff = runs["int8", "off"], runs["int8", "auto"], runs["int8", "huffman"]
    fmt, nbytes, dense = stored(huff)
    assert fmt == "huffman" and dense == K * N
    assert weight_bytes(huff, 1) == nbytes
    assert weight_bytes(huff, 1) <= 0.6 * weight_bytes(off, 1)
    assert nbytes < stored(bitmap)[1]
    # A Huffman code takes less than the entropy + 1 bit per value; the format adds the presence
    # bits, a 128-byte table per box, whole bytes per row and whole rows per box.
    nz = int8_codes(w)[w != 0]
    assert nz.size == np.count_nonzero(w) and np.all(nz != 0)
    _, counts = np.unique(nz, return_counts=True)
    p = counts / nz.size
    entropy = float(-(p * np.log2(p)).sum())
    assert nbytes < K * N / 8 + nz.size * (entropy + 1) / 8 + 0.01 * K * N
    assert nbytes > K * N / 8 + nz.size * (entropy - 0.5) / 8
    assert huff.stats["total_cycles"] < bitmap.stats["total_cycles"]
    assert dram_j(huff) < dram_j(bitmap)
    assert huff.stats["events"]["decompressed_bits"] == 8 * K * N
    # bf16 weights have no Huffman form: huffman stores them as auto does.
    assert stored(runs["bf16", "huffman"]) == stored(runs["bf16", "auto"])


@pytest.mark.parametrize("dtype,mode", [("int8", "auto"), ("bf16", "auto"), ("int8", "huffman")])
def test_lossless_bit_exact(half, dtype, mode):
    _, runs = half
    off, on = runs[dtype, "off"], runs[dtype, mode]
    assert on.stats["functional_check"]["bit_exact"] is True
    np.testing.assert_array_equal(on.outputs["y"], off.outputs["y"])


def test_very_sparse_weights_take_csr():
    w = pruned(0.97)
    x = RNG.standard_normal((1, K)).astype(np.float32)
    on = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x, compress_weights="auto")
    off = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x)
    fmt, nbytes, dense = stored(on)
    # 256-weight rows: 2-byte counts and indices; a bitmap would take K * N / 8 alone.
    assert fmt == "csr" and nbytes < K * N // 8
    assert nbytes >= 3 * int(np.count_nonzero(w))
    assert on.stats["functional_check"]["bit_exact"] is True
    np.testing.assert_array_equal(on.outputs["y"], off.outputs["y"])


def test_dense_weights_stay_dense_and_runs_unchanged():
    w = RNG.standard_normal((256, 128)).astype(np.float32)
    x = RNG.standard_normal((2, 256)).astype(np.float32)
    on = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x, compress_weights="auto")
    off = npusim.run(hw="tpu-v1", workload=dense_layer(w), inputs=x)
    assert stored(on) is None
    assert on.stats["total_cycles"] == off.stats["total_cycles"]
    assert on.stats["dram"] == off.stats["dram"]
    np.testing.assert_array_equal(on.outputs["y"], off.outputs["y"])


def test_bad_value_is_an_input_error():
    code, _, err = cli("run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--compress-weights",
                       "zip")
    assert code == 2 and "--compress-weights 'zip': expected auto, huffman or off" in err
