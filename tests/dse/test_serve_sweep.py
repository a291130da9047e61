"""Serving sweeps (`"command": "serve"`, docs/dse.md): a point's trace is the one
scripts/make_request_trace.py writes for its settings, each run equals `npusim serve` run by hand
on that trace with the point's flags, the module and the CLI give the same sweep, the figures
reach results.csv and plot_dse.py draws the serving fronts; bad serving specs are located errors."""

import csv
import json
import os
import subprocess
import sys

import pytest
from conftest import SCRIPTS, dse, run_script, write_spec
from npusim_dse import runner
from test_sweep import read_rows

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 2, "hidden": 64,
        "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256, "max_context": 64}


def spec(tmp_path):
    with open(tmp_path / "tiny.json", "w") as f:
        json.dump(TINY, f)
    return {
        "description": "max batch and request rate on a tiny decoder",
        "command": "serve",
        "base": "tpu-v4-like-core",
        "workloads": ["tiny.json"],
        "run": {"dtype": "bf16"},
        "serve": {"trace": {"requests": 12, "prompt": "uniform:4:24", "output": "uniform:2:8",
                            "seed": 3},
                  "kv_block_tokens": 8, "grid_tokens": 8, "slo_ttft": 0.001},
        "parameters": [
            {"name": "max_batch", "flag": "max_batch", "values": [1, 4]},
            {"name": "rate", "flag": "rate", "values": [100, 2000]},
        ],
    }


def test_serving_sweep_runs_npusim_serve_on_each_points_trace(tmp_path, npusim):
    path = write_spec(tmp_path, spec(tmp_path))
    r = dse([path, "--out", str(tmp_path / "out"), "--jobs", "2"], npusim)
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path / "out" / "results.csv")
    assert len(rows) == 4 and {row["status"] for row in rows} == {"ok"}
    by = {(row["max_batch"], row["rate"]): row for row in rows}
    for (mb, rate), row in by.items():
        run = tmp_path / "out" / "runs" / row["key"]
        # The trace: what make_request_trace.py writes for these settings.
        ref = tmp_path / f"ref-{rate}.csv"
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "make_request_trace.py"),
                            str(ref), "--requests", "12", "--rate", rate, "--prompt",
                            "uniform:4:24", "--output", "uniform:2:8", "--seed", "3"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert (run / "trace.csv").read_text() == ref.read_text()
        # The run: npusim serve by hand with the point's flags.
        hand = tmp_path / f"hand-{mb}-{rate}"
        p = subprocess.run([npusim, "serve", "--hw", str(run / "hw.json"), "--workload",
                            str(tmp_path / "tiny.json"), "--trace", str(ref), "--dtype", "bf16",
                            "--max-batch", mb, "--kv-block-tokens", "8", "--grid-tokens", "8",
                            "--slo-ttft", "0.001", "--out", str(hand)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        want = json.loads((hand / "stats.json").read_text())["serving"]
        got = json.loads((run / "stats.json").read_text())
        assert got["serving"] == want
        assert got["trace"] == "trace.csv"
        assert json.loads((run / "run.json").read_text())["trace"] == \
            f"synthetic rate {int(rate)}/s, 12 requests"
        assert (run / "requests.csv").read_text() == (hand / "requests.csv").read_text()
        assert float(row["serving.tokens_per_s"]) == want["tokens_per_s"]
        assert float(row["serving.ttft_s.p99"]) == want["ttft_s"]["p99"]
        assert int(float(row["serving.max_batch"])) == int(mb)
    # One request at a time queues: at the high rate its p99 TTFT is worse than with 4.
    assert float(by[("1", "2000")]["serving.ttft_s.p99"]) > \
        float(by[("4", "2000")]["serving.ttft_s.p99"])
    plots = tmp_path / "plots"
    p = run_script("plot_dse.py", [str(tmp_path / "out" / "results.csv"), "--out", str(plots)],
                   npusim)
    assert p.returncode == 0, p.stderr
    for name in ("serving_ttft_vs_throughput", "serving_tpot_vs_throughput",
                 "serving_energy_vs_throughput"):
        assert (plots / f"{name}.png").exists(), (name, p.stderr)
    with open(plots / "pareto.csv") as f:
        figures = {row["figure"] for row in csv.DictReader(f)}
    assert "serving_ttft_vs_throughput" in figures


def test_module_and_cli_give_the_same_serving_sweep(tmp_path, npusim):
    if runner.module_dir(npusim) is None:
        if os.environ.get("NPUSIM_DSE_EXPECT_MODULE"):
            pytest.fail(f"no Python module beside {npusim} (build the npusim_python target)")
        pytest.skip("this build has no Python module (sanitizer builds)")
    s = spec(tmp_path)
    s["parameters"] = s["parameters"][:1]
    s["serve"]["trace"]["rate"] = 500
    path = write_spec(tmp_path, s)
    a = dse([path, "--out", str(tmp_path / "module")], npusim)
    b = dse([path, "--out", str(tmp_path / "cli"), "--cli"], npusim)
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert "Python module" in a.stderr
    ra = read_rows(tmp_path / "module" / "results.csv")
    assert ra == read_rows(tmp_path / "cli" / "results.csv") and len(ra) == 2
    for row in ra:
        for name in ("requests.csv", "trace.csv", "run.json", "report.txt"):
            ta, tb = ((tmp_path / d / "runs" / row["key"] / name).read_text()
                      for d in ("module", "cli"))
            assert ta == tb, name
        sa, sb = (json.loads((tmp_path / d / "runs" / row["key"] / "stats.json").read_text())
                  for d in ("module", "cli"))
        sa.pop("host"), sb.pop("host")  # the wall time
        assert sa == sb


@pytest.mark.parametrize("change, message", [
    (lambda s: s["parameters"].append({"name": "b", "flag": "batch", "values": [1, 2]}),
     "/parameters/2/flag: expected one of hw, dtype, seed, fidelity, memory_fidelity, max_batch"),
    (lambda s: s["serve"].update(max_batch=0), "/serve/max_batch: expected an integer of at least 1"),
    (lambda s: s["serve"].update(trace="missing.csv"), "/serve/trace: 'missing.csv': cannot read"),
    (lambda s: s["serve"]["trace"].update(prompt="normal:3"), "/serve/trace/prompt: prompt"),
    (lambda s: s["serve"]["trace"].pop("requests"), "missing 'requests'"),
    (lambda s: s.update(workloads=["resnet50"]), "'resnet50' is not a built-in decoder"),
    (lambda s: s.pop("serve"), "/serve: missing required key 'trace'"),
    (lambda s: s.update(command="train"), "/command: expected one of run, serve"),
])
def test_bad_serving_specs_are_located_errors(tmp_path, npusim, change, message):
    s = spec(tmp_path)
    change(s)
    r = dse([write_spec(tmp_path, s), "--out", str(tmp_path / "out")], npusim)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
