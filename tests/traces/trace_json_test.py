#!/usr/bin/env python3
"""Runs npusim with --trace on a small network and checks trace.json as a trace viewer would read
it: required fields, slices disjoint or nested on every thread (in nanoseconds as Perfetto converts
them, truncating, and in microseconds as chrome://tracing reads them), counters in time order,
every instruction of the program exactly once (counted in `npusim compile`), flow ids paired, and
the filters (--trace-layers, --trace-window, --trace-detail bursts). Usage: trace_json_test.py NPUSIM"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

NPUSIM = sys.argv[1]
HW, NET = "tpu-v1", "mnist-cnn"
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def run(args):
    p = subprocess.run([NPUSIM] + args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"npusim {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def program():
    """(id -> layer name) of every instruction, from the assembly."""
    layers, layer = {}, None
    for line in run(["compile", "--hw", HW, "--workload", NET]).splitlines():
        m = re.match(r"; ---- layer (\S+) ", line)
        if m:
            layer = m.group(1)
        m = re.match(r"\s+(\d+)\s+\S+\s+[A-Z_]+\s", line)
        if m:
            layers[int(m.group(1))] = layer
    return layers


def perfetto_ns(v):  # Perfetto's JSON importer: int64(value * 1000), truncating
    return int(float(v) * 1000.0)


def load(path):
    with open(path) as f:
        return json.load(f)


def check_format(trace, name):
    check(isinstance(trace.get("traceEvents"), list), f"{name}: traceEvents")
    other = trace.get("otherData", {})
    check(other.get("clock_mhz", 0) > 0, f"{name}: otherData.clock_mhz")
    events = trace["traceEvents"]
    threads = {}
    slices = defaultdict(list)
    counters = defaultdict(list)
    flows = defaultdict(list)
    for e in events:
        ph = e.get("ph")
        check(ph in ("M", "X", "s", "f", "C", "i"), f"{name}: unexpected phase {ph}")
        check(e.get("pid") == 1, f"{name}: {e} has no pid 1")
        if ph == "M":
            check(e["name"] in ("process_name", "thread_name", "thread_sort_index"), f"{e}")
            if e["name"] == "thread_name":
                threads[e["tid"]] = e["args"]["name"]
            continue
        check("ts" in e and float(e["ts"]) >= 0, f"{name}: {e} has no ts")
        if ph == "X":
            check(all(k in e for k in ("tid", "dur", "name", "cat", "args")), f"{name}: {e}")
            check(float(e["dur"]) >= 0, f"{name}: negative dur {e}")
            slices[e["tid"]].append(e)
        elif ph == "C":
            check(isinstance(e.get("args"), dict) and e["args"], f"{name}: counter {e}")
            counters[e["name"]].append(float(e["ts"]))
        elif ph in ("s", "f"):
            check("id" in e and "tid" in e, f"{name}: flow {e}")
            flows[e["id"]].append(e)
        elif ph == "i":
            check("tid" in e and e.get("s") == "t", f"{name}: instant {e}")
    for tid in slices:
        check(tid in threads, f"{name}: tid {tid} has no thread_name")
    # Slices of a thread: each one ends before the next begins (or nests inside it).
    for tid, ss in slices.items():
        # In floating-point microseconds ts + dur can round a hair past the next ts.
        for conv, label, eps in ((perfetto_ns, "ns", 0), (float, "us", 1e-9)):
            iv = sorted((conv(e["ts"]), conv(e["ts"]) + conv(e["dur"])) for e in ss)
            stack = []
            for b, en in iv:
                while stack and stack[-1] <= b + eps:
                    stack.pop()
                check(not stack or en <= stack[-1] + eps,
                      f"{name}: thread {threads.get(tid)}: slice [{b}, {en}] {label} overlaps one ending at {stack[-1] if stack else ''}")
                stack.append(en)
    for cname, ts in counters.items():
        check(ts == sorted(ts), f"{name}: counter {cname} not in time order")
        check(all(not math.isnan(v) for v in ts), f"{name}: counter {cname}")
    # Flows: one "s" and one "f" per id, the start not after the finish, each bound in a slice.
    for fid, fl in flows.items():
        phases = sorted(e["ph"] for e in fl)
        check(phases == ["f", "s"], f"{name}: flow {fid} has {phases}")
        if phases == ["f", "s"]:
            s = next(e for e in fl if e["ph"] == "s")
            f = next(e for e in fl if e["ph"] == "f")
            check(float(s["ts"]) <= float(f["ts"]), f"{name}: flow {fid} goes back in time")
            for e in (s, f):
                t = perfetto_ns(e["ts"])
                inside = any(perfetto_ns(x["ts"]) <= t <= perfetto_ns(x["ts"]) + perfetto_ns(x["dur"])
                             for x in slices[e["tid"]])
                check(inside, f"{name}: flow {fid} {e['ph']} is not inside a slice of its thread")
    return threads, slices, counters, flows


def instructions_of(slices):
    return [e for ss in slices.values() for e in ss if e["cat"] != "burst"]


def main():
    ids = program()
    check(len(ids) > 20, f"the program of {NET} has {len(ids)} instructions")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t")
        run(["run", "--hw", HW, "--workload", NET, "--trace", out, "--out", out])
        stats = load(os.path.join(out, "stats.json"))
        trace = load(os.path.join(out, "trace.json"))
        threads, slices, counters, flows = check_format(trace, "full")
        instrs = instructions_of(slices)
        seen = sorted(e["args"]["id"] for e in instrs)
        check(seen == sorted(ids), f"full: {len(seen)} instruction slices, the program has {len(ids)}"
              " (each exactly once)")
        for e in instrs:
            a = e["args"]
            check(ids.get(a["id"]) == a["layer"], f"full: instruction {a['id']} in layer {a['layer']}")
            for k in ("op", "tile", "cycles", "start_cycle", "end_cycle", "deps"):
                check(k in a, f"full: instruction {a['id']} has no {k}")
            check(a["cycles"] == a["end_cycle"] - a["start_cycle"], f"full: cycles of {a['id']}")
        check(max(e["args"]["end_cycle"] for e in instrs) == stats["total_cycles"],
              "full: the last slice ends at total_cycles")
        check(trace["otherData"]["total_cycles"] == stats["total_cycles"], "full: total_cycles")
        deps = sum(len(e["args"]["deps"]) for e in instrs)
        check(len(flows) == deps, f"full: {len(flows)} flows for {deps} dependencies")
        names = set(threads.values())
        for unit in ("dma_load", "dma_store", "matrix_unit0", "vector_unit", "dram ch0", "dram ch1"):
            check(unit in names, f"full: no thread {unit}")
        for c in ("dram ch0 bandwidth (GB/s)", "unified buffer in use (bytes)",
                  "matrix_unit0 utilization (%)"):
            check(c in counters, f"full: no counter {c}: {sorted(counters)}")
        # The bandwidth counters carry the bytes the memory moved (within rounding).
        window = None
        ev = [e for e in trace["traceEvents"] if e["ph"] == "C" and "bandwidth" in e["name"]]
        per_counter = defaultdict(list)
        for e in ev:
            per_counter[e["name"]].append((float(e["ts"]), e["args"]["value"]))
        moved = 0.0
        for pts in per_counter.values():
            for (t0, v), (t1, _) in zip(pts, pts[1:]):
                moved += v * (t1 - t0) * 1000.0  # GB/s x ns
        total = stats["dram"]["read_bytes"] + stats["dram"]["write_bytes"]
        check(abs(moved - total) <= 0.01 * total, f"full: bandwidth counters carry {moved:.0f} bytes, "
              f"the memory moved {total}")

        # Filters: two layers and a window.
        layer_names = [l["name"] for l in stats["layers"]]
        pick = [layer_names[0], layer_names[-1]]
        out2 = os.path.join(tmp, "f.json")
        lo, hi = stats["total_cycles"] // 4, stats["total_cycles"] // 2
        run(["run", "--hw", HW, "--workload", NET, "--trace-json", out2, "--trace-layers",
             ",".join(pick), "--trace-window", f"{lo}:{hi}", "--trace-detail", "bursts"])
        trace2 = load(out2)
        _, slices2, _, _ = check_format(trace2, "filtered")
        instrs2 = instructions_of(slices2)
        expected = sorted(e["args"]["id"] for e in instrs
                          if e["args"]["layer"] in pick and e["args"]["start_cycle"] < hi
                          and e["args"]["end_cycle"] > lo)
        check(sorted(e["args"]["id"] for e in instrs2) == expected,
              f"filtered: {len(instrs2)} slices, expected {len(expected)}")
        bursts = [e for ss in slices2.values() for e in ss if e["cat"] == "burst"]
        kept = {e["args"]["id"] for e in instrs2 if e["cat"] in ("dma_load", "dma_store")}
        check(bursts or not kept, "filtered: burst detail recorded no bursts")
        for b in bursts:
            check(b["args"]["start_cycle"] < hi and b["args"]["end_cycle"] > lo,
                  f"filtered: burst outside the window {b}")
            check(ids[b["args"]["instruction"]] in pick, f"filtered: burst of another layer {b}")
        cmds = [e for e in trace2["traceEvents"] if e["ph"] == "i"]
        check(cmds, "filtered: burst detail recorded no DRAM commands")
        check(all(lo <= e["args"]["cycle"] < hi for e in cmds), "filtered: command outside the window")

    if failures:
        for f in failures[:40]:
            print("FAIL:", f)
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("trace.json checks passed")


main()
