#!/usr/bin/python3
"""The table of docs/compression.md: each compression technique on tpu-v4-like, int8 runs.

For resnet50 and bert-encoder (npusim run, batch 1, values on): cycles, energy, off-chip bytes
and the output error (relative L2 norm of the dequantized int8 outputs against the float32
reference of the unpruned, unquantized network, --save-float-outputs of the dense run) of: int8
(no compression), 2:4 pruning on the chip as it is, 2:4 pruning on the chip with a 2:4 sparse
path (configs/sweeps/hw/tpu-v4-like-2of4.json), 50 % magnitude pruning (its weights dense or
stored compressed, --compress-weights auto), int4 weights (per-channel scales or in groups of 128,
--weight-group 128), and int4 with 2:4 pruning on the sparse chip; then bf16, and fp8 (E4M3 and
E5M2, tpu-v4-like-fp8) and W4A16 (bf16 runs with int4 weights and bf16 scales per channel or
per group of 128) against the same float32 reference. For llama-1b-like (npusim
generate, 16 prompt tokens, 4 new, timing only: its values take too long here): decode cycles per
token, energy per token and decode off-chip bytes per token, int8 against int4 weights (both
scalings), and the floating-point rows as above; pruning a 1 G-parameter decoder draws every weight into memory in each step's
compilation, so it (and compression, which needs pruned weights) is left out.

Usage: PYTHONPATH=build/python bench/compression_table.py [--nets resnet50 bert-encoder]
           [--float-only] [--only W4A16 bf16 ...] [--no-llama]
Prints a Markdown table.
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("NPUSIM_PYTHON", os.path.join(ROOT, "build", "python")))
import npusim  # noqa: E402

SPARSE_HW = os.path.join(ROOT, "configs", "sweeps", "hw", "tpu-v4-like-2of4.json")
TECHNIQUES = [  # (label, hw, options)
    ("int8", "tpu-v4-like", {}),
    ("2:4 pruned, dense array", "tpu-v4-like", {"prune": "2:4"}),
    ("2:4 pruned, 2:4 array", SPARSE_HW, {"prune": "2:4"}),
    ("50 % magnitude pruned", "tpu-v4-like", {"prune": "magnitude:0.5"}),
    ("50 % magnitude pruned, compressed off chip", "tpu-v4-like",
     {"prune": "magnitude:0.5", "compress_weights": "auto"}),
    ("int4 weights", "tpu-v4-like", {"weight_dtype": "int4"}),
    ("int4 weights, groups of 128", "tpu-v4-like", {"weight_dtype": "int4", "weight_group": 128}),
    ("int4 + 2:4 pruned, 2:4 array", SPARSE_HW, {"weight_dtype": "int4", "prune": "2:4"}),
]
# Floating-point runs (bf16, and fp8 on tpu-v4-like-fp8: tpu-v4-like whose matrix units also
# multiply fp8): checked within their bound rather than bit-exact.
FLOAT_TECHNIQUES = [  # (label, hw, dtype, options)
    ("bf16", "tpu-v4-like", "bf16", {}),
    ("fp8 E4M3 (matrix inputs; bf16 elsewhere)", "tpu-v4-like-fp8", "fp8-e4m3", {}),
    ("fp8 E5M2 (matrix inputs; bf16 elsewhere)", "tpu-v4-like-fp8", "fp8-e5m2", {}),
    ("W4A16: int4 weights, bf16 scale per channel", "tpu-v4-like", "bf16",
     {"weight_dtype": "int4"}),
    ("W4A16: int4 weights, bf16 scales per group of 128", "tpu-v4-like", "bf16",
     {"weight_dtype": "int4", "weight_group": 128}),
]


def dram_bytes(stats):
    return stats["dram"]["read_bytes"] + stats["dram"]["write_bytes"]


def rel_err(outputs, reference):
    num = sum(float(np.sum((outputs[k] - reference[k]) ** 2)) for k in reference)
    den = sum(float(np.sum(reference[k] ** 2)) for k in reference)
    return (num / den) ** 0.5


def run_net(net, int8=True):
    rows = []
    for label, hw, opts in TECHNIQUES if int8 else []:
        if not opts:
            base = npusim.run(hw="tpu-v4-like", workload=net, dtype="int8", float_outputs=True)
            reference = base.float_outputs
        r = base if not opts else npusim.run(hw=hw, workload=net, dtype="int8", **opts)
        s = r.stats
        assert s["functional_check"]["bit_exact"] is True, (net, label)
        rows.append((net, label, s["total_cycles"], s["energy"]["total_j"], dram_bytes(s),
                     f"{rel_err(r.outputs, reference):.4f}"))
    for label, hw, dtype, opts in FLOAT_TECHNIQUES:
        # Against the float32 reference on this run's own input (bf16 runs draw their random
        # input as bf16 values, int8 runs as int8 codes).
        r = npusim.run(hw=hw, workload=net, dtype=dtype, float_outputs=True, **opts)
        s = r.stats
        assert s["functional_check"]["within_tolerance"] is True, (net, label)
        rows.append((net, label, s["total_cycles"], s["energy"]["total_j"], dram_bytes(s),
                     f"{rel_err(r.outputs, r.float_outputs):.4f}"))
    return rows


def run_llama(int8=True):
    rows = []
    for label, opts in () if not int8 else (("int8", {}), ("int4 weights", {"weight_dtype": "int4"}),
                        ("int4 weights, groups of 128", {"weight_dtype": "int4",
                                                         "weight_group": 128})):
        g = npusim.generate("tpu-v4-like", "llama-1b-like", prompt_tokens=16, new_tokens=4,
                            dtype="int8", values=False, **opts).stats["generation"]
        steps = g["decode_steps"]
        decode_bytes = g["decode_dram_bytes_per_s"] * g["tpot_s"]["mean"]
        rows.append(("llama-1b-like decode (per token)", label, g["decode_cycles"] // steps,
                     g["decode_energy_per_token_j"], int(decode_bytes), "n/a (timing only)"))
    for label, hw, dtype, opts in FLOAT_TECHNIQUES:
        g = npusim.generate(hw, "llama-1b-like", prompt_tokens=16, new_tokens=4, dtype=dtype,
                            values=False, **opts).stats["generation"]
        steps = g["decode_steps"]
        decode_bytes = g["decode_dram_bytes_per_s"] * g["tpot_s"]["mean"]
        rows.append(("llama-1b-like decode (per token)", label, g["decode_cycles"] // steps,
                     g["decode_energy_per_token_j"], int(decode_bytes), "n/a (timing only)"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", nargs="*", default=["resnet50", "bert-encoder"])
    ap.add_argument("--no-llama", action="store_true")
    ap.add_argument("--float-only", action="store_true",
                    help="only the bf16, fp8 and W4A16 rows")
    ap.add_argument("--only", nargs="*", default=None,
                    help="only the floating-point rows whose label starts with one of these")
    args = ap.parse_args()
    if args.only is not None:
        FLOAT_TECHNIQUES[:] = [t for t in FLOAT_TECHNIQUES
                               if any(t[0].startswith(p) for p in args.only)]
    rows = []
    for net in args.nets:
        rows += run_net(net, not args.float_only)
    if not args.no_llama:
        rows += run_llama(not args.float_only)
    print("| workload | technique | cycles | energy (mJ) | off-chip bytes | output error |")
    print("|---|---|---:|---:|---:|---:|")
    for net, label, cycles, joules, nbytes, err in rows:
        print(f"| {net} | {label} | {cycles:,} | {joules * 1e3:.3f} | {nbytes:,} | {err} |")
    json.dump(rows, sys.stderr)


if __name__ == "__main__":
    main()
