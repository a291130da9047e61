#!/usr/bin/env python3
"""Runs npusim with --vcd on a small network and reads the VCD back: the header (date, version,
timescale), the declared signals (each unit's busy, waiting, instruction, queue_depth; each DRAM
channel's command and bank), value changes in time order, and that the waveforms agree with the
run: every instruction id appears on its unit, queue depths fall to 0, and the last change is no
later than the run's end. Usage: vcd_test.py NPUSIM"""
import json
import os
import re
import subprocess
import sys
import tempfile

NPUSIM = sys.argv[1]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def parse_vcd(path):
    header, scopes, signals = {}, [], {}
    times, changes = [], []
    with open(path) as f:
        text = f.read()
    head, sep, body = text.partition("$enddefinitions")
    check(sep, "no $enddefinitions")
    for m in re.finditer(r"\$(date|version|timescale)\s+(.*?)\s*\$end", head, re.S):
        header[m.group(1)] = m.group(2).strip()
    for tok in re.finditer(r"\$scope module (\S+) \$end|\$upscope \$end|\$var (\w+)\s+(\d+)\s+(\S+)\s+(\S+)", head):
        if tok.group(1):
            scopes.append(tok.group(1))
        elif tok.group(0).startswith("$upscope"):
            scopes.pop()
        else:
            name = ".".join(scopes[1:] + [tok.group(5)])  # without the top "SystemC" scope
            signals[tok.group(4)] = (name, int(tok.group(3)))
    now = None
    for line in body.splitlines()[1:]:
        line = line.strip()
        if not line or line.startswith("$"):
            continue
        if line.startswith("#"):
            now = int(line[1:])
            times.append(now)
        elif line[0] in "01xz" and len(line) > 1 and not line.startswith(("b", "r")):
            changes.append((now, line[1:], line[0]))
        elif line[0] == "b":
            value, code = line[1:].split()
            changes.append((now, code, value))
    return header, signals, times, changes


def main():
    with tempfile.TemporaryDirectory() as tmp:
        vcd = os.path.join(tmp, "w", "waves.vcd")
        out = os.path.join(tmp, "o")
        p = subprocess.run([NPUSIM, "run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--vcd", vcd,
                            "--out", out], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"npusim exited {p.returncode}: {p.stderr}")
        check(not os.path.exists(vcd + ".tmp.vcd"), "the temporary file is left behind")
        stats = json.load(open(os.path.join(out, "stats.json")))
        plain = os.path.join(tmp, "plain")
        subprocess.run([NPUSIM, "run", "--hw", "tpu-v1", "--workload", "mnist-cnn", "--out", plain],
                       capture_output=True, check=True, timeout=300)
        without = json.load(open(os.path.join(plain, "stats.json")))
        for s in (stats, without):
            s.pop("host", None)
        check(stats == without, "stats.json differs with --vcd")
        header, signals, times, changes = parse_vcd(vcd)
        check("SystemC" in header.get("version", ""), f"version {header.get('version')}")
        check(header.get("timescale", "").replace(" ", "") == "1ps", f"timescale {header.get('timescale')}")
        check("date" in header, "no $date")
        names = {n: (code, w) for code, (n, w) in signals.items()}
        for unit in ("dma_load", "dma_store", "matrix_unit0", "vector_unit"):
            for sig in ("busy", "waiting", "instruction", "queue_depth"):
                check(f"{unit}.{sig}" in names, f"no signal {unit}.{sig}: {sorted(names)}")
        for ch in (0, 1):
            check(f"dram.ch{ch}.command" in names and f"dram.ch{ch}.bank" in names, f"no dram ch{ch}")
        check(times == sorted(times) and len(set(times)) == len(times), "timestamps not increasing")
        period_ps = round(1e6 / stats["clock_mhz"])
        check(times and times[-1] <= stats["total_cycles"] * period_ps + period_ps,
              f"last change at {times[-1] if times else None} ps, the run ends at "
              f"{stats['total_cycles'] * period_ps} ps")
        check(all(t % period_ps == 0 for t in times), "a change off the core clock edge")
        by_code = {}
        for t, code, value in changes:
            check(code in signals, f"change of undeclared signal {code}")
            by_code.setdefault(code, []).append((t, value))

        def values(name):
            return [int(v, 2) if set(v) <= {"0", "1"} else None for _, v in by_code.get(names[name][0], [])]

        compiled = subprocess.run([NPUSIM, "compile", "--hw", "tpu-v1", "--workload", "mnist-cnn"],
                                  capture_output=True, text=True, check=True).stdout
        units = {"dma_load": "dma_load", "dma_store": "dma_store", "mxu0": "matrix_unit0", "vpu": "vector_unit"}
        per_unit = {u: set() for u in units.values()}
        for m in re.finditer(r"^\s+(\d+)\s+(\S+)\s+[A-Z_]+\s", compiled, re.M):
            per_unit[units[m.group(2)]].add(int(m.group(1)))
        for unit, ids in per_unit.items():
            seen = set(values(f"{unit}.instruction"))
            # An id equal to the previous one (or the initial 0) makes no change in a VCD.
            check(ids - seen <= {min(ids)}, f"{unit}: instructions {sorted(ids - seen)[:5]} never shown")
            depth = values(f"{unit}.queue_depth")
            check(depth and depth[0] in (len(ids), len(ids) - 1) and depth[-1] == 0 and depth == sorted(depth, reverse=True),
                  f"{unit}: queue depth {depth[:3]}...{depth[-3:]} for {len(ids)} instructions")
            busy = values(f"{unit}.busy")
            check(1 in busy and busy[-1] == 0, f"{unit}: busy {busy[:4]}")
        cmds = values("dram.ch0.command") + values("dram.ch1.command")
        check(any(c and c > 0 for c in cmds), "no DRAM command on the waveforms")
        check(all(c is not None and 0 <= c <= 7 for c in cmds), "a DRAM command code out of range")
    if failures:
        for f in failures[:40]:
            print("FAIL:", f)
        sys.exit(1)
    print(f"VCD checks passed ({len(signals)} signals, {len(changes)} value changes)")


main()
