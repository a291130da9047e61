"""Weight pruning (npusim run --prune, docs/compression.md) against an independent numpy
implementation: a two-layer MLP written as ONNX with numpy weights, pruned by numpy as the
definitions say, computed in float32 by numpy, must equal npusim's float32 reference of the
pruned network; the int8 run is bit-exact against npusim's reference as every run is."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npusim
from conftest import cli

RNG = np.random.default_rng(5)
W1 = RNG.standard_normal((64, 32)).astype(np.float32) * 0.2  # [in, out], MatMul's B
B1 = RNG.standard_normal(32).astype(np.float32) * 0.1
W2 = RNG.standard_normal((32, 10)).astype(np.float32) * 0.2
B2 = RNG.standard_normal(10).astype(np.float32) * 0.1


def mlp_bytes():
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["a"]),
             helper.make_node("MatMul", ["a", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in
             (("w1", W1), ("b1", B1), ("w2", W2), ("b2", B2))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       ["N", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def n_of_m(w, n, m):
    """At most n non-zeros in every m consecutive weights of each output column (axis 0 is the
    reduction axis); the largest magnitudes stay, ties to the earlier row."""
    w = w.copy()
    for o in range(w.shape[1]):
        for r0 in range(0, w.shape[0], m):
            col = w[r0:r0 + m, o]
            order = sorted(range(len(col)), key=lambda i: (-abs(col[i]), i))
            for i in order[n:]:
                w[r0 + i, o] = 0
    return w


def magnitude(w, f):
    flat = np.abs(w).ravel()
    k = int(f * flat.size)
    drop = np.lexsort((np.arange(flat.size), flat))[:k]  # by magnitude, ties by index
    out = w.copy().ravel()
    out[drop] = 0
    return out.reshape(w.shape)


def float_mlp(x, w1, w2):
    return np.maximum(x @ w1 + B1, 0) @ w2 + B2


@pytest.mark.parametrize("spec,prune", [
    ("2:4", lambda w: n_of_m(w, 2, 4)),
    ("1:8", lambda w: n_of_m(w, 1, 8)),
    ("magnitude:0.7", lambda w: magnitude(w, 0.7)),
])
def test_pruned_network_equals_numpy(spec, prune):
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    r = npusim.run(hw="tpu-v1", workload=mlp_bytes(), inputs=x, float_outputs=True, prune=spec)
    w1, w2 = prune(W1), prune(W2)
    expected = float_mlp(x, w1, w2)
    np.testing.assert_allclose(r.float_outputs["y"], expected, rtol=1e-4, atol=1e-5)
    assert r.stats["functional_check"]["bit_exact"] is True
    assert r.stats["pruning"]["method"] == spec
    rows = {s["layer"]: s for s in r.stats["weight_sparsity"]}
    assert sorted(s["nonzeros"] for s in rows.values()) == sorted(
        [int(np.count_nonzero(w1)), int(np.count_nonzero(w2))])
    # The int8 outputs track the pruned float network, not the dense one.
    q = r.outputs["y"]
    assert np.corrcoef(q.ravel(), expected.ravel())[0, 1] > 0.99


def test_global_pruning_uses_one_threshold():
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    r = npusim.run(hw="tpu-v1", workload=mlp_bytes(), inputs=x, float_outputs=True,
                   prune="global:0.5")
    mags = np.sort(np.abs(np.concatenate([W1.ravel(), W2.ravel()])))
    k = int(0.5 * mags.size)
    w1 = np.where(np.abs(W1) <= mags[k - 1], 0, W1)
    w2 = np.where(np.abs(W2) <= mags[k - 1], 0, W2)
    assert np.count_nonzero(w1) + np.count_nonzero(w2) == mags.size - k  # no ties in random data
    np.testing.assert_allclose(r.float_outputs["y"], float_mlp(x, w1, w2), rtol=1e-4, atol=1e-5)
    assert r.stats["pruning"]["nonzero_weights"] == mags.size - k


def test_a_model_that_comes_sparse_is_reported_and_bad_specs_exit_2(tmp_path):
    global W1, W2
    saved = W1, W2
    try:
        W1, W2 = n_of_m(saved[0], 2, 4), n_of_m(saved[1], 2, 4)
        path = tmp_path / "sparse.onnx"
        path.write_bytes(mlp_bytes())
    finally:
        W1, W2 = saved
    r = npusim.run(hw="tpu-v1", workload=str(path), values=False)
    assert r.stats["pruning"]["method"] == "none"
    assert r.stats["pruning"]["weight_density"] == 0.5
    assert all(s["nonzeros_per_4"] == 2 for s in r.stats["weight_sparsity"])
    code, _, err = cli("run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--prune", "2:2")
    assert code == 2
    assert "--prune '2:2': expected magnitude:F" in err
