"""npusim generate from the command line: the KV cache's traffic grows with the context, the stats
are complete, grouped-query attention reads fewer cache bytes, and bad input is a located message
with exit code 2 (docs/llm.md).

usage: generate_cli_test.py NPUSIM WORKDIR
"""

import json
import os
import subprocess
import sys

import numpy as np

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 4, "ffn": 128, "vocab": 256, "max_context": 64}


def run(npusim, *args):
    return subprocess.run([npusim, "generate", *args], capture_output=True, text=True)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def expect_error(npusim, args, message):
    p = run(npusim, *args)
    assert p.returncode == 2, f"{args}: exit {p.returncode}, expected 2\n{p.stderr}"
    assert message in p.stderr, f"{args}: expected\n  {message}\nin\n  {p.stderr}"


def cache_traffic(npusim, work):
    """Timing only: every decode step reads the cache of its length, so its off-chip reads grow
    by the bytes of one more cache row per layer, head and K/V."""
    out = os.path.join(work, "growth")
    model = write_json(os.path.join(work, "tiny.json"), TINY)
    p = run(npusim, "--hw", "tpu-v4-like-core", "--workload", model, "--prompt-tokens", "8",
            "--new-tokens", "6", "--values", "off", "--dtype", "bf16", "--out", out)
    assert p.returncode == 0, p.stderr
    s = json.load(open(os.path.join(out, "stats.json")))
    g = s["generation"]
    for key in ("ttft_s", "tokens_per_s", "prefill_cycles", "decode_cycles", "kv_cache_bytes",
                "energy_per_token_j", "prefill_dram_bytes_per_s", "decode_dram_bytes_per_s"):
        assert g[key] > 0, f"generation.{key} = {g[key]}"
    assert g["tpot_s"]["p50"] <= g["tpot_s"]["p99"]
    steps = s["steps"]
    assert [t["phase"] for t in steps] == ["prefill"] + ["decode"] * 5
    assert [t["context"] for t in steps[1:]] == [9, 10, 11, 12, 13]
    reads = [t["dram_read_bytes"] for t in steps[1:]]
    # layers 2 x K and V x 4 heads x 16 values x 2 bytes (bf16) per further position: each step
    # reads at least one more cache row of every head (and its scores are one wider)
    row = 2 * 2 * 4 * 16 * 2
    assert all(b - a >= row for a, b in zip(reads, reads[1:])), f"decode reads: {reads}"
    assert g["kv_cache_bytes"] == (8 + 6 - 1) * row, g["kv_cache_bytes"]
    assert g["prefill_cycles"] == steps[0]["cycles"]
    assert g["decode_cycles"] == sum(t["cycles"] for t in steps[1:])
    assert not os.path.exists(os.path.join(out, "tokens.npy"))
    # What a decode step writes off chip (docs/llm.md "Moves on chip"): the token's embedding, the
    # cache's new rows (K and V of every layer), each KV head's new key and value (the matrix
    # unit streams a matmul's second operand through the weight buffer) and the logits; the
    # attention's slices and concatenations stay in the unified buffer. 2 bytes a value.
    h, d, kv, layers = TINY["hidden"], TINY["hidden"] // TINY["heads"], TINY["kv_heads"], 2
    writes = 2 * (h + layers * 2 * kv * d + layers * kv * 2 * d + TINY["vocab"])
    assert all(t["dram_write_bytes"] == writes for t in steps[1:]), \
        f"decode writes {[t['dram_write_bytes'] for t in steps[1:]]}, expected {writes}"
    # Grouped-query attention: 1 KV head for 4 query heads reads a quarter of the cache.
    gqa = dict(TINY, kv_heads=1, name="tiny-gqa")
    model = write_json(os.path.join(work, "tiny-gqa.json"), gqa)
    out_gqa = os.path.join(work, "growth-gqa")
    p = run(npusim, "--hw", "tpu-v4-like-core", "--workload", model, "--prompt-tokens", "8",
            "--new-tokens", "6", "--values", "off", "--dtype", "bf16", "--out", out_gqa)
    assert p.returncode == 0, p.stderr
    s2 = json.load(open(os.path.join(out_gqa, "stats.json")))
    assert s2["generation"]["kv_cache_bytes"] * 4 == g["kv_cache_bytes"]
    print("cache traffic: decode reads", reads)


