"""The sweep driver end to end on small networks: local jobs and a Dask cluster agree, resuming
skips finished runs, failing points are recorded, sampling is reproducible."""

import csv
import json
import os

import pytest
from conftest import dse, write_spec
from npusim_dse.results import is_host_column

SMALL = {
    "description": "edge arrays on mnist-cnn and a tiny unified buffer it does not fit",
    "base": "edge",
    "workloads": ["mnist-cnn"],
    "parameters": [
        {"name": "array", "pointer": ["/matrix_unit/rows", "/matrix_unit/cols"],
         "values": [8, 16]},
        {"name": "ub", "pointer": "/buffers/unified_buffer/capacity_bytes",
         "values": [2048, 524288], "labels": ["2KiB", "512KiB"]},
    ],
}


def read_rows(path, drop_wall_time=True):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if drop_wall_time:
        for r in rows:
            for c in [c for c in r if is_host_column(c)]:
                r.pop(c)
    return rows


def test_local_sweep_writes_a_row_per_point_and_records_failures(tmp_path, npusim):
    spec = write_spec(tmp_path, SMALL)
    r = dse([spec, "--out", str(tmp_path / "out"), "--jobs", "2"], npusim)
    assert r.returncode == 0, r.stderr
    rows = read_rows(tmp_path / "out" / "results.csv")
    assert [(x["array"], x["ub"]) for x in rows] == [
        ("8", "2KiB"), ("8", "512KiB"), ("16", "2KiB"), ("16", "512KiB")]
    for x in rows:
        # The parameters reached the hardware npusim ran.
        assert x["hw.matrix_unit.rows"] == x["array"] == x["hw.matrix_unit.cols"]
        assert x["hw.buffers.unified_buffer.capacity_bytes"] == {"2KiB": "2048",
                                                                 "512KiB": "524288"}[x["ub"]]
        if x["ub"] == "2KiB":  # a failing point, not a failed sweep
            # 16x16: pool1 needs 4224 bytes (conv1 with pool1 in its epilogue needs more, so pool1
            # stays a layer); 8x8: conv1 and pool1 fuse and fit, fc1's 5408-byte input row does not.
            assert x["status"] == "failed"
            first = {"16": "pool1", "8": "fc1"}[x["array"]]
            assert f"layer '{first}' does not fit" in x["error"], x["error"]
            assert x["total_cycles"] == ""
        else:
            assert x["status"] == "ok" and x["error"] == ""
            assert int(x["total_cycles"]) > 0 and float(x["latency_s"]) > 0
            assert x["functional_check.bit_exact"] == "true"
    # A bigger array is faster on this network.
    ok = {x["array"]: int(x["total_cycles"]) for x in rows if x["status"] == "ok"}
    assert ok["16"] < ok["8"]
    # Each run's directory holds what ran and what npusim wrote.
    run_dir = tmp_path / "out" / "runs" / rows[1]["key"]
    hw = json.loads((run_dir / "hw.json").read_text())
    assert hw["matrix_unit"]["rows"] == 8
    assert json.loads((run_dir / "stats.json").read_text())["total_cycles"] == int(
        rows[1]["total_cycles"])
    assert "2 failed, 2 ok" in r.stderr


def test_dask_cluster_and_local_jobs_give_identical_csvs(tmp_path, npusim):
    distributed = pytest.importorskip("distributed")
    spec = write_spec(tmp_path, dict(SMALL, workloads=["mnist-cnn", "lenet5"]))
    local = dse([spec, "--out", str(tmp_path / "local"), "--jobs", "2"], npusim)
    assert local.returncode == 0, local.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = dse([spec, "--out", str(tmp_path / "dask"), "--scheduler",
                      cluster.scheduler_address], npusim)
    assert remote.returncode == 0, remote.stderr
    assert f"to run on {cluster.scheduler_address}" in remote.stderr
    a = read_rows(tmp_path / "local" / "results.csv")
    b = read_rows(tmp_path / "dask" / "results.csv")
    assert len(a) == 8
    assert a == b


