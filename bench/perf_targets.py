#!/usr/bin/env python3
"""Issue 11's speed targets, each figure printed next to its target (docs/performance.md).

Usage: bench/perf_targets.py [--repeat N] [--starts N]
  NPUSIM=path/to/npusim overrides build/sim/npusim (npusim-core must sit beside it).

Measures, on this machine as it is (print the load first: the figures are only meaningful when
the CPU is quiet):
  1. resnet50 on tpu-v1 with values and the reference check: wall < 1.0 s;
  2. vgg16 on tpu-v1 with values and the check: wall < 4 s, peak RSS < 512 MiB;
  3. resnet50 on tpu-v1 timing only (--values off): wall < 0.4 s;
  4. a process start, `npusim scalesim` on one layer: < 5 ms wall per run (mean of many), and the
     speed-up over SCALE-Sim v2 on that layer at its speed of 1e3 - 1e4 cycles per second
     (>= 1000x);
  5. membench, hbm2 streaming reads (seq-read), 1 and 8 channels: >= 5 M requests per CPU second,
     both as membench reports it (simulation only) and from outside (whole process).
Each npusim run is repeated (--repeat, default 3) and the best wall time kept, the usual way to
take the noise of a shared machine out. Not part of the test suite. Exit 1 when a run fails.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# SCALE-Sim v2's speed, docs/scalesim.md "Speed": 1e3 - 1e4 simulated cycles per second.
SCALESIM_CYCLES_PER_S = (1e3, 1e4)


def run(cmd):
    """Runs cmd; returns (wall s, stdout)."""
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"perf_targets: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return wall, p.stdout


def run_rusage(cmd):
    """Runs cmd; returns (wall s, cpu s, peak RSS MiB, stdout)."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        pid = os.posix_spawn(cmd[0], cmd, dict(os.environ),
                             file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                           (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"perf_targets: {' '.join(cmd)} exited with "
                     f"{os.waitstatus_to_exitcode(status)}")
        out.seek(0)
        return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.read()


def verdict(ok):
    return "MET" if ok else "NOT MET"


def simulate(npusim, label, args, repeat, wall_target, rss_target=None):
    best = None
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeat):
            wall, cpu, rss, _ = run_rusage([npusim, "run", *args, "--out", d])
            if best is None or wall < best[0]:
                best = (wall, cpu, rss)
            stats = json.load(open(os.path.join(d, "stats.json")))
    wall, cpu, rss = best
    check = stats["functional_check"]
    checked = ("bit-exact" if check["bit_exact"] else "within tolerance"
               if check["within_tolerance"] else "MISMATCH") if check.get("checked", True) \
        else "not checked (timing only)"
    ok = wall < wall_target and (rss_target is None or rss < rss_target)
    rss_text = f", peak RSS {rss:.0f} MiB (target < {rss_target} MiB)" if rss_target else \
        f", peak RSS {rss:.0f} MiB"
    print(f"{label}: wall {wall:.3f} s (target < {wall_target} s), cpu {cpu:.3f} s{rss_text}; "
          f"{stats['total_cycles']} cycles, outputs {checked}: {verdict(ok)}")


def process_start(npusim, starts):
    with tempfile.TemporaryDirectory() as d:
        topology = os.path.join(d, "one_layer.csv")
        with open(os.path.join(REPO, "workloads/scalesim/resnet18.csv")) as f:
            lines = f.readlines()
        with open(topology, "w") as f:
            f.writelines(lines[:2])  # header and Conv1
        cmd = [npusim, "scalesim", "-q", "-c",
               os.path.join(REPO, "workloads/scalesim/configs/google.cfg"), "-t", topology,
               "-p", os.path.join(d, "out")]
        _, out = run(cmd)  # warm the page cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        for _ in range(starts):
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        wall = (time.perf_counter() - start) / starts
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / starts
        # Python's own fork/exec cost, measured the same way, for comparison.
        start = time.perf_counter()
        for _ in range(starts):
            subprocess.run(["/bin/true"], check=True)
        true_wall = (time.perf_counter() - start) / starts
    # "npusim scalesim: 1 layers, C cycles, simulated in S s; reports in DIR"
    cycles = int(out.split(" cycles")[0].split()[-1])
    print(f"process start, npusim scalesim on one layer (resnet18 Conv1, google.cfg, {cycles} "
          f"cycles), mean of {starts}: wall {wall * 1e3:.2f} ms (target < 5 ms), cpu "
          f"{cpu * 1e3:.2f} ms; /bin/true from the same loop: {true_wall * 1e3:.2f} ms: "
          f"{verdict(wall < 5e-3)}")
    for speed in SCALESIM_CYCLES_PER_S:
        speedup = cycles / speed / wall
        print(f"  SCALE-Sim v2 at {speed:.0e} cycles/s needs {cycles / speed:.2f} s for this "
              f"layer: {speedup:.0f}x (target >= 1000x): {verdict(speedup >= 1000)}")


def membench(npusim, channels, requests):
    wall, cpu, _, out = run_rusage([npusim, "membench", "--memory", "hbm2", "--channels",
                                    str(channels), "--pattern", "seq-read", "--requests",
                                    str(requests)])
    host = json.loads(out)["host"]
    inside = host["requests_per_cpu_second"] / 1e6
    outside = requests / cpu / 1e6
    print(f"membench hbm2 seq-read, {channels} channel(s), {requests} requests: "
          f"{inside:.2f} M req/cpu-s simulated, {outside:.2f} M req/cpu-s whole process "
          f"(target >= 5): {verdict(min(inside, outside) >= 5)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per simulation, best kept")
    ap.add_argument("--starts", type=int, default=300, help="process starts to average")
    args = ap.parse_args()
    npusim = os.environ.get("NPUSIM", os.path.join(REPO, "build/sim/npusim"))
    if not os.access(npusim, os.X_OK):
        sys.exit(f"perf_targets: {npusim} not found; build npusim or set NPUSIM")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"# {npusim} on {os.cpu_count()} CPUs, load average {' '.join(load)}")
    simulate(npusim, "resnet50 tpu-v1, values + check", ["--hw", "tpu-v1", "--workload",
                                                         "resnet50"], args.repeat, 1.0)
    simulate(npusim, "vgg16 tpu-v1, values + check", ["--hw", "tpu-v1", "--workload", "vgg16"],
             args.repeat, 4.0, 512)
    simulate(npusim, "resnet50 tpu-v1, timing only", ["--hw", "tpu-v1", "--workload", "resnet50",
                                                      "--values", "off"], args.repeat, 0.4)
    process_start(npusim, args.starts)
    for channels in (1, 8):
        membench(npusim, channels, 2000000)
    with open("/proc/loadavg") as f:
        print(f"# load average at the end {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