def bad_input(npusim, work):
    hw = ["--hw", "tpu-v4-like-core"]
    expect_error(npusim, hw + ["--workload", "gpt3"],
                 "--workload 'gpt3': no such file and no such decoder (built-in decoders: "
                 "gpt2-medium, gpt2-small, llama-1b-like, llama-7b-like)")
    bad = write_json(os.path.join(work, "bad.json"),
                     dict(TINY, heads=5, norm="batch", extra=1))
    for m in (bad + ": /heads: hidden 64 is not a multiple of heads 5",
              bad + ": /norm: expected one of \"layer\", \"rms\", got \"batch\"",
              bad + ": /extra: unknown key \"extra\""):
        expect_error(npusim, hw + ["--workload", bad], m)
    model = write_json(os.path.join(work, "tiny.json"), TINY)
    expect_error(npusim, hw + ["--workload", model, "--prompt-tokens", "60", "--new-tokens", "8"],
                 "--prompt-tokens 60 + --new-tokens 8: more than tiny's context of 64 positions")
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.array([[1, 2, 300]], np.int32))
    expect_error(npusim, hw + ["--workload", model, "--input", ids],
                 f"--input {ids}: token id 300 at [0, 2] is outside the vocabulary [0, 256)")
    # safetensors: truncated, a wrong shape, a missing tensor, an unsupported dtype.
    st = os.path.join(work, "short.safetensors")
    with open(st, "wb") as f:
        f.write((1000).to_bytes(8, "little") + b"{}")
    expect_error(npusim, hw + ["--workload", model, "--weights", st],
                 f"--weights {st}: header length 1000 does not fit the file's 10 bytes")

    def safetensors(path, entries):
        header = json.dumps(entries).encode()
        size = max([e["data_offsets"][1] for e in entries.values()] + [0])
        with open(path, "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header + bytes(size))
        return path

    st = safetensors(os.path.join(work, "shape.safetensors"),
                     {"wte.weight": {"dtype": "F32", "shape": [255, 64],
                                     "data_offsets": [0, 255 * 64 * 4]}})
    expect_error(npusim, hw + ["--workload", model, "--weights", st],
                 f"--weights {st}: tensor 'wte.weight': shape [255, 64], expected [256, 64] for "
                 "tiny")
    st = safetensors(os.path.join(work, "missing.safetensors"),
                     {"wte.weight": {"dtype": "BF16", "shape": [256, 64],
                                     "data_offsets": [0, 256 * 64 * 2]}})
    expect_error(npusim, hw + ["--workload", model, "--weights", st],
                 f"--weights {st}: 27 tensor(s) of tiny missing: wpe.weight, ln_f.weight, "
                 "ln_f.bias, h.0.ln_1.weight, h.0.ln_1.bias, ...")
    st = safetensors(os.path.join(work, "dtype.safetensors"),
                     {"wte.weight": {"dtype": "I64", "shape": [256, 64],
                                     "data_offsets": [0, 256 * 64 * 8]}})
    expect_error(npusim, hw + ["--workload", model, "--weights", st],
                 f"--weights {st}: tensor 'wte.weight': dtype I64: npusim reads F32, F16 and "
                 "BF16")
    expect_error(npusim, hw + ["--workload", model, "--new-tokens", "0"],
                 "--new-tokens 0: expected at least 1")
    print("bad input: ok")


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cache_traffic(npusim, work)
    bad_input(npusim, work)
    print("ok")


if __name__ == "__main__":
    main()