def test_resume_skips_finished_runs(tmp_path, npusim):
    spec = write_spec(tmp_path, SMALL)
    out = tmp_path / "out"
    first = dse([spec, "--out", str(out)], npusim)
    assert first.returncode == 0, first.stderr
    assert "0 runs already done, 4 to run" in first.stderr
    before = read_rows(out / "results.csv")
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/result.json")}
    assert len(stamps) == 4  # failed points are finished too

    again = dse([spec, "--out", str(out)], npusim)
    assert again.returncode == 0, again.stderr
    assert "4 runs already done, 0 to run" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in out.glob("runs/*/result.json")} == stamps
    assert read_rows(out / "results.csv") == before

    # A run whose record is gone (killed mid-way) runs again, and only it.
    os.remove(out / "runs" / before[3]["key"] / "result.json")
    third = dse([spec, "--out", str(out)], npusim)
    assert "3 runs already done, 1 to run" in third.stderr
    assert read_rows(out / "results.csv") == before

    # A grown spec runs only its new points; --retry-failed runs the failed ones again.
    grown = json.loads(json.dumps(SMALL))
    grown["parameters"][0]["values"].append(32)
    write_spec(tmp_path, grown)
    fourth = dse([spec, "--out", str(out)], npusim)
    assert "4 runs already done, 2 to run" in fourth.stderr
    fifth = dse([spec, "--out", str(out), "--retry-failed"], npusim)
    assert "3 runs already done, 3 to run" in fifth.stderr
    assert read_rows(out / "results.csv")[:4] == before


