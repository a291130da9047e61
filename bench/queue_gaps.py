#!/usr/bin/python3
"""Why a queue waits: reads a Chrome trace written by `npusim run --trace` or `npusim generate
--trace` and, for every DMA queue (or the tracks whose names contain --track), prints its busy
time (the union of its instructions' [start, end) cycles) against the span of the trace, and its
idle gaps grouped by what ended last among the deps of the instruction that ended the gap: the
unit, opcode and layer (its last dotted part) of that producer. A gap whose instruction had no
dep ending at its start is "no dep" (the queue had nothing ready: its previous instruction was
still in flight on another lane, or the memory's window was full).

Used for llama-1b-like's decode step in docs/llm.md ("Where the load queues wait").

Usage: bench/queue_gaps.py TRACE_JSON [--track dma] [--top 12]
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--track", default="dma", help="tracks whose name contains this")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    t = json.load(open(a.trace))
    thread = {}
    for e in t["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"].split(" #")[0]  # lanes: one track
    slices = [e for e in t["traceEvents"] if e["ph"] == "X" and "id" in e.get("args", {})]
    # Instruction ids are per program: key them by the program (a generate trace's program k has
    # the process ids 10000 k + those of one run, which are below 10000).
    by_id = {(e["pid"] // 10000, e["args"]["id"]): e for e in slices}
    tracks = collections.defaultdict(list)
    for e in slices:
        tracks[(e["pid"], thread.get((e["pid"], e["tid"]), "?"))].append(e)
    for (pid, name), xs in sorted(tracks.items()):
        if a.track not in name:
            continue
        xs.sort(key=lambda e: e["args"]["start_cycle"])
        first = xs[0]["args"]["start_cycle"]
        last = max(e["args"]["end_cycle"] for e in xs)
        busy, cur_s, cur_e = 0, None, None
        why, count = collections.Counter(), collections.Counter()
        for e in xs:
            s, en = e["args"]["start_cycle"], e["args"]["end_cycle"]
            if cur_e is not None and s > cur_e:
                busy += cur_e - cur_s
                deps = [by_id.get((pid // 10000, d)) for d in e["args"]["deps"]]
                deps = [d for d in deps if d is not None]
                blocker = max(deps, key=lambda d: d["args"]["end_cycle"], default=None)
                key = "no dep"
                if blocker is not None and blocker["args"]["end_cycle"] >= s - 2:
                    unit = thread.get((blocker["pid"], blocker["tid"]), "?").split(" ")[-1]
                    key = f"{unit} {blocker['name']} {blocker['args']['layer'].split('.')[-1]}"
                why[key] += s - cur_e
                count[key] += 1
                cur_s = s
            elif cur_s is None:
                cur_s = s
            cur_e = en if cur_e is None else max(cur_e, en)
        busy += cur_e - cur_s
        span = last - first
        print(f"{name} (pid {pid}): busy {busy} of {span} cycles ({100 * busy / span:.1f} %), "
              f"idle {span - busy}")
        for key, cycles in why.most_common(a.top):
            print(f"    {cycles:>10} cycles in {count[key]:>5} gaps after {key}")


if __name__ == "__main__":
    main()
