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


class TraceError(ValueError):
    """A bad option or lengths file (the message names it)."""


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def parse_distribution(text, what):
    """A sampler rng -> int for `fixed:N`, `uniform:LO:HI` or `lognormal:MEDIAN:SIGMA`."""
    parts = str(text).split(":")
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
    raise TraceError(f"{what} '{text}': expected fixed:N, uniform:LO:HI or lognormal:MEDIAN:SIGMA")


def read_lengths(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    pairs = []
    for line, row in enumerate(rows, start=2):
        try:
            p, o = int(row["prompt_tokens"]), int(row["output_tokens"])
        except (KeyError, TypeError, ValueError):
            raise TraceError(f"{path}:{line}: expected integer columns prompt_tokens and "
                             "output_tokens") from None
        if p < 1 or o < 1:
            raise TraceError(f"{path}:{line}: lengths must be at least 1")
        pairs.append((p, o))
    if not pairs:
        raise TraceError(f"{path}: no rows")
    return pairs


def trace_csv(requests, rate, prompt="lognormal:256:0.8", output="lognormal:128:0.8",
              lengths=None, max_tokens=2048, seed=0):
    """The trace as CSV text (id,arrival_s,prompt_tokens,output_tokens) and its last arrival.
    The same arguments give the same text (random.Random(seed), whose sequence Python keeps)."""
    if requests < 1 or rate <= 0 or max_tokens < 1:
        raise TraceError("requests, rate and max_tokens must be positive")
    rng = random.Random(seed)
    pairs = read_lengths(lengths) if lengths else None
    draw_prompt = parse_distribution(prompt, "prompt")
    draw_output = parse_distribution(output, "output")
    clip = lambda n: max(1, min(max_tokens, n))  # noqa: E731
    t = 0.0
    lines = ["id,arrival_s,prompt_tokens,output_tokens\n"]
    for i in range(requests):
        t += rng.expovariate(rate)
        if pairs:
            p, o = pairs[i % len(pairs)]
        else:
            p, o = draw_prompt(rng), draw_output(rng)
        lines.append(f"r{i},{t:.6f},{clip(p)},{clip(o)}\n")
    return "".join(lines), t


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
    try:
        text, last = trace_csv(a.requests, a.rate, a.prompt,
                               a.output, a.lengths, a.max_tokens, a.seed)
    except TraceError as e:
        die(f"make_request_trace.py: {e}")
    with open(a.out, "w", newline="") as f:
        f.write(text)
    print(f"{a.out}: {a.requests} requests over {last:.1f} s")


if __name__ == "__main__":
    main()
