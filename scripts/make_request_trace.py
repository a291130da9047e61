#!/usr/bin/python3
"""Writes a synthetic LLM serving trace for `npusim serve` (docs/serving.md): requests arriving as a
Poisson process at a given rate, their prompt and output lengths drawn from distributions or
taken, in turn, from a CSV file of real length pairs.

  scripts/make_request_trace.py OUT.csv --requests 1000 --rate 4 \\
      --prompt lognormal:256:0.8 --output uniform:16:256 [--seed 0]
  scripts/make_request_trace.py OUT.csv --requests 500 --rate 2 --lengths pairs.csv

A distribution is `fixed:N`, `uniform:LO:HI` (integers, both ends included) or
`lognormal:MEDIAN:SIGMA` (exp of a normal with mean log(MEDIAN) and deviation SIGMA, rounded),
each clipped to [1, --max-tokens]. A lengths file has a header with the columns
`prompt_tokens,output_tokens` (other columns are ignored); its rows are used in order, repeated
when the trace is longer. The output has the columns id,arrival_s,prompt_tokens,output_tokens.
"""

import argparse
import csv
import math
import random
import sys


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def parse_distribution(text, what):
    parts = text.split(":")
    try:
        if parts[0] == "fixed" and len(parts) == 2:
            n = int(parts[1])
            return lambda rng: n
        if parts[0] == "uniform" and len(parts) == 3:
            lo, hi = int(parts[1]), int(parts[2])
            if lo > hi:
                raise ValueError
            return lambda rng: rng.randint(lo, hi)
        if parts[0] == "lognormal" and len(parts) == 3:
            median, sigma = float(parts[1]), float(parts[2])
            if median <= 0 or sigma < 0:
                raise ValueError
            return lambda rng: int(round(math.exp(rng.gauss(math.log(median), sigma))))
    except ValueError:
        pass
    die(f"make_request_trace.py: {what} '{text}': expected fixed:N, uniform:LO:HI or "
             "lognormal:MEDIAN:SIGMA")


def read_lengths(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        die(f"make_request_trace.py: {path}: {e.strerror}")
    pairs = []
    for line, row in enumerate(rows, start=2):
        try:
            p, o = int(row["prompt_tokens"]), int(row["output_tokens"])
        except (KeyError, TypeError, ValueError):
            die(f"{path}:{line}: expected integer columns prompt_tokens and output_tokens")
        if p < 1 or o < 1:
            die(f"{path}:{line}: lengths must be at least 1")
        pairs.append((p, o))
    if not pairs:
        die(f"{path}: no rows")
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("out")
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--rate", type=float, required=True, help="mean arrivals per second")
    ap.add_argument("--prompt", default="lognormal:256:0.8")
    ap.add_argument("--output", default="lognormal:128:0.8")
    ap.add_argument("--lengths", help="CSV of real (prompt_tokens, output_tokens) pairs")
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.requests < 1 or a.rate <= 0 or a.max_tokens < 1:
        die("make_request_trace.py: --requests, --rate and --max-tokens must be positive")
    rng = random.Random(a.seed)
    pairs = read_lengths(a.lengths) if a.lengths else None
    prompt = parse_distribution(a.prompt, "--prompt")
    output = parse_distribution(a.output, "--output")
    clip = lambda n: max(1, min(a.max_tokens, n))  # noqa: E731
    t = 0.0
    with open(a.out, "w", newline="") as f:
        f.write("id,arrival_s,prompt_tokens,output_tokens\n")
        for i in range(a.requests):
            t += rng.expovariate(a.rate)
            if pairs:
                p, o = pairs[i % len(pairs)]
            else:
                p, o = prompt(rng), output(rng)
            f.write(f"r{i},{t:.6f},{clip(p)},{clip(o)}\n")
    print(f"{a.out}: {a.requests} requests over {t:.1f} s")


if __name__ == "__main__":
    main()
