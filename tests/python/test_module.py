"""The Python module against the command line: the same run gives the same stats.json and the same
output tensors; bad input raises InputError with the CLI's message; runs in one process and in
several threads are independent (docs/python.md)."""

import concurrent.futures
import json
import os

import numpy as np
import pytest

import npusim
from conftest import SOURCE, cli, cli_run, load_npy_dir, without_host


def file_name(name):
    """The name --save-outputs gives a tensor's file."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)


def test_run_equals_the_cli_stats_and_outputs(tmp_path):
    saved = tmp_path / "saved"
    cli_stats, out = cli_run(tmp_path, "--hw", "tpu-v1", "--workload", "mnist-cnn",
                             "--save-outputs", saved, "--save-intermediates")
    r = npusim.run(hw="tpu-v1", workload="mnist-cnn", intermediates=True)
    assert without_host(r.stats) == without_host(cli_stats)
    assert r.stats["functional_check"]["bit_exact"] is True
    with open(out / "config.resolved.json", encoding="utf-8") as f:
        assert r.hardware == json.load(f)
    with open(out / "report.txt", encoding="utf-8") as f:
        assert r.report(per_layer=True) == f.read()
    files = load_npy_dir(saved)
    tensors = {**r.outputs, **r.intermediates}
    assert len(r.outputs) >= 1 and len(tensors) == len(files)
    for name, array in tensors.items():
        assert array.dtype == np.float32
        np.testing.assert_array_equal(array, files[file_name(name)])
    assert r.layers == cli_stats["layers"] and set(r.layers[0]) >= {"name", "cycles", "macs"}


def test_timing_only_run_of_a_hardware_dict_equals_the_cli(tmp_path):
    hw = npusim.resolved_hardware("tpu-v1")
    hw["name"] = "tpu-v1-64"
    hw["matrix_unit"]["rows"] = hw["matrix_unit"]["cols"] = 64
    hw_file = tmp_path / "hw.json"
    hw_file.write_text(json.dumps(hw))
    cli_stats, _ = cli_run(tmp_path, "--hw", hw_file, "--workload", "lenet5", "--values", "off",
                           "--batch", "2", "--seed", "7")
    r = npusim.run(hw=hw, workload="lenet5", values=False, batch=2, seed=7)
    assert without_host(r.stats) == without_host(cli_stats)
    assert r.stats["values"] == "off" and r.outputs == {}


def test_input_array_and_onnx_bytes_equal_the_cli(tmp_path):
    # A float batch of two MNIST images (channels last, the JSON graph's layout), calibrated on.
    x = np.random.default_rng(3).standard_normal((2, 28, 28, 1)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "saved"
    cli_stats, _ = cli_run(tmp_path, "--hw", "tpu-v1", "--workload", "mnist-cnn", "--input",
                           tmp_path / "x.npy", "--save-outputs", saved)
    r = npusim.run(hw="tpu-v1", workload="mnist-cnn", inputs=x)
    assert without_host(r.stats) == without_host(cli_stats) and r.stats["batch"] == 2
    files = load_npy_dir(saved)
    assert r.outputs.keys() == files.keys()
    for name, array in r.outputs.items():
        np.testing.assert_array_equal(array, files[file_name(name)])

    model = os.path.join(SOURCE, "tests", "fuzz", "corpus", "onnx", "cnn.onnx")
    saved = tmp_path / "saved-onnx"
    cli_stats, _ = cli_run(tmp_path, "--hw", "tpu-v1", "--workload", model, "--save-outputs",
                           saved)
    with open(model, "rb") as f:
        r = npusim.run(hw="tpu-v1", workload=f.read())
    # The same network from another file name: every figure but (maybe) the workload's name.
    for key in ("workload", "host"):
        r.stats.pop(key), cli_stats.pop(key)
    assert r.stats == cli_stats
    files = load_npy_dir(saved)
    assert len(files) == len(r.outputs) >= 1
    for name, array in r.outputs.items():
        np.testing.assert_array_equal(array, files[file_name(name)])


def test_bad_input_raises_input_error_with_the_cli_message(tmp_path):
    cases = [
        dict(hw="no-such-preset", workload="mnist-cnn"),
        dict(hw="tpu-v1", workload="no-such-net"),
        dict(hw="tpu-v1", workload="mnist-cnn", batch=0),
        dict(hw="tpu-v1", workload="mnist-cnn", dtype="fp64"),
        dict(hw="tpu-v1", workload="mnist-cnn", fidelity="rtl"),
        dict(hw=os.path.join(SOURCE, "tests", "e2e", "data", "bad_hw.json"), workload="mnist-cnn"),
    ]
    flags = {"batch": "--batch", "dtype": "--dtype", "fidelity": "--fidelity"}
    for case in cases:
        with pytest.raises(npusim.InputError) as e:
            npusim.run(**case)
        args = ["run", "--hw", case["hw"], "--workload", case["workload"]]
        for key, flag in flags.items():
            if key in case:
                args += [flag, case[key]]
        code, _, err = cli(*args)
        assert code == 2
        assert str(e.value) == err.strip().removeprefix("npusim: error: ")
    assert issubclass(npusim.InputError, ValueError)


def test_a_bad_hardware_dict_names_the_json_pointer():
    hw = npusim.resolved_hardware("tpu-v1")
    hw["matrix_unit"]["rows"] = -4
    with pytest.raises(npusim.InputError, match=r"^hw: /matrix_unit/rows"):
        npusim.run(hw=hw, workload="mnist-cnn")


def test_runs_in_one_process_and_in_threads_are_independent():
    hws = []
    for rows in (32, 64, 128):
        hw = npusim.resolved_hardware("tpu-v1")
        hw["matrix_unit"]["rows"] = hw["matrix_unit"]["cols"] = rows
        hws.append(hw)
    alone = [without_host(npusim.run(hw=hw, workload="mnist-cnn").stats) for hw in hws]
    assert len({s["total_cycles"] for s in alone}) == 3
    # After a failed run too: the next one starts clean.
    with pytest.raises(npusim.InputError):
        npusim.run(hw="tpu-v1", workload="mnist-cnn", batch=-1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        threaded = list(pool.map(lambda hw: npusim.run(hw=hw, workload="mnist-cnn"), hws * 2))
    assert [without_host(r.stats) for r in threaded] == alone * 2


def test_trace_equals_the_cli_trace(tmp_path):
    cli_run(tmp_path, "--hw", "tpu-v1", "--workload", "lenet5", "--trace-json",
            tmp_path / "cli.json")
    r = npusim.run(hw="tpu-v1", workload="lenet5", trace=True)
    r.trace(tmp_path / "module.json")
    assert (tmp_path / "module.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    with pytest.raises(npusim.InputError, match="recorded no trace"):
        npusim.run(hw="tpu-v1", workload="lenet5", values=False).trace(tmp_path / "x.json")


def test_presets_and_zoo_list_what_the_cli_lists():
    _, presets_out, _ = cli("presets")
    names = [line.split()[0] for line in presets_out.splitlines() if line[:1].islower()]
    assert [p["name"] for p in npusim.presets()] == names
    _, zoo_out, _ = cli("zoo")
    assert [z["name"] for z in npusim.zoo()] == [line.split()[0] for line in zoo_out.splitlines()]
    assert npusim.validate("tpu-v1", "mnist-cnn")["hw_name"] == "tpu-v1"


def test_serve_equals_the_cli(tmp_path):
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps({"schema_version": 1, "kind": "decoder", "name": "tiny",
                                 "layers": 1, "hidden": 32, "heads": 2, "kv_heads": 1,
                                 "ffn": 64, "vocab": 64, "max_context": 32}))
    trace = tmp_path / "trace.csv"
    trace.write_text("id,arrival_s,prompt_tokens,output_tokens\na,0,5,3\nb,0.00001,9,2\n")
    out = tmp_path / "serve-out"
    code, _, err = cli("serve", "--hw", "tpu-v4-like-core", "--workload", model, "--trace", trace,
                       "--grid-tokens", "8", "--out", out)
    assert code == 0, err
    r = npusim.serve(hw="tpu-v4-like-core", workload=str(model), trace=trace, grid_tokens=8)
    with open(out / "stats.json", encoding="utf-8") as f:
        cli_stats = json.load(f)
    cli_stats.pop("host")
    r.stats.pop("host")
    assert r.stats == cli_stats
    with open(out / "report.txt", encoding="utf-8") as f:
        assert r.report() == f.read()  # no host figure in it
    assert [q["id"] for q in r.requests] == ["a", "b"]
    assert [q["output_tokens"] for q in r.requests] == [3.0, 2.0]
    assert len(r.steps) == r.stats["serving"]["steps"]
    with pytest.raises(npusim.InputError, match="no column 'arrival_s'"):
        bad = tmp_path / "bad.csv"
        bad.write_text("id,prompt_tokens,output_tokens\n")
        npusim.serve(hw="tpu-v4-like-core", workload=str(model), trace=bad)


def test_memory_fidelity_kwarg_selects_the_dram_model():
    """memory_fidelity= is --memory-fidelity: recorded in stats.json; a bad value is refused."""
    command = npusim.run("tpu-v1-hbm", "mnist-cnn", values=False)
    bulk = npusim.run("tpu-v1-hbm", "mnist-cnn", values=False, memory_fidelity="bulk")
    assert command.stats["memory"]["fidelity"] == "command"
    assert bulk.stats["memory"]["fidelity"] == "bulk"
    assert bulk.stats["memory"]["read_bursts"] == command.stats["memory"]["read_bursts"]
    assert abs(bulk.stats["total_cycles"] - command.stats["total_cycles"]) <= \
        0.02 * command.stats["total_cycles"]
    with pytest.raises(npusim.InputError, match="--memory-fidelity 'fast'"):
        npusim.run("tpu-v1-hbm", "mnist-cnn", values=False, memory_fidelity="fast")
