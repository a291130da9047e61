#!/usr/bin/python3
"""Pareto fronts of a sweep (docs/dse.md): reads results.csv from scripts/dse.py, writes PNG + SVG.

    scripts/plot_dse.py out/array_size/results.csv --out out/array_size/plots

One figure per pair of objectives the table has, one panel per workload; every point in grey or
coloured by a parameter, the Pareto-optimal ones ringed and joined. Pairs, when their columns exist:
latency vs energy, throughput vs area, TOPS/W vs throughput, latency vs DRAM energy (the DRAM core
alone, docs/memory.md), and always latency vs DRAM traffic and throughput vs array size (PEs).
A serving sweep (npusim serve) gets p99 time to first token, p99 time per output token and energy
per token against tokens per second.
PLOTDIR/pareto.csv lists the optimal points of every figure. Uses python3-matplotlib.
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from npusim_dse.pareto import pareto_mask  # noqa: E402
from npusim_dse.results import read_csv  # noqa: E402


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def first_column(cols, section, word="total"):
    """The first column of a stats section (energy, area, power) holding `word`, e.g.
    energy.total_pj; None when the section is absent."""
    for c in cols:
        if c.split(".")[0] == section and word in c:
            return c
    return None


def unit_scale(column):
    """(factor to SI, unit) from a column's name suffix (_pj, _mw, _mm2, ...)."""
    for suffix, factor, unit in (("_pj", 1e-12, "J"), ("_nj", 1e-9, "J"), ("_uj", 1e-6, "J"),
                                 ("_mj", 1e-3, "J"), ("_j", 1.0, "J"), ("_mw", 1e-3, "W"),
                                 ("_uw", 1e-6, "W"), ("_w", 1.0, "W"), ("_mm2", 1.0, "mm²")):
        if column.endswith(suffix):
            return factor, unit
    return 1.0, ""


SERVING = {"tokens_per_s": ("serving.tokens_per_s", "generated tokens / s"),
           "ttft_p99": ("serving.ttft_s.p99", "p99 time to first token (s)"),
           "tpot_p99": ("serving.tpot_s.p99", "p99 time per output token (s)"),
           "energy_per_token": ("serving.energy_per_token_j", "energy per generated token (J)")}


def derived_columns(cols):
    """name -> (function of a row, axis label) for every objective this table supports."""
    if "serving.tokens_per_s" in cols:
        return {name: (lambda r, c=column: number(r.get(c)), label)
                for name, (column, label) in SERVING.items() if column in cols}
    d = {"latency_s": (lambda r: number(r.get("latency_s")), "latency per batch (s)"),
         "inferences_per_s": (lambda r: number(r.get("inferences_per_s")), "inferences / s")}
    if "dram.read_bytes" in cols:
        def traffic(r):
            a, b = number(r.get("dram.read_bytes")), number(r.get("dram.write_bytes"))
            return None if a is None or b is None else (a + b) / 1e6
        d["dram_mb"] = (traffic, "DRAM traffic (MB)")
    if "hw.matrix_unit.rows" in cols:
        def pes(r):
            v = [number(r.get(f"hw.matrix_unit.{k}")) for k in ("rows", "cols", "count")]
            return None if None in v else v[0] * v[1] * v[2]
        d["pes"] = (pes, "processing elements (rows x cols x count)")
    energy = first_column(cols, "energy")
    if energy:
        f, unit = unit_scale(energy)
        d["energy"] = (lambda r: _scaled(r, energy, f), f"energy per batch ({unit}, {energy})")
    elif "memory.energy_pj" in cols:
        d["dram_energy"] = (lambda r: _scaled(r, "memory.energy_pj", 1e-6),
                            "DRAM core energy per batch (µJ)")
    area = first_column(cols, "area")
    if area:
        d["area"] = (lambda r: number(r.get(area)), f"area (mm², {area})")
    tops_w = next((c for c in cols if "tops_per_w" in c), None)
    power = first_column(cols, "power")
    if tops_w:
        d["tops_per_w"] = (lambda r: number(r.get(tops_w)), f"TOPS/W ({tops_w})")
    elif power:
        f, _ = unit_scale(power)

        def tops_per_w(r):
            ops, p = number(r.get("ops_per_s")), _scaled(r, power, f)
            return None if ops is None or not p else ops / 1e12 / p
        d["tops_per_w"] = (tops_per_w, f"TOPS/W (ops_per_s / {power})")
    return d


def _scaled(r, column, factor):
    v = number(r.get(column))
    return None if v is None else v * factor


# (x, sense, y, sense, file name): the figures, in order, drawn when both columns exist.
PAIRS = (("latency_s", "min", "energy", "min", "latency_vs_energy"),
         ("area", "min", "inferences_per_s", "max", "throughput_vs_area"),
         ("inferences_per_s", "max", "tops_per_w", "max", "tops_per_w_vs_throughput"),
         ("latency_s", "min", "dram_energy", "min", "latency_vs_dram_energy"),
         ("latency_s", "min", "dram_mb", "min", "latency_vs_dram_traffic"),
         ("pes", "min", "inferences_per_s", "max", "throughput_vs_pes"),
         ("tokens_per_s", "max", "ttft_p99", "min", "serving_ttft_vs_throughput"),
         ("tokens_per_s", "max", "tpot_p99", "min", "serving_tpot_vs_throughput"),
         ("tokens_per_s", "max", "energy_per_token", "min", "serving_energy_vs_throughput"))


def parameter_columns(cols):
    """The sweep's parameters: results.csv puts them between 'workload' and 'status'."""
    try:
        return cols[cols.index("workload") + 1:cols.index("status")]
    except ValueError:
        return []


