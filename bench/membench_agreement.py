#!/usr/bin/env python3
"""Agreement of one HBM2 channel with the reference simulators (DRAM_REFERENCE.md table 4.1), as
a Markdown table: preset hbm2 against DRAMsim3 (default), or preset hbm2-pc against Ramulator 2.1
with the RoBaRaCoCh mapping (--ramulator).

Usage: bench/membench_agreement.py [--npusim EXE] [--requests N] [--ramulator]
Runs `EXE membench`; EXE defaults to $NPUSIM, else the most recent build*/sim/npusim.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# DRAMsim3, one HBM2 channel, DRAM_REFERENCE.md table 4.1:
# pattern: (GB/s, read latency avg, p50, p99, row hit, pJ/bit); None where not given.
REFERENCE = {
    "seq-read": (29.41, 145.6, 141, 509, 0.967, 1.97),
    "seq-write": (29.41, None, None, None, 0.967, 2.48),
    "random-read": (7.86, 771.9, 420, 4157, 0.000, 4.47),
    "mix-2r1w": (7.83, 924.1, 502, 5420, 0.000, 4.65),
    "seq-mix-2r1w": (19.53, 216.6, 270, 652, 0.912, 2.40),
    "stride-row": (7.85, 515.5, 103, 4758, 0.000, 4.47),
    "idle-random-read": (0.32, 51.0, 31, 316, 0.000, 34.6),
    "idle-seq-read": (0.32, 31.8, 17, 304, 0.919, 33.1),
}
# Ramulator 2.1, RoBaRaCoCh, one channel (mean latency only, no energy model).
RAMULATOR = {
    "seq-read": (16.54, 78.4, None, None, 0.968, None),
    "seq-write": (16.81, None, None, None, 0.968, None),
    "random-read": (9.87, 134.7, None, None, 0.000, None),
    "mix-2r1w": (9.25, 197.2, None, None, 0.000, None),
    "seq-mix-2r1w": (8.34, 201.4, None, None, 0.911, None),
    "stride-row": (9.90, 134.5, None, None, 0.000, None),
    "idle-random-read": (0.16, 49.0, None, None, 0.000, None),
    "idle-seq-read": (0.16, 32.3, None, None, 0.919, None),
}
TIER1 = {"seq-read", "seq-write", "random-read", "stride-row", "idle-random-read", "idle-seq-read"}


def membench_command(explicit):
    if explicit or os.environ.get("NPUSIM"):
        return [explicit or os.environ["NPUSIM"], "membench"]
    exes = glob.glob(os.path.join(ROOT, "build*/sim/npusim"))
    if not exes:
        sys.exit("membench_agreement: no build*/sim/npusim found; build one or pass --npusim")
    exes = [e for e in exes if not any(k in e.lower() for k in ("asan", "sanit", "debug"))] or exes
    return [max(exes, key=os.path.getmtime), "membench"]


def fmt(x, digits=2):
    if x is None:
        return "–"
    return ("%." + str(digits) + "f") % x if isinstance(x, float) else str(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--npusim")
    ap.add_argument("--requests", type=int, default=2000000)
    ap.add_argument("--ramulator", action="store_true")
    a = ap.parse_args()
    cmd = membench_command(a.npusim)
    memory, table, who = ("hbm2-pc", RAMULATOR, "Ram") if a.ramulator else ("hbm2", REFERENCE, "DS3")
    print("| pattern | tier | GB/s ours / %s (diff) | read lat avg ours / %s | p50 | p99 | "
          "row hit ours / %s | ACT/req | REF per 3900 cyc | pJ/bit ours / %s |" % ((who,) * 4))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for pattern, ref in table.items():
        n = 20000 if pattern.startswith("idle") else a.requests
        out = subprocess.run(cmd + ["--memory", memory, "--channels", "1", "--pattern", pattern,
                                    "--requests", str(n)], check=True, capture_output=True,
                             text=True).stdout
        top = json.loads(out)
        d = dict(top["memory"], acts_per_request=top["acts_per_request"])
        bw, lat, p50, p99, hit, pj = ref
        diff = 100.0 * (d["bandwidth_gbps"] - bw) / bw
        reads = d["read_bursts"] > 0
        print("| %s | %s | %.2f / %.2f (%+.1f %%) | %s / %s | %s / %s | %s / %s | %.3f / %.3f | %.3f "
              "| %.2f | %.2f / %.2f |" % (
                  pattern, 1 if pattern in TIER1 else 2, d["bandwidth_gbps"], bw, diff,
                  fmt(d["avg_read_latency_cycles"], 1) if reads else "–", fmt(lat, 1),
                  d["p50_read_latency_cycles"] if reads else "–", fmt(p50),
                  d["p99_read_latency_cycles"] if reads else "–", fmt(p99),
                  d["row_hit_rate"], hit, d["acts_per_request"],
                  d["ref_commands"] * 3900.0 / d["memory_cycles"], d["energy_pj_per_bit"],
                  pj if pj is not None else float("nan")))


if __name__ == "__main__":
    main()
