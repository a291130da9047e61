"""npusim generate with tensor parallelism (docs/llm.md "Tensor parallelism"): the prefill and
the decode steps split Megatron-style over 2 and 4 cores, checked three ways. Each program's values against
npusim's own reference of the split graph (int8 bit for bit; exit code 0), the sampled ids against
that reference's greedy ids, and every step's logits against the independent NumPy model of
generate_numpy_test.py (bf16: cosine >= 0.999 and NumPy's ids; int8: cosine >= 0.98). The stats
must show the split (cores, the interconnect's bytes per step: the two all-reduces of every layer).

Cases: tiny Llama (4 query heads, 2 KV heads) on 2 cores (one KV group per core) in bf16 and on 4
cores (each KV head computed on the two cores whose queries read it) in int8; tiny GPT-2 (biases:
each added once) on 4 cores in bf16.

usage: generate_tp_test.py NPUSIM WORKDIR
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_numpy_test as ref  # noqa: E402

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEW = 4


def hw_with_cores(work, cores):
    """tpu-v4-like-core with `cores` TensorCores (as scripts/multicore_scaling.py builds it)."""
    with open(os.path.join(SOURCE, "configs", "hw", "tpu-v4-like-core.json")) as f:
        hw = json.load(f)
    hw["cores"] = cores
    hw["name"] = f"tpu-v4-like-core x{cores}"
    path = os.path.join(work, f"hw-{cores}.json")
    with open(path, "w") as f:
        json.dump(hw, f)
    return path


def check_split(stats, cores, element_bytes, flavour):
    g = stats["generation"]
    assert g["decode_cores"] == cores, g["decode_cores"]
    # Copies over the interconnect per step (batch 1, every tensor involved resident on chip):
    # per layer the two all-reduces' partial sums of cores 1.. to core 0 and the two sums back to
    # them (the last layer's second sum stays on core 0 for the final norm); GPT-2's first
    # residual (embedding + positions) is an on-chip tensor too and goes to every core as well.
    copies = (4 * ref.LAYERS - (0 if flavour == "gpt2" else 1)) * (cores - 1)
    expected = copies * ref.HIDDEN * element_bytes
    for step in stats["steps"]:
        assert "Megatron" in step["parallel"], step["parallel"]
        # The prefill moves the same tensors for each of the prompt's positions.
        rows = ref.PROMPT if step["phase"] == "prefill" else 1
        assert step["link_bytes"] == expected * rows, \
            f"{step['phase']}: {step['link_bytes']} link bytes, not {expected * rows}"
    assert g["decode_link_bytes_per_step"] == expected


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    two, four = hw_with_cores(work, 2), hw_with_cores(work, 4)
    cases = [("llama", "bf16", two, 2, 2), ("llama", "int8", four, 4, 1),
             ("gpt2", "bf16", four, 4, 2)]
    for flavour, dtype, hw, cores, element_bytes in cases:
        sub = os.path.join(work, f"{flavour}-{dtype}-{cores}")
        os.makedirs(sub, exist_ok=True)
        stats = ref.run_case(npusim, sub, flavour, dtype, kv_heads=2 if flavour == "llama" else 4,
                             hw=hw, new=NEW)
        check_split(stats, cores, element_bytes, flavour)
        print(f"{flavour} {dtype} on {cores} cores: "
              f"{stats['generation']['decode_link_bytes_per_step']:.0f} link bytes per step")
    print("ok")


if __name__ == "__main__":
    main()
