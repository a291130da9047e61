"""Pareto extraction on hand-made tables, the constraint language, and plot_dse.py on a
hand-made results.csv (no simulation needed)."""

import csv
import math
import random

import pytest
from conftest import run_script
from npusim_dse.expr import Expression, ExpressionError
from npusim_dse.pareto import _pareto_any, pareto_mask


def test_pareto_front_of_a_hand_made_table():
    # latency (min), energy (min)
    table = [(1.0, 9.0),   # optimal: fastest
             (2.0, 5.0),   # optimal
             (2.0, 6.0),   # dominated by (2, 5)
             (3.0, 5.0),   # dominated by (2, 5): equal energy, slower
             (4.0, 2.0),   # optimal
             (4.0, 2.0),   # optimal: equal to the one before, neither dominates
             (5.0, 1.0),   # optimal: least energy
             (6.0, 3.0),   # dominated
             (math.nan, 0.5)]  # missing latency: never optimal, dominates nothing
    assert pareto_mask(table, ["min", "min"]) == [True, True, False, False, True, True, True,
                                                  False, False]
    # throughput (max) vs area (min)
    table = [(10.0, 1.0), (20.0, 2.0), (15.0, 2.0), (20.0, 3.0), (5.0, 0.5)]
    assert pareto_mask([(a, t) for t, a in table], ["min", "max"]) == [True, True, False, False,
                                                                       True]
    # three objectives: only all-round losers drop out
    table = [(1, 1, 9), (1, 9, 1), (9, 1, 1), (2, 2, 9), (5, 5, 5)]
    assert pareto_mask(table, ["min", "min", "min"]) == [True, True, True, False, True]
    assert pareto_mask([], ["min", "max"]) == []
    with pytest.raises(ValueError):
        pareto_mask([(1, 2)], ["min", "least"])


def test_two_objective_sweep_equals_the_pairwise_definition():
    rng = random.Random(5)
    for _ in range(300):
        pts = [(rng.randint(0, 6), rng.randint(0, 6)) for _ in range(rng.randint(0, 25))]
        senses = [rng.choice(["min", "max"]) for _ in range(2)]
        signed = [[v if s == "min" else -v for v, s in zip(p, senses)] for p in pts]
        assert pareto_mask(pts, senses) == _pareto_any(signed)


def test_constraint_language():
    names = {"rows": 128, "cols": 64, "dtype": "bf16", "dram.read_bytes": 4096,
             "area.total_mm2": 88.5}
    get = names.__getitem__
    assert Expression("area.total_mm2 <= 100").evaluate(get) is True
    assert Expression("rows * cols <= 65536 and dtype == 'bf16'").evaluate(get) is True
    assert Expression("max(rows, cols) / min(rows, cols)").evaluate(get) == 2.0
    assert Expression("10 < rows <= 128").evaluate(get) is True
    assert Expression("dram.read_bytes // 1024 % 3").evaluate(get) == 1
    assert Expression("not (rows > 100) or log2(cols) == 6").evaluate(get) is True
    assert Expression("-rows if dtype == 'int8' else 2 ** 10").evaluate(get) == 1024
    assert Expression("rows > 1 and cols").names == ["rows", "cols"]
    for bad, message in (("rows <", "invalid syntax"),
                         ("open('x')", "only these functions may be called"),
                         ("rows.__class__", None),
                         ("[rows]", "is not in the constraint language"),
                         ("(lambda: 1)()", "only these functions may be called"),
                         ("rows if", "invalid syntax"),
                         ("", "expected a non-empty expression")):
        try:
            Expression(bad).evaluate(lambda n: (_ for _ in ()).throw(KeyError(n)))
        except ExpressionError as e:
            assert message is None or message in str(e), str(e)
        else:
            pytest.fail(f"{bad!r} was accepted")
    for bad, message in (("nope > 1", "no value named 'nope'"),
                         ("rows / (cols - 64)", "division by zero"),
                         ("10 ** 10 ** 10", "too large"),
                         ("dtype + 1", "expected a number"),
                         ("dtype < 3", "cannot compare")):
        with pytest.raises(ExpressionError, match=message):
            Expression(bad).evaluate(get)


def test_plot_dse_draws_fronts_from_a_hand_made_table(tmp_path, npusim):
    cols = ["point", "key", "workload", "array", "status", "error", "latency_s",
            "inferences_per_s", "dram.read_bytes", "dram.write_bytes", "memory.energy_pj",
            "hw.matrix_unit.rows", "hw.matrix_unit.cols", "hw.matrix_unit.count"]
    rows = [  # array, latency, dram MB: 32 and 64 are optimal on latency vs traffic
        (0, "k0", "net", 16, "ok", "", 4e-3, 250.0, 3e6, 1e6, 9e6, 16, 16, 1),
        (1, "k1", "net", 32, "ok", "", 2e-3, 500.0, 2e6, 1e6, 8e6, 32, 32, 1),
        (2, "k2", "net", 64, "ok", "", 1e-3, 1000.0, 3e6, 1e6, 7e6, 64, 64, 1),
        (3, "k3", "net", 128, "failed", "does not fit", "", "", "", "", "", 128, 128, 1)]
    path = tmp_path / "results.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows(rows)
    out = tmp_path / "plots"
    r = run_script("plot_dse.py", [str(path), "--out", str(out)], npusim)
    assert r.returncode == 0, r.stderr
    for name in ("latency_vs_dram_traffic", "throughput_vs_pes", "latency_vs_dram_energy"):
        assert (out / f"{name}.png").stat().st_size > 1000
        assert (out / f"{name}.svg").read_text().lstrip().startswith("<?xml")
    with open(out / "pareto.csv", newline="") as f:
        front = [(r["figure"], r["array"]) for r in csv.DictReader(f)]
    assert sorted(a for fig, a in front if fig == "latency_vs_dram_traffic") == ["32", "64"]
    assert sorted(a for fig, a in front if fig == "throughput_vs_pes") == ["16", "32", "64"]
    assert sorted(a for fig, a in front if fig == "latency_vs_dram_energy") == ["64"]
    r = run_script("plot_dse.py", [str(tmp_path / "none.csv"), "--out", str(out)], npusim)
    assert r.returncode == 2 and "cannot read a results.csv" in r.stderr
