"""The sweep driver's two ways to run a point give the same sweep: worker processes through the
Python module of the build (the default when build/python is there) and one npusim process per
point (--cli): the same results.csv, and per run the same files and the same error messages."""

import json
import os

import pytest
from conftest import dse, write_spec
from npusim_dse import runner
from test_sweep import read_rows

SPEC = {
    "description": "arrays on two networks, one that does not fit and one invalid description",
    "base": "edge",
    "workloads": ["mnist-cnn", "lenet5"],
    "run": {"values": "off"},
    "parameters": [
        {"name": "array", "pointer": ["/matrix_unit/rows", "/matrix_unit/cols"],
         "values": [0, 8, 16]},
        {"name": "ub", "pointer": "/buffers/unified_buffer/capacity_bytes",
         "values": [2048, 524288]},
    ],
}


def test_module_workers_and_npusim_processes_give_the_same_sweep(tmp_path, npusim):
    if runner.module_dir(npusim) is None:
        if os.environ.get("NPUSIM_DSE_EXPECT_MODULE"):
            pytest.fail(f"no Python module beside {npusim} (build the npusim_python target)")
        pytest.skip("this build has no Python module (sanitizer builds)")
    spec = write_spec(tmp_path, SPEC)
    module = dse([spec, "--out", str(tmp_path / "module"), "--jobs", "2"], npusim)
    assert module.returncode == 0, module.stderr
    assert "worker processes (Python module)" in module.stderr
    cli = dse([spec, "--out", str(tmp_path / "cli"), "--jobs", "2", "--cli"], npusim)
    assert cli.returncode == 0, cli.stderr
    a = read_rows(tmp_path / "module" / "results.csv")
    b = read_rows(tmp_path / "cli" / "results.csv")
    assert len(a) == 12 and a == b
    statuses = {r["status"] for r in a}
    assert statuses == {"ok", "failed"}, statuses
    for row in a:
        m, c = (tmp_path / d / "runs" / row["key"] for d in ("module", "cli"))
        assert sorted(os.listdir(m)) == sorted(os.listdir(c))
        rm, rc = (json.loads((d / "result.json").read_text()) for d in (m, c))
        assert (rm["exit_code"], rm["error"]) == (rc["exit_code"], rc["error"])
        for name in ("config.resolved.json", "report.txt", "hw.json", "run.json"):
            if (c / name).exists():
                assert (m / name).read_text() == (c / name).read_text(), name
        if (c / "stats.json").exists():
            sm, sc = (json.loads((d / "stats.json").read_text()) for d in (m, c))
            sm.pop("host"), sc.pop("host")
            assert sm == sc
