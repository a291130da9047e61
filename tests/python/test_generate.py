"""npusim.generate against `npusim generate` (docs/llm.md): the same tokens, logits and figures;
bad input raises InputError with the command line's message."""

import json

import numpy as np
import pytest

import npusim
from conftest import cli, without_host

TINY = {"schema_version": 1, "kind": "decoder", "name": "tiny", "layers": 1, "hidden": 32,
        "heads": 2, "kv_heads": 1, "ffn": 64, "vocab": 64, "max_context": 32, "norm": "rms",
        "activation": "swiglu", "positions": "rotary"}


def test_generate_equals_the_cli(tmp_path):
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps(TINY))
    prompt = np.array([[1, 5, 9, 2], [7, 7, 3, 0]], np.int32)
    np.save(tmp_path / "prompt.npy", prompt)
    out = tmp_path / "out"
    code, _, err = cli("generate", "--hw", "tpu-v4-like-core", "--workload", model, "--input",
                       tmp_path / "prompt.npy", "--new-tokens", "3", "--out", out)
    assert code == 0, err
    r = npusim.generate("tpu-v4-like-core", str(model), prompt, new_tokens=3)
    assert r.mismatch == ""
    np.testing.assert_array_equal(r.tokens, np.load(out / "tokens.npy"))
    np.testing.assert_array_equal(r.logits, np.load(out / "logits.npy"))
    np.testing.assert_array_equal(r.prompt, prompt)
    cli_stats = json.loads((out / "stats.json").read_text())
    assert r.stats["generation"] == cli_stats["generation"]
    assert r.stats["steps"] == cli_stats["steps"]
    assert without_host(r.stats["prefill"]) == without_host(cli_stats["prefill"])
    assert r.tokens.shape == (2, 3) and r.stats["generation"]["ids_equal_reference"]
    assert r.report == (out / "report.txt").read_text()
    assert {d["name"] for d in npusim.decoders()} >= {"gpt2-small", "llama-7b-like"}


def test_generate_bad_input_raises(tmp_path):
    with pytest.raises(npusim.InputError, match="--new-tokens 0: expected at least 1"):
        npusim.generate("tpu-v4-like-core", "gpt2-small", new_tokens=0, values=False)


def test_generate_trace_and_html_equal_the_cli(tmp_path):
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    code, _, err = cli("generate", "--hw", "tpu-v4-like-core", "--workload", model,
                       "--prompt-tokens", "4", "--new-tokens", "3", "--values", "off",
                       "--trace-json", out / "trace.json", "--trace-steps", "prefill,last",
                       "--html", out / "report.html", "--out", out)
    assert code == 0, err
    r = npusim.generate("tpu-v4-like-core", str(model), prompt_tokens=4, new_tokens=3,
                        values=False, trace=True, trace_steps="prefill,last")
    r.trace(tmp_path / "trace.json")
    r.html(tmp_path / "report.html")
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace == json.loads((out / "trace.json").read_text())
    assert [p["program"] for p in trace["otherData"]["programs"]] == ["prefill", "decode 2"]
    assert (tmp_path / "report.html").read_text() == (out / "report.html").read_text()
    untraced = npusim.generate("tpu-v4-like-core", str(model), prompt_tokens=4, new_tokens=3,
                               values=False)
    with pytest.raises(npusim.InputError, match="the run recorded no trace"):
        untraced.trace(tmp_path / "none.json")
