"""Pareto-optimal points: those no other point beats or equals on every objective while beating
them on one."""

import math


def pareto_mask(points, senses):
    """points: rows of numbers, one per objective; senses: "min" or "max" per objective.

    Returns one bool per row: True when the row is Pareto-optimal. Rows with a missing or NaN
    objective are never optimal and never dominate. Equal rows are all optimal."""
    sign = []
    for s in senses:
        if s not in ("min", "max"):
            raise ValueError(f"sense '{s}': expected min or max")
        sign.append(1.0 if s == "min" else -1.0)
    rows = []
    for p in points:
        if len(p) != len(senses):
            raise ValueError(f"row {p!r} has {len(p)} objectives, expected {len(senses)}")
        valid = all(v is not None and not math.isnan(v) for v in p)
        rows.append([v * s for v, s in zip(p, sign)] if valid else None)
    if len(senses) == 2:
        return _pareto_2d(rows)
    return _pareto_any(rows)


def _pareto_2d(rows):
    """Sorted by (x, y), a point is dominated exactly when an earlier, different point has a y no
    larger than its own: O(n log n)."""
    order = sorted((i for i, p in enumerate(rows) if p is not None), key=lambda i: rows[i])
    mask = [False] * len(rows)
    best_y = math.inf
    k = 0
    while k < len(order):
        group_end = k
        while group_end < len(order) and rows[order[group_end]] == rows[order[k]]:
            group_end += 1
        y = rows[order[k]][1]
        for i in order[k:group_end]:
            mask[i] = not best_y <= y
        best_y = min(best_y, y)
        k = group_end
    return mask


def _pareto_any(rows):
    mask = []
    for i, p in enumerate(rows):
        if p is None:
            mask.append(False)
            continue
        dominated = False
        for j, q in enumerate(rows):
            if j == i or q is None:
                continue
            if all(a <= b for a, b in zip(q, p)) and any(a < b for a, b in zip(q, p)):
                dominated = True
                break
        mask.append(not dominated)
    return mask
