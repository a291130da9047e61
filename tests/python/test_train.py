"""npusim.train against `npusim train` (docs/training.md): the same losses and figures from the
same seed, the same HTML report data; int8 raises InputError with the command line's message."""

import json
import os

import pytest

import npusim
from conftest import SOURCE, cli

MLP = os.path.join(SOURCE, "workloads", "training", "digits-mlp.json")


def test_train_equals_the_cli(tmp_path):
    out = tmp_path / "out"
    code, _, err = cli("train", "--hw", "tpu-v4-like-core", "--workload", MLP, "--batch", "8",
                       "--steps", "2", "--optimizer", "momentum", "--lr", "0.05", "--html",
                       tmp_path / "cli.html", "--out", out)
    assert code == 0, err
    r = npusim.train("tpu-v4-like-core", MLP, batch=8, steps=2, optimizer="momentum", lr=0.05)
    assert r.mismatch == ""
    stats = json.loads((out / "stats.json").read_text())
    assert r.loss == stats["training"]["loss"]
    assert r.stats["training"]["step_cycles"] == stats["training"]["step_cycles"]
    assert r.report == (out / "report.txt").read_text()
    r.html(tmp_path / "py.html")
    pages = [report_data((tmp_path / name).read_text()) for name in ("cli.html", "py.html")]
    assert pages[0]["training"]["loss"] == pages[1]["training"]["loss"] == stats["training"]["loss"]
    assert pages[0]["steps"] == pages[1]["steps"] == stats["steps"]
    assert pages[0]["energy_by_component_j"] == stats["first_step"]["energy"]["by_component_j"]


def report_data(html):
    """The JSON an HTML report carries (its npusim-data script element), "<\\/" read as "</"."""
    start = html.index('<script id="npusim-data" type="application/json">')
    start = html.index(">", start) + 1
    return json.loads(html[start:html.index("</script>", start)])


def test_int8_is_refused():
    with pytest.raises(npusim.InputError, match="--dtype int8: training runs bf16"):
        npusim.train("tpu-v4-like-core", MLP, dtype="int8")
