#!/usr/bin/env python3
"""Compares two directories written by scripts/zoo_runs.sh (a version of npusim before and after a
change): every stats.json figure, every saved output value, the exit status of every run.

  scripts/compare_runs.py BEFORE AFTER [--renames FILE.json] [--ignore PREFIX ...]

--renames maps old flattened keys to new ones ({"memory.read_bursts": "memory.reads", ...}); keys
that only one side has are listed, so a rename shows up as one key lost and one gained. Host
figures (wall time, peak memory) are never compared. Exit 0 when every shared figure and value is
identical, 1 otherwise.
"""
import argparse
import json
import os
import sys

# stats.json's host figures (docs/stats.md); "simulation." is where npusim kept them before they
# moved under "host", so a version from before that change still compares.
HOST_KEYS = ("host.", "simulation.")


def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = obj
    return out


def layer_agnostic(key):
    """layers.12.cycles -> layers[].cycles, for listing renamed keys once."""
    parts = key.split(".")
    return ".".join("[]" if p.isdigit() else p for p in parts)


def runs(root):
    for dirpath, _dirs, files in os.walk(root):
        if "stdout.txt" in files:
            yield os.path.relpath(dirpath, root)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--renames", help="JSON object: old flattened key -> new key")
    ap.add_argument("--ignore", nargs="*", default=[], help="key prefixes not compared")
    args = ap.parse_args()
    renames = {}
    if args.renames:
        with open(args.renames) as f:
            renames = json.load(f)
    ignore = tuple(HOST_KEYS) + tuple(args.ignore)

    before_runs, after_runs = set(runs(args.before)), set(runs(args.after))
    problems = 0
    only_before, only_after = set(), set()
    compared_runs = compared_figures = compared_values = 0
    for run in sorted(before_runs | after_runs):
        if run not in before_runs or run not in after_runs:
            print(f"{run}: only in {'before' if run in before_runs else 'after'}")
            problems += 1
            continue
        b_dir, a_dir = os.path.join(args.before, run), os.path.join(args.after, run)
        b_stats, a_stats = os.path.join(b_dir, "stats.json"), os.path.join(a_dir, "stats.json")
        if os.path.exists(b_stats) != os.path.exists(a_stats):
            print(f"{run}: stats.json exists only {'before' if os.path.exists(b_stats) else 'after'}")
            problems += 1
            continue
        compared_runs += 1
        if os.path.exists(b_stats):
            with open(b_stats) as f:
                b = flatten(json.load(f))
            with open(a_stats) as f:
                a = flatten(json.load(f))
            b = {renames.get(layer_agnostic(k), k) if layer_agnostic(k) in renames else
                 renames.get(k, k): v for k, v in b.items()}
            for k in sorted(set(b) | set(a)):
                if k.startswith(ignore):
                    continue
                if k not in a:
                    only_before.add(layer_agnostic(k))
                    continue
                if k not in b:
                    only_after.add(layer_agnostic(k))
                    continue
                compared_figures += 1
                if a[k] != b[k]:
                    print(f"{run}: {k}: {b[k]!r} -> {a[k]!r}")
                    problems += 1
        b_vals, a_vals = os.path.join(b_dir, "values"), os.path.join(a_dir, "values")
        names = set(os.listdir(b_vals)) if os.path.isdir(b_vals) else set()
        names |= set(os.listdir(a_vals)) if os.path.isdir(a_vals) else set()
        for name in sorted(names):
            pb, pa = os.path.join(b_vals, name), os.path.join(a_vals, name)
            if not (os.path.exists(pb) and os.path.exists(pa)):
                print(f"{run}: values/{name} exists on one side only")
                problems += 1
                continue
            compared_values += 1
            with open(pb, "rb") as fb, open(pa, "rb") as fa:
                if fb.read() != fa.read():
                    print(f"{run}: values/{name} differ")
                    problems += 1
    for k in sorted(only_before):
        print(f"key only before: {k}")
    for k in sorted(only_after):
        print(f"key only after:  {k}")
    print(f"compared {compared_runs} runs, {compared_figures} figures, {compared_values} value "
          f"files: {problems} differences; {len(only_before)} keys gone, {len(only_after)} keys new")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
