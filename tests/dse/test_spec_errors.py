"""A bad spec is refused before anything runs: exit code 2, every problem named with the spec file
and the JSON pointer of its place, and no results left behind."""

import os

import pytest
from conftest import dse, write_spec

GOOD = {
    "base": "edge",
    "workloads": ["mnist-cnn"],
    "parameters": [{"name": "array", "pointer": ["/matrix_unit/rows", "/matrix_unit/cols"],
                    "values": [8, 16]}],
}


def edit(**changes):
    spec = {k: v for k, v in GOOD.items()}
    for k, v in changes.items():
        if v is None:
            spec.pop(k)
        else:
            spec[k] = v
    return spec


def param(**p):
    return edit(parameters=[dict({"name": "x"}, **p)])


CASES = {
    "unknown_pointer": (
        param(pointer="/matrix_unit/rowz", values=[8]),
        "/parameters/0/pointer: unknown JSON pointer /matrix_unit/rowz into the hardware "
        "description of edge (npusim presets --show edge) (keys there: cols, count, dataflow, "
        "kind, rows, weight_double_buffer)"),
    "unknown_pointer_in_a_list": (
        param(pointer=["/matrix_unit/rows", "/buffers/ub/capacity_bytes"], values=[8]),
        "/parameters/0/pointer/1: unknown JSON pointer /buffers/ub/capacity_bytes"),
    "unknown_pointer_in_set": (
        edit(set={"/memory/bandwidth": 0}),
        "/set/~1memory~1bandwidth: unknown JSON pointer /memory/bandwidth"),
    "empty_values": (
        param(pointer="/clock_mhz", values=[]),
        "/parameters/0/values: expected a non-empty array (an empty range)"),
    "empty_range": (
        param(pointer="/clock_mhz", range={"from": 900, "to": 100, "step": 100}),
        "/parameters/0/range: empty range: from 900 is above to 100"),
    "unknown_preset": (
        edit(base="tpu-v9"),
        "/base: hardware 'tpu-v9': --show 'tpu-v9': no such file and no such preset (presets: "
        "ascend-910-like, ascend-like, edge, tpu-v1-hbm, tpu-v1, tpu-v4-like-core, tpu-v4-like-fp8, "
        "tpu-v4-like)"),
    "unknown_workload": (
        edit(workloads=["mnist-cnm"]),
        "/workloads/0/workload: 'mnist-cnm' is not in the zoo"),
    "missing_workload_file": (
        edit(workloads=["nets/none.json"]),
        "/workloads/0/workload: 'nets/none.json': cannot read"),
    "unknown_key": (
        edit(sweep="grid"),
        "/sweep: unknown key (expected one of: description, command, base, set, workloads, run, "
        "serve, parameters, sampling, constraints)"),
    "unknown_parameter_key": (
        param(pointer="/clock_mhz", values=[100], step=2),
        "/parameters/0/step: unknown key"),
    "wrong_value_type": (
        param(pointer="/matrix_unit/dataflow", values=["ws", 3]),
        "/parameters/0/values/1: expected a string for /matrix_unit/dataflow (like edge's \"ws\"), "
        "got 3"),
    "bad_flag_value": (
        param(flag="dtype", values=["int8", "fp16"]),
        "/parameters/0/values/1: expected int8 or bf16, got \"fp16\""),
    "grid_of_a_continuous_range": (
        param(pointer="/clock_mhz", range={"from": 100, "to": 900}),
        "/parameters/0/range: grid sampling needs a finite set"),
    "bad_constraint_syntax": (
        edit(constraints={"results": ["total_cycles <"]}),
        "/constraints/results/0: 'total_cycles <': invalid syntax"),
    "constraint_outside_the_language": (
        edit(constraints={"results": ["__import__('os').system('true')"]}),
        "/constraints/results/0: '__import__('os').system('true')': only these functions may be "
        "called"),
    "input_constraint_on_a_figure": (
        edit(constraints={"inputs": ["total_cycles < 5"]}),
        "/constraints/inputs/0: 'total_cycles < 5': total_cycles is not a parameter"),
    "no_workloads": (edit(workloads=[]), "/workloads: expected a non-empty array of workloads"),
    "missing_base": (edit(base=None), "/: missing required key 'base'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec_is_a_clear_error(tmp_path, npusim, case):
    spec, message = CASES[case]
    path = write_spec(tmp_path, spec)
    r = dse([path, "--out", str(tmp_path / "out")], npusim)
    assert r.returncode == 2, r.stderr
    assert f"dse.py: error: {path}: {message}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not os.path.exists(tmp_path / "out")


def test_every_problem_is_reported_at_once(tmp_path, npusim):
    spec = edit(workloads=["mnist-cnm"], parameters=[
        {"name": "a", "pointer": "/nope", "values": [1]},
        {"name": "b", "pointer": "/clock_mhz", "values": []}])
    path = write_spec(tmp_path, spec)
    r = dse([path], npusim)
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.startswith("dse.py: error:")]
    assert len(lines) == 3, r.stderr
    assert any("/parameters/0/pointer" in x for x in lines)
    assert any("/parameters/1/values" in x for x in lines)
    assert any("/workloads/0/workload" in x for x in lines)


def test_malformed_json_and_missing_file(tmp_path, npusim):
    path = tmp_path / "bad.json"
    path.write_text('{"base": "edge",\n "workloads": [}\n')
    r = dse([str(path)], npusim)
    assert r.returncode == 2
    assert f"dse.py: error: {path}: line 2 column 16:" in r.stderr, r.stderr
    r = dse([str(tmp_path / "none.json")], npusim)
    assert r.returncode == 2
    assert "none.json: cannot read: No such file or directory" in r.stderr


def test_bad_command_line(tmp_path, npusim):
    path = write_spec(tmp_path, GOOD)
    for args, message in (([path, "--jobs", "0"], "--jobs 0: expected at least 1"),
                          ([path, "--scheduler", "localhost:8786"],
                           "--scheduler 'localhost:8786': expected tcp://HOST:PORT"),
                          ([path, "--npusim", str(tmp_path / "none")], "npusim binary not found"),
                          ([path, "--values", "maybe"], "invalid choice: 'maybe'")):
        r = dse(args, npusim)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, r.stderr


def test_the_example_specs_are_valid(npusim):
    from conftest import ROOT
    sweeps = os.path.join(ROOT, "configs", "sweeps")
    names = sorted(n for n in os.listdir(sweeps) if n.endswith(".json"))
    assert names
    for name in names:
        r = dse([os.path.join(sweeps, name), "--dry-run"], npusim)
        assert r.returncode == 0, (name, r.stderr)
        assert len(r.stdout.splitlines()) > 1, name
