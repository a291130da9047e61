#!/usr/bin/env python3
"""Randomized differential test: random valid hardware descriptions x small zoo networks x batch
1-3 x int8/bf16. Every run must pass its functional check (exit 0), or be refused with exit 2 for a
reason that is true: the refusal names what to raise, the hardware really has less than that, and
raising it to the value asked for makes that complaint go away.

  random_hw_test.py NPUSIM [--runs N] [--seed S]

The seed is NPUSIM_RANDOM_SEED, or --seed, or drawn at random; it is printed first and with every
failure, so a failing case can be run again. Exit 0 when every run is right, 1 otherwise.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

NETWORKS = ("mnist-cnn", "lenet5", "mlp-1000", "bert-encoder")
DRAM_PRESETS = ("hbm2", "ddr3", "lpddr4")
REFUSAL = re.compile(r"does not fit: .*the hardware has (\d+)[:;] raise ([a-z_.]+) to at least (\d+)")


def pick_capacity(rng, lo, hi, banks):
    """A capacity in [lo, hi] bytes (log-uniform), a multiple of `banks` and of 64."""
    value = int(2 ** rng.uniform(lo.bit_length() - 1, hi.bit_length() - 1))
    step = banks * 64
    return max(lo, value) // step * step + step


def random_hardware(rng, name):
    rows, cols = (rng.choice((8, 16, 32, 48, 64, 128, 256)) for _ in range(2))
    count = rng.randint(1, 4)
    banks = {b: rng.choice((1, 2, 4, 8, 16)) for b in ("unified_buffer", "weight_buffer", "accumulators")}
    weight_min = 2 * rows * cols * 2  # two tiles; bf16 elements are 2 bytes
    acc_min = 2 * max(rows, cols) * cols * 4 * count
    hw = {
        "schema_version": 1,
        "name": name,
        "clock_mhz": rng.choice((500, 700, 1000)),
        "matrix_unit": {"rows": rows, "cols": cols, "dataflow": rng.choice(("ws", "os", "is")),
                        "count": count, "weight_double_buffer": rng.random() < 0.5},
        "buffers": {
            "unified_buffer": {"capacity_bytes": pick_capacity(rng, 1 << 14, 24 << 20, banks["unified_buffer"]),
                               "banks": banks["unified_buffer"]},
            "weight_buffer": {"capacity_bytes": pick_capacity(rng, weight_min, max(weight_min, 1 << 20),
                                                              banks["weight_buffer"]),
                              "banks": banks["weight_buffer"]},
            "accumulators": {"capacity_bytes": pick_capacity(rng, acc_min, max(acc_min, 4 << 20),
                                                             banks["accumulators"]),
                             "banks": banks["accumulators"]},
        },
    }
    if rng.random() < 0.5:
        hw["memory"] = {"model": "simple", "bandwidth_gbps": rng.choice((8, 34, 300)),
                        "latency_ns": rng.choice((50, 100, 200))}
    else:
        # 256 MiB: within every preset's capacity at one channel (the 8 GiB default exceeds
        # lpddr4's 2 GiB).
        hw["memory"] = {"model": "dram", "preset": rng.choice(DRAM_PRESETS),
                        "channels": rng.choice((0, 1, 2, 4)), "capacity_bytes": 1 << 28}
    return hw


def set_key(hw, dotted, value):
    node = hw
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def get_key(hw, dotted):
    node = hw
    for k in dotted.split("."):
        node = node[k]
    return node


def run(npusim, hw, workdir, network, batch, dtype):
    path = os.path.join(workdir, hw["name"] + ".json")
    with open(path, "w") as f:
        json.dump(hw, f)
    return subprocess.run([npusim, "run", "--hw", path, "--workload", network, "--batch",
                           str(batch), "--dtype", dtype], capture_output=True, text=True, timeout=600)


def check_case(npusim, hw, workdir, network, batch, dtype):
    """(outcome, None) when the run is right ("ran" or "refused: <key>"), else (None, what is
    wrong)."""
    problem = None
    p = run(npusim, hw, workdir, network, batch, dtype)
    if p.returncode == 0:
        if "functional check   outputs match the reference" not in p.stdout:
            return None, f"exit 0 without a passing functional check:\n{p.stdout}"
        return "ran", None
    problem = refusal_problem(npusim, hw, workdir, network, batch, dtype, p)
    return (None, problem) if problem else ("refused: " + REFUSAL.search(p.stderr).group(2), None)


def refusal_problem(npusim, hw, workdir, network, batch, dtype, p):
    """None when the run `p` was refused for a true reason, else what is wrong."""
    if p.returncode != 2:
        return f"exit {p.returncode}:\n{p.stderr.strip()}"
    m = REFUSAL.search(p.stderr)
    if not m:
        return f"refused without saying what to raise:\n{p.stderr.strip()}"
    has, key, need = int(m.group(1)), m.group(2), int(m.group(3))
    if need <= has:
        return f"contradictory refusal (asks for {need}, the hardware has {has}):\n{p.stderr.strip()}"
    if get_key(hw, key) != has:
        return f"the refusal says {key} is {has}, the description has {get_key(hw, key)}"
    # Raised as asked (rounded up to whole banks), the same complaint must not come back.
    raised = json.loads(json.dumps(hw))
    banks_key = key.rsplit(".", 1)[0] + ".banks"
    banks = get_key(hw, banks_key) if key.startswith("buffers.") else 1
    set_key(raised, key, -(-need // banks) * banks)
    again = run(npusim, raised, workdir, network, batch, dtype)
    m2 = REFUSAL.search(again.stderr) if again.returncode == 2 else None
    if again.returncode not in (0, 2):
        return f"raised {key} to {need}: exit {again.returncode}:\n{again.stderr.strip()}"
    if m2 and m2.group(2) == key and int(m2.group(3)) >= need:
        return f"raised {key} to {need} as asked, refused again:\n{again.stderr.strip()}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("npusim")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    seed = args.seed
    if os.environ.get("NPUSIM_RANDOM_SEED"):
        seed = int(os.environ["NPUSIM_RANDOM_SEED"])
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 32)
    print(f"random_hw_test: seed {seed}, {args.runs} runs", flush=True)
    rng = random.Random(seed)
    failures = 0
    outcomes = {}
    with tempfile.TemporaryDirectory(prefix="npusim-random-hw-") as workdir:
        for i in range(args.runs):
            hw = random_hardware(rng, f"random-{i}")
            network, batch, dtype = rng.choice(NETWORKS), rng.randint(1, 3), rng.choice(("int8", "bf16"))
            outcome, problem = check_case(args.npusim, hw, workdir, network, batch, dtype)
            status = outcome if problem is None else "FAILED"
            outcomes[status] = outcomes.get(status, 0) + 1
            print(f"  run {i}: {network} batch {batch} {dtype}: {status}", flush=True)
            if problem is not None:
                failures += 1
                print(f"FAILED (seed {seed}, run {i}): {network} --batch {batch} --dtype {dtype} on\n"
                      f"{json.dumps(hw, indent=1)}\n{problem}", flush=True)
    print("random_hw_test: " + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())))
    if failures:
        print(f"random_hw_test: {failures} of {args.runs} runs failed; seed {seed} "
              f"(NPUSIM_RANDOM_SEED={seed} repeats them)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
