#!/usr/bin/python3
"""Where a decode step's time goes: reads the `decode` section of an `npusim generate` stats.json
(the last decode step's own stats, per layer) and prints, per kind of layer, the cycles during
which at least one layer of that kind runs (the union of their [start, end) intervals over the
cores), and the cycles during which no weight-streaming layer runs: the step's time that the
weight stream does not cover (docs/llm_bound.md).

Kinds, from the layer names of compiler/frontend/llm/decoder_graph.cpp: "weights" (a dense layer
reading at least --min-weight-bytes off chip: the projections, the FFN, the logits), "attention"
(the per-(sequence, KV head) sub-graphs `attn{s}_{g}.*` and the heads' `context` gather),
"all-reduce" (the residual adds `*_residual*`), "norm" (`norm*`), "rotary" (`*rotary*`, k{i} /
v{i}), and "other".

Usage: bench/decode_breakdown.py STATS_JSON [--min-weight-bytes 65536]
"""
import argparse
import json
import re


def kind(layer, min_weight_bytes):
    name = layer["name"]
    if layer["op"] in ("dense", "conv2d") and layer["dram_read_bytes"] >= min_weight_bytes:
        return "weights"
    if re.search(r"\.attn\d+_\d+\.", name) or name.endswith(".context"):
        return "attention"
    if "_residual" in name:
        return "all-reduce"
    if ".norm" in name or name.startswith("norm"):
        return "norm"
    if "rotary" in name or re.match(r"[kv]\d+", name):
        return "rotary"
    return "other"


def union(intervals):
    total, end = 0, None
    for b, e in sorted(intervals):
        if end is None or b > end:
            total += e - b
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stats")
    ap.add_argument("--min-weight-bytes", type=int, default=1 << 16)
    a = ap.parse_args()
    with open(a.stats) as f:
        stats = json.load(f)
    if "decode" not in stats:
        raise SystemExit(f"{a.stats}: no 'decode' section (a run with --new-tokens >= 2 has one)")
    step = stats["decode"]
    total = step["total_cycles"]
    by_kind = {}
    for layer in step["layers"]:
        if layer["end_cycle"] > layer["start_cycle"]:
            by_kind.setdefault(kind(layer, a.min_weight_bytes), []).append(
                (layer["start_cycle"], layer["end_cycle"]))
    print(f"decode step: {total} cycles, {len(step['layers'])} layers, "
          f"{step['dram']['read_bytes'] / 1e6:.1f} MB read off chip")
    print(f"| kind | layers | cycles any of them runs | share of the step |")
    print(f"|---|---|---|---|")
    for k in ("weights", "attention", "all-reduce", "norm", "rotary", "other"):
        iv = by_kind.get(k, [])
        u = union(iv)
        print(f"| {k} | {len(iv)} | {u} | {100 * u / total:.1f} % |")
    covered = union(by_kind.get("weights", []))
    print(f"cycles without a weight-streaming layer running: {total - covered} "
          f"({100 * (total - covered) / total:.1f} % of the step)")


if __name__ == "__main__":
    main()
