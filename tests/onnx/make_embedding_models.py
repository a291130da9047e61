#!/usr/bin/env python3
"""Builds the embedding-lookup ONNX test model: an int64 graph input `input_ids` [batch, seq]
indexing an initializer table [vocab, hidden] with Gather (axis 0), the rows then feeding a MatMul
and a LayerNormalization, and (BERT's embedding block) an Add of position embeddings followed
by LayerNormalization. Writes the ids (int64 and int32), ids with one out of range, and the
outputs of independent numpy float code.

Usage: make_embedding_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import Builder, layernorm  # noqa: E402

VOCAB, HIDDEN, SEQ, BATCH, UNITS = 50, 16, 8, 2, 12


def embedding(out_dir):
    b = Builder("embedding", 61)
    table = b.weight("table", [VOCAB, HIDDEN], scale=1.0)
    w = b.weight("w", [HIDDEN, UNITS])
    b.const("gamma", b.rng.uniform(0.5, 1.5, [HIDDEN]).astype(np.float32))
    b.const("beta", b.rng.uniform(-0.5, 0.5, [HIDDEN]).astype(np.float32))
    b.node("Gather", [table, "input_ids"], ["emb"], axis=0)
    b.node("MatMul", ["emb", w], ["y"])
    b.node("LayerNormalization", ["emb", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5)
    # BERT's embedding block: position embeddings added, then LayerNormalization.
    b.const("pos", (b.rng.standard_normal([SEQ, HIDDEN]) * 0.5).astype(np.float32))
    b.node("Add", ["emb", "pos"], ["emb_pos"])
    b.node("LayerNormalization", ["emb_pos", "gamma", "beta"], ["ln_pos"], axis=-1, epsilon=1e-5)
    ids = b.rng.integers(0, VOCAB, [BATCH, SEQ]).astype(np.int64)
    ids[0, :3] = [0, VOCAB - 1, 0]  # both ends of the table, and a repeated id
    i = b.inits
    emb = i["table"][ids]
    expected = {"emb": emb, "y": emb @ i["w"], "ln": layernorm(emb, i["gamma"], i["beta"], 1e-5),
                "ln_pos": layernorm(emb + i["pos"], i["gamma"], i["beta"], 1e-5)}
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [BATCH, SEQ])]
    outputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
               for k, v in expected.items()]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in i.items()]
    graph = helper.make_graph(b.nodes, b.name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="npusim-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, b.name + ".onnx"))
    d = os.path.join(out_dir, b.name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "ids.npy"), ids)
    np.save(os.path.join(d, "ids32.npy"), ids.astype(np.int32))
    bad = ids.copy()
    bad[1, 5] = VOCAB  # one past the table's last row
    np.save(os.path.join(d, "bad_ids.npy"), bad)
    for name, value in expected.items():
        np.save(os.path.join(d, name + ".npy"), np.asarray(value, dtype=np.float32))
    np.save(os.path.join(d, "init_table.npy"), i["table"])


def save_bad(b, inputs, outputs, out_dir):
    """A model that must be refused: written as built, with no inputs or expected outputs."""
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in b.inits.items()]
    model = helper.make_model(helper.make_graph(b.nodes, b.name, inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, b.name + ".onnx"))


def embedding_bad(out_dir):
    """Token ids that also feed a Cast: not an embedding lookup alone, an import error."""
    b = Builder("embedding_bad", 62)
    table = b.weight("table", [VOCAB, HIDDEN], scale=1.0)
    b.node("Gather", [table, "input_ids"], ["emb"], axis=0)
    b.node("Cast", ["input_ids"], ["ids_f"], name="ids_cast", to=TensorProto.FLOAT)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [BATCH, SEQ])]
    outputs = [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN]),
               helper.make_tensor_value_info("ids_f", TensorProto.FLOAT, [BATCH, SEQ])]
    save_bad(b, inputs, outputs, out_dir)


def embedding_reshape_bad(out_dir):
    """Token ids flattened by a Reshape before the lookup: a shape npusim does not look ids up
    in, an import error (a Reshape that keeps [batch, sequence] is followed; the torch 2.x
    fixture hf_gpt2_tiny has one)."""
    b = Builder("embedding_reshape_bad", 63)
    table = b.weight("table", [VOCAB, HIDDEN], scale=1.0)
    b.const("flat", np.array([-1], dtype=np.int64))
    b.node("Reshape", ["input_ids", "flat"], ["ids_flat"], name="ids_flatten")
    b.node("Gather", [table, "ids_flat"], ["emb"], axis=0)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [BATCH, SEQ])]
    outputs = [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [BATCH * SEQ, HIDDEN])]
    save_bad(b, inputs, outputs, out_dir)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    embedding(out)
    embedding_bad(out)
    embedding_reshape_bad(out)