def plot(rows, params, x, xs, y, ys, derived, color_by, path_base, pareto_out, name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    n = len(workloads)
    cols_n = min(n, 3)
    rows_n = math.ceil(n / cols_n)
    fig, axes = plt.subplots(rows_n, cols_n, figsize=(5.2 * cols_n, 4.2 * rows_n), squeeze=False)
    fx, xlabel = derived[x]
    fy, ylabel = derived[y]
    categories = list(dict.fromkeys(r[color_by] for r in rows)) if color_by else []
    cmap = plt.get_cmap("tab10")
    drawn = False
    for k, wl in enumerate(workloads):
        ax = axes[k // cols_n][k % cols_n]
        sel = [r for r in rows if r["workload"] == wl]
        pts = [(fx(r), fy(r)) for r in sel]
        keep = [i for i, p in enumerate(pts) if None not in p]
        sel, pts = [sel[i] for i in keep], [pts[i] for i in keep]
        ax.set_title(wl, fontsize=10)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, alpha=0.3)
        if not pts:
            continue
        drawn = True
        mask = pareto_mask(pts, [xs, ys])
        for c, cat in enumerate(categories or [None]):
            idx = [i for i, r in enumerate(sel) if cat is None or r[color_by] == cat]
            ax.scatter([pts[i][0] for i in idx], [pts[i][1] for i in idx], s=18,
                       color=cmap(c % 10) if cat is not None else "0.55",
                       label=f"{color_by}={cat}" if cat is not None else None, zorder=2)
        front = sorted((pts[i], i) for i in range(len(pts)) if mask[i])
        ax.plot([p[0] for p, _ in front], [p[1] for p, _ in front], "-", color="crimson",
                lw=1.2, zorder=1)
        ax.scatter([p[0] for p, _ in front], [p[1] for p, _ in front], s=70, facecolors="none",
                   edgecolors="crimson", lw=1.3, zorder=3, label="Pareto-optimal")
        if len(front) <= 8 and params:
            at = {}  # equal points share one label
            for p, i in front:
                at.setdefault(p, []).append(i)
            for p, same in at.items():
                text = ", ".join(f"{q}={sel[same[0]][q]}" for q in params if q != color_by)
                if len(same) > 1:
                    text += f" (+{len(same) - 1} equal)"
                ax.annotate(text, p, fontsize=6, xytext=(4, 4), textcoords="offset points")
        for axis, values in (("x", [p[0] for p in pts]), ("y", [p[1] for p in pts])):
            lo, hi = min(values), max(values)
            if lo > 0 and hi / lo > 50:
                getattr(ax, f"set_{axis}scale")("log")
        for p, i in front:
            pareto_out.writerow([name, wl] + [sel[i].get(q, "") for q in params] +
                                [sel[i]["key"], x, repr(p[0]), y, repr(p[1])])
        if k == 0:
            ax.legend(fontsize=7)
    for k in range(n, rows_n * cols_n):
        axes[k // cols_n][k % cols_n].axis("off")
    arrows = {"min": "lower is better", "max": "higher is better"}
    fig.suptitle(f"{name.replace('_', ' ')}  (x: {arrows[xs]}, y: {arrows[ys]})", fontsize=11)
    fig.tight_layout()
    if drawn:
        fig.savefig(path_base + ".png", dpi=90)
        fig.savefig(path_base + ".svg")
    plt.close(fig)
    return drawn


def main(argv):
    ap = argparse.ArgumentParser(prog="plot_dse.py", description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="results.csv written by scripts/dse.py")
    ap.add_argument("--out", required=True, help="directory for the plots")
    ap.add_argument("--color", help="colour the points by this parameter (default: the first "
                    "parameter with at most 10 values)")
    ap.add_argument("--only", action="append", default=[],
                    help="draw only this figure (file name without extension); repeatable")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        cols, rows = read_csv(args.csv)
    except (OSError, StopIteration) as e:
        print(f"plot_dse.py: error: {args.csv}: cannot read a results.csv: {e}", file=sys.stderr)
        return 2
    figure = "serving.tokens_per_s" if "serving.tokens_per_s" in cols else "latency_s"
    missing = [c for c in ("workload", "status", figure) if c not in cols]
    if missing:
        print(f"plot_dse.py: error: {args.csv}: no column {', '.join(missing)}: not a "
              "results.csv of scripts/dse.py", file=sys.stderr)
        return 2
    ok = [r for r in rows if r["status"] == "ok"]
    params = parameter_columns(cols)
    color_by = args.color
    if color_by is not None and color_by not in params:
        print(f"plot_dse.py: error: --color {color_by}: not a parameter of the sweep "
              f"({', '.join(params) or 'none'})", file=sys.stderr)
        return 2
    if color_by is None:
        color_by = next((p for p in params if 1 < len({r[p] for r in ok}) <= 10), None)
    derived = derived_columns(cols)
    os.makedirs(args.out, exist_ok=True)
    written = []
    with open(os.path.join(args.out, "pareto.csv"), "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["figure", "workload"] + params + ["key", "x", "x_value", "y", "y_value"])
        for x, xs, y, ys, name in PAIRS:
            if x not in derived or y not in derived or (args.only and name not in args.only):
                continue
            base = os.path.join(args.out, name)
            if plot(ok, params, x, xs, y, ys, derived, color_by, base, out, name):
                written.append(name)
    print(f"plot_dse.py: {len(ok)} of {len(rows)} rows ok; wrote "
          f"{', '.join(n + '.png/.svg' for n in written) or 'no figures'} and pareto.csv in "
          f"{args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
