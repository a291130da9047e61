#!/usr/bin/python3
"""The figures of docs/llm.md "Figures": decode against batch, prefill against prompt length, and
decode of llama-7b-like at batch 1 against its bandwidth bound, from real `npusim generate` runs
(timing only, bf16, the presets' activation type).

Each run is its own process under /usr/bin/time, so its CPU seconds (user + system) and peak
resident memory are its own. Tables go to stdout as Markdown.

Usage: bench/llm_figures.py [--npusim build/sim/npusim]
           [--table batch|matrices|prefill|bound|all] [--model gpt2-small] [--hw tpu-v4-like-core]
           [--batches 1,4,16] [--matrix-batches 1,4,16,64,128,256] [--prompts 32,128,512]
           [--bound-hw tpu-v4-like,ascend-910-like]

- batch: decode tokens/s for --batches on --hw with a 128-token prompt and one decode step (the
  step at context 129), and the step's off-chip bytes; "bound" columns: the step's time if it
  moved its off-chip bytes at the memory's peak, and if its MACs ran at the chip's peak.
- matrices: gpt2-small's decode matrices alone (per layer q, k, v, o 768x768, FFN 768x3072 and
  3072x768, then the 768x50257 output projection: its 123.5 M weights, chained as one graph) run
  with `npusim run --batch B` for --matrix-batches: the weight stream's time against batch, where
  it turns from bandwidth-bound to compute-bound (the knee), without the per-sequence attention.
- prefill: the time to first token for --prompts at batch 1 (one new token, no decode step).
- bound: llama-7b-like, prompt 16, one decode step, batch 1, on each --bound-hw (tensor parallel
  across the chip's cores, `--parallel auto`): the step's time against (weight + KV-cache bytes) /
  peak bandwidth, the bound docs/llm.md and issue 22 name (the weights the step reads: all but the
  untied token embedding, of which it reads one row).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(args, out):
    """Runs npusim with `args` (writing to `out`) under /usr/bin/time: (its stats.json, CPU
    seconds, peak memory in GiB)."""
    cmd = ["/usr/bin/time", "-f", "%U %S %M", *args]
    sys.stderr.write("llm_figures.py: " + " ".join(args[1:]) + "\n")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"llm_figures.py: npusim exited {p.returncode}")
    user, system, rss_kib = p.stderr.strip().splitlines()[-1].split()
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    return stats, float(user) + float(system), int(rss_kib) / 1024 / 1024


def generate(npusim, tmp, hw, model, prompt, new, batch=1, extra=()):
    out = os.path.join(tmp, f"{hw}-{model}-{prompt}-{new}-{batch}")
    return timed([npusim, "generate", "--hw", hw, "--workload", model, "--prompt-tokens",
                  str(prompt), "--new-tokens", str(new), "--batch", str(batch), "--values", "off",
                  "--out", out, *extra], out)


def preset(npusim, hw):
    """The preset's JSON (clock, peak bandwidth, MACs per cycle)."""
    path = os.path.join(ROOT, "configs", "hw", hw + ".json")
    with open(path) as f:
        h = json.load(f)
    mu = h["matrix_unit"]
    macs = mu["rows"] * mu["cols"] * mu.get("count", 1) * h.get("cores", 1)
    return h["clock_mhz"] * 1e6, h["memory"]["bandwidth_gbps"] * 1e9, macs


def batch_table(a, tmp):
    clock, bw, macs = preset(a.npusim, a.hw)
    print(f"Decode against batch: {a.model} on {a.hw}, prompt 128, one decode step (context "
          "129), bf16, timing only\n")
    print("| batch | TPOT | decode tokens/s | off-chip bytes per step | at peak bandwidth | "
          "parameters x batch MACs at peak | simulation |")
    print("|---|---|---|---|---|---|---|")
    for b in a.batches:
        s, cpu, gib = generate(a.npusim, tmp, a.hw, a.model, 128, 2, b)
        step = s["steps"][1]
        traffic = step["dram_read_bytes"] + step["dram_write_bytes"]
        g = s["generation"]
        params = g["parameters"]
        mac_bound = b * params / macs / clock  # every parameter one MAC per token
        print(f"| {b} | {step['latency_s'] * 1e3:.3f} ms | {g['decode_tokens_per_s']:.0f} | "
              f"{traffic / 1e6:.0f} MB | {traffic / bw * 1e3:.3f} ms | {mac_bound * 1e3:.3f} ms | "
              f"{cpu:.0f} s CPU, {gib:.1f} GiB |", flush=True)


def gpt2_matrices(path):
    layers, x = [], "x"
    for i in range(12):
        for name, units in (("q", 768), ("k", 768), ("v", 768), ("o", 768), ("up", 3072),
                            ("down", 768)):
            layers.append({"name": f"h{i}.{name}", "op": "dense", "inputs": [x], "units": units})
            x = f"h{i}.{name}"
    layers.append({"name": "logits", "op": "dense", "inputs": [x], "units": 50257})
    g = {"schema_version": 1, "name": "gpt2-small-decode-matrices",
         "description": "gpt2-small's matrices of one decode step, chained (bench/llm_figures.py)",
         "batch": 1, "input": {"name": "x", "shape": [768], "dtype": "int8", "layout": "NHWC"},
         "layers": layers}
    with open(path, "w") as f:
        json.dump(g, f)
    return path


