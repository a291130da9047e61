"""The N:M sparse matrix unit (matrix_unit.sparsity, docs/systolic_array.md "N:M sparse tiles",
docs/compression.md): a compute-bound dense layer pruned 2:4 by numpy runs in at most 0.6x the
matrix-unit cycles on a 2:4 array that it takes on the same array without the sparse path, with
int8 outputs bit-identical to that run's (both bit-exact against npusim's reference) that track
numpy's float product; the pe fidelity gives the fast
one's cycles and values; the sparse path's events and area are priced; a layer without the
structure runs as on a dense array."""

import copy
import json
import os

import numpy as np
import pytest

import npusim
from conftest import SOURCE, cli, dense_layer

RNG = np.random.default_rng(25)
K, N, M = 512, 64, 384  # M (the batch) streams: the layer is compute-bound on a 32x32 array


def two_of_four(w):
    """The two largest magnitudes of every 4 consecutive rows (the reduction axis) of each column."""
    w = w.copy()
    for o in range(w.shape[1]):
        for r0 in range(0, w.shape[0], 4):
            col = np.abs(w[r0:r0 + 4, o])
            w[r0 + np.argsort(-col, kind="stable")[2:], o] = 0
    return w


W = two_of_four(RNG.standard_normal((K, N)).astype(np.float32) * 0.1)
W_DENSE = RNG.standard_normal((K, N)).astype(np.float32) * 0.1


def hardware(sparsity=None):
    with open(os.path.join(SOURCE, "configs", "hw", "tpu-v1.json"), encoding="utf-8") as f:
        hw = json.load(f)
    hw["name"] = "tpu-v1-32"
    hw["matrix_unit"].update(rows=32, cols=32)
    hw["vector_unit"]["lanes"] = 32
    if sparsity:
        hw["matrix_unit"]["sparsity"] = sparsity
    return hw


def mxu_cycles(stats):
    return sum(u["busy_cycles"] for name, u in stats["units"].items() if name.startswith("matrix"))


def run(w, hw, **kw):
    x = RNG.standard_normal((M, K)).astype(np.float32) if "inputs" not in kw else kw.pop("inputs")
    return npusim.run(hw=hw, workload=dense_layer(w), inputs=x, **kw), x


@pytest.fixture(scope="module")
def runs():
    x = np.random.default_rng(7).standard_normal((M, K)).astype(np.float32)
    sparse, _ = run(W, hardware("2:4"), inputs=x)
    dense, _ = run(W, hardware(), inputs=x)
    return x, sparse, dense


def test_two_of_four_layer_takes_at_most_0_6_of_the_dense_cycles(runs):
    _, sparse, dense = runs
    ratio = mxu_cycles(sparse.stats) / mxu_cycles(dense.stats)
    assert ratio <= 0.6, ratio
    assert ratio >= 0.4, ratio  # no more than the 2x the slots allow
    assert sparse.stats["total_cycles"] < dense.stats["total_cycles"]
    assert "2:4 sparse tiles of 64 rows of K" in sparse.stats["layers"][0]["tiling"]
    assert "sparse" not in dense.stats["layers"][0]["tiling"]


def test_values_bit_exact_and_equal_to_numpy(runs):
    x, sparse, dense = runs
    assert sparse.stats["functional_check"]["bit_exact"] is True
    np.testing.assert_array_equal(sparse.outputs["y"], dense.outputs["y"])
    assert dense.stats["functional_check"]["bit_exact"] is True
    # ... and they are the pruned layer's: they track numpy's float product with W.
    assert np.corrcoef(sparse.outputs["y"].ravel(), (x @ W).ravel())[0, 1] > 0.99


def test_pe_fidelity_gives_the_same_cycles_and_values(runs):
    x, sparse, _ = runs
    pe, _ = run(W, hardware("2:4"), inputs=x, fidelity="pe")
    assert pe.stats["total_cycles"] == sparse.stats["total_cycles"]
    assert mxu_cycles(pe.stats) == mxu_cycles(sparse.stats)
    np.testing.assert_array_equal(pe.outputs["y"], sparse.outputs["y"])


def test_sparse_path_is_priced(runs):
    _, sparse, dense = runs
    ev_s, ev_d = sparse.stats["events"], dense.stats["events"]
    tiles_k = K // 64 * 32  # 32 rows of slots per 64 rows of K
    assert ev_s["mac_int8"] == M * tiles_k * N
    assert ev_s["sparse_select_bits"] == M * tiles_k * N * 3 * 8
    assert ev_s["metadata_bit_loads"] > 0 and ev_d["metadata_bit_loads"] == 0
    assert ev_d["mac_int8"] == M * K * N
    assert (sparse.stats["area"]["by_component_mm2"]["matrix_unit"] >
            dense.stats["area"]["by_component_mm2"]["matrix_unit"])


def test_layer_without_the_structure_runs_dense():
    x = RNG.standard_normal((64, K)).astype(np.float32)
    a, _ = run(W_DENSE, hardware("2:4"), inputs=x)
    b, _ = run(W_DENSE, hardware(), inputs=x)
    assert a.stats["total_cycles"] == b.stats["total_cycles"]
    assert a.stats["events"]["sparse_select_bits"] == 0
    np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])


def test_bad_sparsity_is_an_input_error(tmp_path):
    hw = hardware("4:2")
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(hw))
    code, _, err = cli("run", "--hw", path, "--workload", "mnist-cnn", "--values", "off")
    assert code == 2
    assert "/matrix_unit/sparsity" in err and "1 <= N < M <= 16" in err
    hw = hardware("2:4")
    hw["matrix_unit"]["dataflow"] = "os"
    path.write_text(json.dumps(hw))
    code, _, err = cli("run", "--hw", path, "--workload", "mnist-cnn", "--values", "off")
    assert code == 2
    assert "needs dataflow \"ws\"" in err
