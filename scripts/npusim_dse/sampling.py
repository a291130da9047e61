"""Parameter domains and the three ways to pick points from them: grid, random, Latin hypercube.

A domain is either discrete (a list of values) or continuous (an interval, sampled on a linear or
logarithmic scale, optionally rounded to integers). Sampling is reproducible: it draws only from
`random.Random(seed).random()`, whose sequence for a given seed Python keeps stable across
versions, and maps those draws itself.
"""

import itertools
import math
import random


class Domain:
    """What one parameter may take. `values` for a discrete domain, else `low`/`high`/`log`."""

    def __init__(self, values=None, low=None, high=None, log=False, integer=False):
        self.values = values
        self.low, self.high, self.log, self.integer = low, high, log, integer

    @property
    def discrete(self):
        return self.values is not None

    def at(self, u):
        """The value at quantile `u` in [0, 1)."""
        if self.discrete:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        if self.integer:
            return min(max(int(round(x)), int(self.low)), int(self.high))
        return x


def _round_if_integer(x, integer):
    return int(round(x)) if integer else x


def linear_values(low, high, step):
    """low, low + step, ... up to high inclusive (a small tolerance absorbs float steps)."""
    n = int(math.floor((high - low) / step + 1e-9)) + 1
    return [low + i * step for i in range(n)]


def spaced_values(low, high, num, log, integer):
    """`num` values from low to high inclusive, evenly spaced on a linear or log scale."""
    if num == 1:
        return [_round_if_integer(low, integer)]
    out = []
    for i in range(num):
        t = i / (num - 1)
        if log:
            x = math.exp(math.log(low) + t * (math.log(high) - math.log(low)))
        else:
            x = low + t * (high - low)
        out.append(_round_if_integer(x, integer))
    # Rounding may merge neighbours (e.g. integers on a log scale): keep each value once.
    return list(dict.fromkeys(out))


def grid(domains):
    """Every combination, the first parameter varying slowest."""
    return [list(combo) for combo in itertools.product(*(d.values for d in domains))]


def random_samples(domains, samples, seed):
    rng = random.Random(seed)
    return [[d.at(rng.random()) for d in domains] for _ in range(samples)]


def latin_hypercube(domains, samples, seed):
    """One sample in each of `samples` equal strata of every parameter, strata paired at random."""
    rng = random.Random(seed)
    columns = []
    for d in domains:
        strata = list(range(samples))
        for i in range(samples - 1, 0, -1):  # Fisher-Yates with our own draws
            j = min(int(rng.random() * (i + 1)), i)
            strata[i], strata[j] = strata[j], strata[i]
        columns.append([d.at((s + rng.random()) / samples) for s in strata])
    return [[columns[p][i] for p in range(len(domains))] for i in range(samples)]
