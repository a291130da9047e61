"""Long prompts (docs/llm.md "Long prompts"): where the causal mask of all heads' scores would not
tile with every query row in one layer row, the prefill runs its attention per block of query rows
(and the keys' rotation and learned positions per block of positions).

On the `edge` preset (512 KiB unified buffer, 64 KiB accumulators), one-layer decoders with 8
heads of size 128:
- values against NumPy (generate_numpy_test's independent float model), bf16, a 300-token prompt:
  a Llama-style one with grouped-query attention (4 KV heads): attention in blocks of 32 query
  rows (the last one 12), keys rotated in blocks of 128 positions (the last 44); a GPT-2-style one, its learned positions in
  blocks of 32. Cosine >= 0.999 and the same greedy ids; the Llama one in int8 must also pass
  npusim's own bit-exact check;
- timing only, the Llama one at its whole context (511 tokens and one new: 32 blocks of 16 query rows);
- a prompt whose single query row of scores does not tile is refused before anything runs, by
  generate and by serve, with exit 2 and the reason.

usage: long_prompt_test.py NPUSIM WORKDIR
"""

import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_numpy_test as ref  # noqa: E402


def npusim_run(npusim, *args):
    return subprocess.run([npusim, *map(str, args)], capture_output=True, text=True)


def values_against_numpy(npusim, work):
    # bf16, one row of a block of R query rows: 8 heads x R x 300 scores, twice (double-buffered),
    # plus the bias (4 bytes a channel): 10800 R bytes <= 524288 for R <= 48 -> 32; keys: 4 x 128
    # x R, 2560 R bytes -> 128; GPT-2's positions 1 x 1024 x R, 8192 R + 128 bytes -> 32.
    ref.LAYERS, ref.HIDDEN, ref.HEADS, ref.FFN, ref.VOCAB, ref.CONTEXT = 1, 1024, 8, 256, 256, 512
    ref.PROMPT = 300
    def layers(stats, part):
        return [l["name"] for l in stats["prefill"]["layers"] if l["name"].endswith(part)]

    llama = ref.run_case(npusim, os.path.join(work, "numpy"), "llama", "bf16", kv_heads=4,
                         hw="edge", new=2)
    assert len(layers(llama, "_affine")) > 0
    assert layers(llama, "causal_affine") == [], "the 300-token prefill should run in blocks"
    assert len([n for n in layers(llama, "_affine") if ".causal" in n]) == 10  # 9 x 32 + 12
    assert len([n for n in layers(llama, "_cos_affine") if ".key_rotary" in n]) == 3  # 128+128+44
    gpt2 = ref.run_case(npusim, os.path.join(work, "numpy"), "gpt2", "bf16", kv_heads=8,
                        hw="edge", new=2)
    assert len([n for n in layers(gpt2, "_affine") if n.startswith("positions")]) == 10  # 9 x 32 + 12
    ref.run_case(npusim, os.path.join(work, "numpy"), "llama", "int8", kv_heads=4, hw="edge",
                 new=1)


def whole_context_timing(npusim, work):
    model = os.path.join(work, "numpy", "tiny-llama.json")  # written by values_against_numpy
    cycles = {}
    for prompt in (300, 511):
        out = os.path.join(work, f"timing-{prompt}")
        p = npusim_run(npusim, "generate", "--hw", "edge", "--workload", model, "--dtype", "bf16",
                       "--prompt-tokens", prompt, "--new-tokens", 1, "--values", "off",
                       "--out", out)
        assert p.returncode == 0, p.stdout + p.stderr
        stats = json.load(open(os.path.join(out, "stats.json")))
        cycles[prompt] = stats["generation"]["prefill_cycles"]
    assert cycles[511] > cycles[300], cycles
    print(f"prefill cycles on edge: {cycles}")


def refused(npusim, work):
    # int8: one query row of 32 heads x 8191 scores, twice, is 512 KiB, and the bias 32 KiB more:
    # beyond edge's 512 KiB buffer even one row at a time.
    big = {"schema_version": 1, "kind": "decoder", "name": "wide", "layers": 1, "hidden": 512,
           "heads": 32, "ffn": 512, "vocab": 64, "max_context": 8192}
    model = os.path.join(work, "wide.json")
    with open(model, "w") as f:
        json.dump(big, f)
    reason = ("a prefill of {} tokens does not fit: the causal mask of one query row (32 heads x {} "
              "positions) does not tile in edge's unified buffer of 524288 bytes")
    p = npusim_run(npusim, "generate", "--hw", "edge", "--workload", model, "--prompt-tokens",
                   8191, "--new-tokens", 1, "--values", "off", "--out", os.path.join(work, "w"))
    assert p.returncode == 2 and reason.format(8191, 8191) in p.stderr, p.stderr
    trace = os.path.join(work, "wide.csv")
    with open(trace, "w") as f:
        f.write("id,arrival_s,prompt_tokens,output_tokens\nshort,0,16,2\nlong,1,8000,192\n")
    p = npusim_run(npusim, "serve", "--hw", "edge", "--workload", model, "--trace", trace,
                   "--out", os.path.join(work, "ws"))
    assert p.returncode == 2 and reason.format(8192, 8192) in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(work, "ws", "stats.json"))


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    refused(npusim, work)
    values_against_numpy(npusim, work)
    whole_context_timing(npusim, work)
    print("ok")


if __name__ == "__main__":
    main()