def matrices_table(a, tmp):
    clock, bw, macs = preset(a.npusim, a.hw)
    workload = gpt2_matrices(os.path.join(tmp, "gpt2-small-decode-matrices.json"))
    print(f"\ngpt2-small's decode matrices alone (123.5 M weights) on {a.hw}, bf16, timing only\n")
    print("| batch | step time | tokens/s | at peak bandwidth | MACs at peak | time / bandwidth "
          "bound | MXU utilization | simulation |")
    print("|---|---|---|---|---|---|---|---|")
    for b in a.matrix_batches:
        out = os.path.join(tmp, f"matrices-{b}")
        st, cpu, gib = timed([a.npusim, "run", "--hw", a.hw, "--workload", workload, "--batch",
                              str(b), "--dtype", "bf16", "--values", "off", "--out", out], out)
        t = st["latency_s"]
        traffic = st["dram"]["read_bytes"] + st["dram"]["write_bytes"]
        mac_bound = st["macs"] / macs / clock
        print(f"| {b} | {t * 1e3:.3f} ms | {b / t:.0f} | {traffic / bw * 1e3:.3f} ms | "
              f"{mac_bound * 1e3:.3f} ms | {t / (traffic / bw):.2f} | "
              f"{100 * st['mxu_utilization']:.1f} % | "
              f"{cpu:.0f} s CPU, {gib:.1f} GiB |",
              flush=True)


def prefill_table(a, tmp):
    print(f"\nPrefill against prompt length: {a.model} on {a.hw}, batch 1, bf16, timing only\n")
    print("| prompt | TTFT | prompt tokens/s | off-chip bytes | simulation |")
    print("|---|---|---|---|---|")
    for p in a.prompts:
        s, cpu, gib = generate(a.npusim, tmp, a.hw, a.model, p, 1)
        step = s["steps"][0]
        traffic = step["dram_read_bytes"] + step["dram_write_bytes"]
        print(f"| {p} | {step['latency_s'] * 1e3:.3f} ms | {p / step['latency_s']:.0f} | "
              f"{traffic / 1e6:.0f} MB | {cpu:.0f} s CPU, {gib:.1f} GiB |", flush=True)


def bound_table(a, tmp):
    print("\nllama-7b-like decode at batch 1 against its bandwidth bound (prompt 16, one decode "
          "step at context 17, bf16, timing only, --parallel auto)\n")
    print("| hardware | cores used | TPOT | bound (weights + KV) / peak | TPOT / bound | "
          "decode off-chip | link bytes per step | simulation |")
    print("|---|---|---|---|---|---|---|---|")
    for hw in a.bound_hw:
        clock, bw, _ = preset(a.npusim, hw)
        s, cpu, gib = generate(a.npusim, tmp, hw, "llama-7b-like", 16, 2)
        g, step = s["generation"], s["steps"][1]
        # Every parameter the step reads once (2 bytes in bf16; of the untied token embedding only
        # the step's row) and the cache it reads: layers x K and V x KV heads x 16 positions x
        # head size.
        with open(os.path.join(ROOT, "workloads", "llm", "llama-7b-like.json")) as f:
            m = json.load(f)
        weights = (g["parameters"] - m["vocab"] * m["hidden"]) * 2
        kv = m["layers"] * 2 * m["kv_heads"] * 16 * (m["hidden"] // m["heads"]) * 2
        bound = (weights + kv) / bw
        traffic = step["dram_read_bytes"] + step["dram_write_bytes"]
        print(f"| {hw} | {g['decode_cores']} | {step['latency_s'] * 1e3:.3f} ms | "
              f"{bound * 1e3:.3f} ms | {step['latency_s'] / bound:.3f} | "
              f"{traffic / step['latency_s'] / 1e9:.0f} GB/s ({traffic / 1e9:.2f} GB) | "
              f"{step['link_bytes']:.0f} | {cpu:.0f} s CPU, {gib:.1f} GiB |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build/sim/npusim"))
    ap.add_argument("--table", default="all",
                    choices=["batch", "matrices", "prefill", "bound", "all"])
    ap.add_argument("--model", default="gpt2-small")
    ap.add_argument("--hw", default="tpu-v4-like-core")
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--matrix-batches", default="1,4,16,64,128,256")
    ap.add_argument("--prompts", default="32,128,512")
    ap.add_argument("--bound-hw", default="tpu-v4-like,ascend-910-like")
    a = ap.parse_args()
    a.batches = [int(x) for x in a.batches.split(",")]
    a.matrix_batches = [int(x) for x in a.matrix_batches.split(",")]
    a.prompts = [int(x) for x in a.prompts.split(",")]
    a.bound_hw = a.bound_hw.split(",")
    if not os.access(a.npusim, os.X_OK):
        raise SystemExit(f"llm_figures.py: {a.npusim} not found; build npusim or pass --npusim")
    with tempfile.TemporaryDirectory(prefix="npusim-llm-") as tmp:
        if a.table in ("batch", "all"):
            batch_table(a, tmp)
        if a.table in ("matrices", "all"):
            matrices_table(a, tmp)
        if a.table in ("prefill", "all"):
            prefill_table(a, tmp)
        if a.table in ("bound", "all"):
            bound_table(a, tmp)


if __name__ == "__main__":
    main()