def test_sampling_is_seeded_and_latin_hypercube_covers_each_stratum(tmp_path, npusim):
    spec = {
        "base": "edge", "workloads": ["mnist-cnn"],
        "parameters": [
            {"name": "clock", "pointer": "/clock_mhz", "range": {"from": 100.0, "to": 1100.0}},
            {"name": "array", "pointer": ["/matrix_unit/rows", "/matrix_unit/cols"],
             "range": {"from": 4, "to": 64, "scale": "log"}},
        ],
        "sampling": {"method": "lhs", "samples": 10, "seed": 7},
    }

    def listing(s):
        r = dse([write_spec(tmp_path, s), "--dry-run"], npusim)
        assert r.returncode == 0, r.stderr
        return [line.split("\t") for line in r.stdout.splitlines()[1:]]

    a = listing(spec)
    assert a == listing(spec)
    clocks = sorted(float(row[3]) for row in a)
    assert len(clocks) == 10
    assert [int((c - 100.0) // 100.0) for c in clocks] == list(range(10))
    assert all(4 <= int(row[4]) <= 64 for row in a)
    spec["sampling"]["seed"] = 8
    assert listing(spec) != a
    spec["sampling"] = {"method": "random", "samples": 6, "seed": 3}
    r = listing(spec)
    assert len(r) == 6 and r == listing(spec)


def test_constraints_on_inputs_and_results(tmp_path, npusim):
    spec = {
        "base": "edge", "workloads": [{"workload": "mnist-cnn", "label": "mnist"}],
        "parameters": [
            {"name": "rows", "pointer": "/matrix_unit/rows", "values": [8, 16, 32]},
            {"name": "cols", "pointer": "/matrix_unit/cols", "values": [8, 16, 32]},
        ],
        "constraints": {"inputs": ["rows * cols <= 256", "max(rows, cols) / min(rows, cols) <= 2"],
                        "results": ["total_cycles < 100000", "dram.read_bytes >= 0"]},
    }
    out = tmp_path / "out"
    r = dse([write_spec(tmp_path, spec), "--out", str(out)], npusim)
    assert r.returncode == 0, r.stderr
    assert "5 points excluded by the input constraints" in r.stderr
    rows = read_rows(out / "results.csv")
    assert [(x["rows"], x["cols"]) for x in rows] == [("8", "8"), ("8", "16"), ("16", "8"),
                                                      ("16", "16")]
    for x in rows:
        # The spec's label names the workload; stats.json's name for it moves aside.
        assert x["workload"] == "mnist" and x["stats.workload"] == "mnist-cnn"
        expected = "ok" if int(x["total_cycles"]) < 100000 else "infeasible"
        assert x["status"] == expected
        if expected == "infeasible":
            assert x["error"] == "violates 'total_cycles < 100000'"
    assert {x["status"] for x in rows} == {"ok", "infeasible"}
    # A figure stats.json does not have: each row says so, the sweep still completes.
    spec["constraints"]["results"] = ["no_such.figure_mm2 <= 100"]
    r = dse([write_spec(tmp_path, spec), "--out", str(out)], npusim)
    assert r.returncode == 0, r.stderr
    for x in read_rows(out / "results.csv"):
        assert x["status"] == "constraint-error"
        assert "no value named 'no_such.figure_mm2'" in x["error"]


def test_points_share_no_object(tmp_path, npusim):
    # `set` swaps in a whole memory object and a parameter edits inside it: every point must get
    # its own copy, or the last value would reach them all.
    spec = {
        "base": "edge", "workloads": ["mnist-cnn"],
        "set": {"/memory": {"model": "simple", "bandwidth_gbps": 12.8, "latency_ns": 100,
                            "capacity_bytes": 1073741824}},
        "parameters": [{"name": "bw", "pointer": "/memory/bandwidth_gbps", "values": [1, 100]}],
    }
    out = tmp_path / "out"
    r = dse([write_spec(tmp_path, spec), "--out", str(out)], npusim)
    assert r.returncode == 0, r.stderr
    rows = read_rows(out / "results.csv")
    assert [x["hw.memory.bandwidth_gbps"] for x in rows] == ["1", "100"]
    assert [x["memory.bandwidth_gbps"] for x in rows] == ["1.0", "100.0"]
    for x in rows:
        hw = json.loads((out / "runs" / x["key"] / "hw.json").read_text())
        assert hw["memory"]["bandwidth_gbps"] == int(x["bw"])
    assert int(rows[0]["total_cycles"]) > 2 * int(rows[1]["total_cycles"])


def test_timing_only_sweep_gives_the_same_figures(tmp_path, npusim):
    """run.values off and --values off reach npusim: every design figure equals the run with
    values, the functional check says it did not run."""
    spec = dict(SMALL, parameters=[SMALL["parameters"][0]],
                set={"/buffers/unified_buffer/capacity_bytes": 524288})
    on = dse([write_spec(tmp_path, spec, "on.json"), "--out", str(tmp_path / "on")], npusim)
    assert on.returncode == 0, on.stderr
    off = dse([write_spec(tmp_path, dict(spec, run={"values": "off"}), "off.json"), "--out",
               str(tmp_path / "off")], npusim)
    assert off.returncode == 0, off.stderr
    flag = dse([write_spec(tmp_path, spec, "flag.json"), "--out", str(tmp_path / "flag"),
                "--values", "off"], npusim)
    assert flag.returncode == 0, flag.stderr
    with_values = read_rows(tmp_path / "on" / "results.csv")
    assert [x["status"] for x in with_values] == ["ok", "ok"]
    assert all(x["values"] == "on" and x["functional_check.checked"] == "true"
               for x in with_values)
    for out in ("off", "flag"):
        timing_only = read_rows(tmp_path / out / "results.csv")
        assert len(timing_only) == len(with_values)
        for a, b in zip(with_values, timing_only):
            assert b["status"] == "ok" and b["values"] == "off", b
            assert b["functional_check.checked"] == "false"
            for column, value in a.items():
                # A timing-only run calibrates nothing (quantization.calibration "none").
                if column in ("key", "values") or column.startswith(
                        ("functional_check.", "quantization.calibration")):
                    continue
                assert b[column] == value, (out, column)
