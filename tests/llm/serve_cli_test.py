"""npusim serve from the command line (docs/serving.md): a request alone sees exactly the latencies
npusim generate simulates for the same programs; a synthetic trace keeps the scheduler's
invariants and is deterministic; a small KV cache makes requests wait or be preempted and they all
still finish; bad traces are located messages with exit code 2.

usage: serve_cli_test.py NPUSIM WORKDIR
"""

import csv
import json
import os
import subprocess
import sys

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256, "max_context": 64}
HW = ["--hw", "tpu-v4-like-core", "--dtype", "bf16"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def npusim_run(npusim, *args):
    return subprocess.run([npusim, *map(str, args)], capture_output=True, text=True)


def serve(npusim, work, name, model, trace_text, *extra):
    trace = os.path.join(work, name + ".csv")
    with open(trace, "w") as f:
        f.write(trace_text)
    out = os.path.join(work, name)
    p = npusim_run(npusim, "serve", *HW, "--workload", model, "--trace", trace, "--out", out,
                   *extra)
    assert p.returncode == 0, p.stderr
    stats = json.load(open(os.path.join(out, "stats.json")))
    with open(os.path.join(out, "requests.csv")) as f:
        rows = list(csv.DictReader(f))
    return stats, rows, out


def alone_equals_generate(npusim, work, model):
    # grid 8: a prompt of 8 and a context of 9 (past 8) are grid points, so no interpolation.
    stats, rows, _ = serve(npusim, work, "alone", model,
                           "id,arrival_s,prompt_tokens,output_tokens\nonly,0.5,8,3\n",
                           "--grid-tokens", "8")
    gen = os.path.join(work, "gen")
    p = npusim_run(npusim, "generate", *HW, "--workload", model, "--prompt-tokens", 8,
                   "--new-tokens", 2, "--values", "off", "--out", gen)
    assert p.returncode == 0, p.stderr
    steps = json.load(open(os.path.join(gen, "stats.json")))["steps"]
    ttft = float(rows[0]["ttft_s"])
    assert abs(ttft - steps[0]["latency_s"]) <= 1e-12 * max(1, ttft), (ttft, steps[0])
    # Two decode steps: contexts 9 and 10; the second interpolates between past 8 and 16.
    first_decode = steps[1]["latency_s"]
    finish = float(rows[0]["finish_s"])
    second = finish - float(rows[0]["first_token_s"]) - first_decode
    assert second >= first_decode * 0.999, (second, first_decode)
    assert rows[0]["output_tokens"] == "3" and float(rows[0]["arrival_s"]) == 0.5
    assert stats["serving"]["requests"] == 1 and stats["serving"]["steps"] == 3


def synthetic_trace(npusim, work, model):
    trace = os.path.join(work, "synthetic.csv")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_request_trace.py"), trace,
                    "--requests", "60", "--rate", "1e6", "--prompt", "uniform:4:40",
                    "--output", "uniform:1:20", "--max-tokens", "40", "--seed", "3"],
                   check=True, capture_output=True)
    text = open(trace).read()
    want = {r["id"]: r for r in csv.DictReader(open(trace))}
    trace_json = os.path.join(work, "syn-trace.json")
    stats, rows, _ = serve(npusim, work, "syn", model, text, "--max-batch", "8",
                           "--trace-json", trace_json)
    events = json.load(open(trace_json))["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len({e["tid"] for e in spans}) == 60, "a track per request"
    for e in spans:
        assert e["dur"] >= 0 and e["name"] in ("wait + prefill", "decode"), e
    assert any(e["ph"] == "C" and e["name"] == "KV blocks held" for e in events)
    again, rows2, _ = serve(npusim, work, "syn2", model, text, "--max-batch", "8")
    assert rows == rows2, "the same trace gives the same result"
    assert {k: v for k, v in stats.items() if k not in ("host", "trace")} == \
        {k: v for k, v in again.items() if k not in ("host", "trace")}, "and the same stats.json"
    assert stats["host"]["simulation_wall_s"] > 0
    s = stats["serving"]
    assert s["requests"] == 60 and len(rows) == 60
    for r in rows:
        w = want[r["id"]]
        assert r["output_tokens"] == w["output_tokens"], r
        assert float(r["arrival_s"]) <= float(r["first_token_s"]) <= float(r["finish_s"]), r
        assert float(r["ttft_s"]) <= float(r["e2e_s"]), r
    assert s["generated_tokens"] == sum(int(w["output_tokens"]) for w in want.values())
    assert s["kv_cache"]["peak_blocks"] <= s["kv_cache"]["capacity_blocks"]
    assert s["ttft_s"]["p50"] <= s["ttft_s"]["p90"] <= s["ttft_s"]["p99"] <= s["ttft_s"]["max"]
    assert s["tokens_per_s"] > 0 and s["energy_per_token_j"] > 0
    # A tiny cache (4 blocks of 16 tokens = 64 positions): requests wait or are preempted.
    per_token = s["kv_cache"]["bytes_per_token"]
    small, rows3, out = serve(npusim, work, "small", model, text, "--max-batch", "8",
                              "--kv-cache-bytes", 4 * 16 * per_token)
    k = small["serving"]
    assert k["kv_cache"]["capacity_blocks"] == 4 and k["kv_cache"]["peak_blocks"] <= 4
    assert len(rows3) == 60
    assert k["ttft_s"]["p99"] > s["ttft_s"]["p99"], "less cache, longer waits"
    # The requests arrive within microseconds, faster than steps run: 8 run at once with the
    # default cache, at most 4 (a block each at least) with the small one, the rest waiting.
    big_steps = list(csv.DictReader(open(os.path.join(work, "syn", "steps.csv"))))
    assert max(int(t["running"]) for t in big_steps) == 8
    steps = list(csv.DictReader(open(os.path.join(out, "steps.csv"))))
    assert max(int(t["kv_blocks_used"]) for t in steps) <= 4
    assert max(int(t["running"]) for t in steps) <= 4
    assert any(int(t["waiting"]) > 0 for t in steps)


def bad_input(npusim, work, model):
    trace = os.path.join(work, "bad.csv")
    with open(trace, "w") as f:
        f.write("id,arrival_s,prompt_tokens,output_tokens\na,0,8,2\nb,-1,8,2\n")
    p = npusim_run(npusim, "serve", *HW, "--workload", model, "--trace", trace)
    assert p.returncode == 2, p.stderr
    assert f"{trace}:3: column 'arrival_s': expected a number >= 0, got '-1'" in p.stderr, p.stderr
    with open(trace, "w") as f:
        f.write("id,arrival_s,prompt_tokens,output_tokens\nlong,0,60,10\n")
    p = npusim_run(npusim, "serve", *HW, "--workload", model, "--trace", trace)
    assert p.returncode == 2 and "exceed the model's context of 64 positions" in p.stderr, p.stderr


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "tiny.json")
    with open(model, "w") as f:
        json.dump(TINY, f)
    alone_equals_generate(npusim, work, model)
    synthetic_trace(npusim, work, model)
    bad_input(npusim, work, model)
    print("serve_cli_test: ok")


if __name__ == "__main__":
    main()
