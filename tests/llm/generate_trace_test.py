"""npusim generate --trace / --html (docs/llm.md, "Traces and the HTML report"): one trace holds
the chosen programs one after the other, each slice where its program's cycles put it; tracing
changes no cycle; the HTML report carries the stats it draws; bad --trace-steps is exit 2.

usage: generate_trace_test.py NPUSIM WORKDIR
"""

import json
import os
import re
import subprocess
import sys

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256, "max_context": 64,
        "norm": "rms", "activation": "swiglu", "positions": "rotary"}


def generate(npusim, *args):
    return subprocess.run([npusim, "generate", *args], capture_output=True, text=True)


def check_trace(npusim, work, hw, model):
    base = ["--hw", hw, "--workload", model, "--prompt-tokens", "8", "--new-tokens", "6",
            "--values", "off", "--dtype", "bf16"]
    plain = os.path.join(work, "plain")
    p = generate(npusim, *base, "--out", plain)
    assert p.returncode == 0, p.stderr
    traced = os.path.join(work, "traced")
    html = os.path.join(work, "traced", "report.html")
    p = generate(npusim, *base, "--out", traced, "--trace", traced, "--trace-steps",
                 "prefill,2,last", "--html", html)
    assert p.returncode == 0, p.stderr
    stats = json.load(open(os.path.join(traced, "stats.json")))
    steps = stats["steps"]
    # Recording the timeline changes no cycle.
    assert [s["cycles"] for s in steps] == \
        [s["cycles"] for s in json.load(open(os.path.join(plain, "stats.json")))["steps"]]

    trace = json.load(open(os.path.join(traced, "trace.json")))
    other = trace["otherData"]
    clock = other["clock_mhz"]
    starts = [sum(s["cycles"] for s in steps[:k]) for k in range(len(steps))]
    want = [("prefill", 0), ("decode 2", 2), ("decode 5", 5)]
    assert [p["program"] for p in other["programs"]] == [w for w, _ in want], other["programs"]
    for prog, (_, k) in zip(other["programs"], want):
        assert prog["start_cycle"] == starts[k] and prog["cycles"] == steps[k]["cycles"], prog

    # Each program's processes: named after it, their slices inside its span of the time axis, at
    # its first cycle plus their own (ts in us of simulated time).
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    program_of = {}
    for pid, name in names.items():
        label = name.split(" · ")[0]
        assert label in ("prefill", "decode 2", "decode 5"), name
        program_of[pid] = label
    slices = {w: 0 for w, _ in want}
    for e in trace["traceEvents"]:
        if e["ph"] != "X":
            continue
        label = program_of[e["pid"]]
        k = dict(want)[label]
        a = e["args"]
        assert 0 <= a["start_cycle"] <= a["end_cycle"] <= steps[k]["cycles"], (label, a)
        # The simulated clock ticks every round(1e6 / MHz) ps; ts is in whole ns (+ 0.3).
        ns = ((starts[k] + a["start_cycle"]) * round(1e6 / clock) + 500) // 1000
        assert abs(e["ts"] - (ns + 0.3) / 1000) < 1e-9, (label, e["ts"], ns)
        slices[label] += 1
    assert all(n > 0 for n in slices.values()), slices
    # The decode steps of one model are the same program at another context: as many slices.
    assert slices["decode 2"] == slices["decode 5"], slices
    assert len(set(program_of.values())) == 3

    # The HTML report: the stats it draws, inlined.
    page = open(html, encoding="utf-8").read()
    m = re.search(r'<script id="npusim-data" type="application/json">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1))
    assert data["generation"] == stats["generation"]
    assert data["steps"] == steps
    assert data["decode_energy_j"] == stats["decode"]["energy"]["by_component_j"]
    cycles = [l["cycles"] for l in data["decode_layers"]]
    assert cycles == sorted(cycles, reverse=True) and 0 < len(cycles) <= 30
    assert cycles[0] == max(l["cycles"] for l in stats["decode"]["layers"])
    print("trace and html: ok")


def bad_input(npusim, work, hw, model):
    base = ["--hw", hw, "--workload", model, "--prompt-tokens", "8", "--new-tokens", "3",
            "--values", "off"]
    for args, message in [
        (["--trace", os.path.join(work, "bad"), "--trace-steps", "4"],
         "--trace-steps '4': decode step 4 is not in the run"),
        (["--trace", os.path.join(work, "bad"), "--trace-steps", "prefill,,1"],
         "--trace-steps 'prefill,,1': an empty item"),
        (["--trace", os.path.join(work, "bad"), "--trace-steps", "first"],
         "--trace-steps 'first': 'first' is not a step"),
        (["--trace-steps", "1"], "--trace-steps needs --trace DIR or --trace-json FILE"),
    ]:
        p = generate(npusim, *base, *args)
        assert p.returncode == 2, f"{args}: exit {p.returncode}\n{p.stderr}"
        assert message in p.stderr, f"{args}: expected\n  {message}\nin\n  {p.stderr}"
    print("bad input: ok")


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "tiny.json")
    with open(model, "w") as f:
        json.dump(TINY, f)
    # Two cores: each program's chip and both cores are processes of their own.
    check_trace(npusim, work, "tpu-v4-like", model)
    bad_input(npusim, work, "tpu-v4-like-core", model)
    print("ok")


if __name__ == "__main__":
    main()
