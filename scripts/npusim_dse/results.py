"""results.csv: a row per point and workload, every varied parameter and every figure.

Figures come from the run's stats.json, flattened to dotted names (`dram.read_bytes`): every
number, string and boolean at any depth, except lists (per-layer and per-channel tables) and the
DRAM preset echoed under `memory.config`. New sections of stats.json (energy, power, area, ...)
thus become columns without a change here. The point's hardware description follows under `hw.`.
Columns: point, key, workload, the parameters, status, error, the headline figures, every other
figure (sorted), the hardware, run_seconds (the run's wall time through the driver).
"""

import csv
import io
import json
import os

from .expr import ExpressionError

HEADLINE = ("hardware", "stats.workload", "batch", "dtype", "total_cycles", "latency_s", "inferences_per_s",
            "ops_per_s", "mxu_utilization", "macs", "dram.read_bytes", "dram.write_bytes",
            "memory.bandwidth_gbps", "memory.peak_bandwidth_gbps",
            # a serving sweep's (npusim serve)
            "serving.tokens_per_s", "serving.requests_per_s", "serving.goodput_requests_per_s",
            "serving.ttft_s.p50", "serving.ttft_s.p99", "serving.tpot_s.p50", "serving.tpot_s.p99",
            "serving.e2e_s.p99", "serving.energy_per_token_j", "serving.average_power_w")
# Top-level sections whose figures lead the rest when present (energy, power, area, efficiency).
HEADLINE_SECTIONS = ("energy", "power", "area", "efficiency")
SKIPPED = ("memory.config", "layers")
HW_SKIPPED = ("hw.description", "hw.source", "hw.schema_version")
# Columns that measure the host, not the design: they differ between two runs of one sweep.
WALL_TIME_COLUMNS = ("run_seconds",)
HOST_SECTIONS = ("host.",)  # stats.json's host figures (docs/stats.md)


def is_host_column(name):
    return name in WALL_TIME_COLUMNS or name.startswith(HOST_SECTIONS)

STATUS_OK, STATUS_FAILED, STATUS_INFEASIBLE = "ok", "failed", "infeasible"
STATUS_CONSTRAINT_ERROR, STATUS_LOST = "constraint-error", "lost"


def flatten(doc, prefix="", skipped=SKIPPED, out=None):
    out = {} if out is None else out
    for k, v in doc.items():
        name = f"{prefix}{k}"
        if name in skipped:
            continue
        if isinstance(v, dict):
            flatten(v, name + ".", skipped, out)
        elif not isinstance(v, list) and v is not None:
            out[name] = v
    return out


def _lookup(figures, point_values):
    def get(name):
        if name in figures:
            return figures[name]
        return point_values[name]
    return get


def rows(sweep, store, lost):
    """The table as a list of dicts, in the order of points and workloads."""
    out = []
    for run in sweep.runs:
        row = {"point": run.point.index, "key": run.key, "workload": run.workload.label}
        for p, label in zip(sweep.parameters, run.point.labels):
            row[p.name] = label
        if run.key in lost or not store.finished(run.key):
            row.update(status=STATUS_LOST, error=lost.get(run.key, "not run"))
            out.append(row)
            continue
        result, stats, _ = store.load(run.key)
        figures = flatten(stats) if stats else {}
        if result["exit_code"] != 0:
            row.update(status=STATUS_FAILED, error=result["error"])
        elif stats is None:
            row.update(status=STATUS_FAILED, error="npusim exited 0 but wrote no stats.json")
        else:
            row.update(status=STATUS_OK, error="")
            values = {p.name: v for p, v in zip(sweep.parameters, run.point.values)}
            for e in sweep.result_constraints:
                try:
                    ok = bool(e.evaluate(_lookup(figures, values)))
                except ExpressionError as err:
                    row.update(status=STATUS_CONSTRAINT_ERROR, error=str(err))
                    break
                if not ok:
                    row.update(status=STATUS_INFEASIBLE, error=f"violates '{e.text}'")
                    break
        # A figure named like a leading column (stats.json's own `workload`, the graph's name; a
        # parameter called `batch`) keeps its value under `stats.`.
        row.update({(f"stats.{k}" if k in row else k): v for k, v in figures.items()})
        # The description the driver derived (npusim's config.resolved.json equals it, but a
        # failed run has none).
        row.update(flatten(run.hw, "hw.", HW_SKIPPED))
        row["run_seconds"] = round(result["seconds"], 4)
        out.append(row)
    return out


def columns(sweep, table):
    lead = ["point", "key", "workload"] + [p.name for p in sweep.parameters] + ["status", "error"]
    present = set()
    for row in table:
        present.update(row)
    head = [c for c in HEADLINE if c in present]
    sections = sorted(c for c in present if c.split(".")[0] in HEADLINE_SECTIONS)
    taken = set(lead) | set(head) | set(sections) | {"run_seconds"}
    rest = sorted(c for c in present if c not in taken and not c.startswith("hw."))
    hw = sorted(c for c in present if c.startswith("hw.") and c not in taken)
    return lead + head + sections + rest + hw + ["run_seconds"]


def _cell(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


def write_csv(path, sweep, table):
    cols = columns(sweep, table)
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(cols)
    for row in table:
        w.writerow([_cell(row.get(c, "")) for c in cols])
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text.getvalue())
    os.replace(tmp, path)
    return cols


def read_csv(path):
    """results.csv as (columns, rows of strings)."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        cols = next(reader)
        return cols, [dict(zip(cols, r)) for r in reader]
