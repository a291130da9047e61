"""Serving sweeps (`"command": "serve"`, docs/dse.md): the spec's `serve` object, the flags a
parameter may vary, and each point's request trace.

A point's trace is written by scripts/make_request_trace.py's `trace_csv` from the `serve.trace`
object and the point's `rate` / `requests` parameters, or read from a CSV file; its text travels
in the run's task (a Dask worker needs no shared file system) and its hash is part of the run key.
"""

import functools
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import make_request_trace  # noqa: E402  (scripts/)

# npusim serve's options (`serve` object keys, and parameter flags): what each takes.
SERVE_FLAGS = {
    "max_batch": "count", "kv_block_tokens": "count", "max_step_tokens": "count",
    "kv_cache_bytes": "count", "slo_ttft": "seconds", "slo_tpot": "seconds",
    "grid_tokens": "count", "max_simulated_batch": "count",
}
# The synthetic trace's settings (`serve.trace` keys); rate and requests may also be parameters.
TRACE_KEYS = ("requests", "rate", "prompt", "output", "lengths", "max_tokens", "seed")
TRACE_FLAGS = ("rate", "requests")
EXPECTED = {"count": "an integer of at least 1", "seconds": "a number of seconds >= 0",
            "rate": "a number of requests per second above 0"}


def flag_ok(flag, v):
    """Whether `v` is a value npusim serve (or the trace) takes for this flag."""
    kind = "rate" if flag == "rate" else "count" if flag == "requests" else SERVE_FLAGS.get(flag)
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "count":
        return number and float(v).is_integer() and v >= 1
    if kind == "seconds":
        return number and v >= 0
    if kind == "rate":
        return number and v > 0
    return False


def expected(flag):
    kind = "rate" if flag == "rate" else "count" if flag == "requests" else SERVE_FLAGS[flag]
    return EXPECTED[kind]


class TraceSource:
    """Where a point's trace comes from: a CSV file, or the synthetic settings."""

    def __init__(self, path=None, settings=None):
        self.path, self.settings = path, settings or {}

    def text(self, varied):
        """(CSV text, label) of the trace for a point whose parameters set `varied`."""
        if self.path is not None:
            return _read(self.path), os.path.basename(self.path)
        s = dict(self.settings, **varied)
        text, _ = _synthetic(int(s["requests"]), float(s["rate"]), s.get("prompt"),
                             s.get("output"), s.get("lengths"), int(s.get("max_tokens", 2048)),
                             int(s.get("seed", 0)))
        return text, f"synthetic rate {s['rate']}/s, {s['requests']} requests"


@functools.lru_cache(maxsize=64)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=64)
def _synthetic(requests, rate, prompt, output, lengths, max_tokens, seed):
    kwargs = {k: v for k, v in (("prompt", prompt), ("output", output)) if v is not None}
    return make_request_trace.trace_csv(requests, rate, lengths=lengths, max_tokens=max_tokens,
                                        seed=seed, **kwargs)


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def load(loader, serve, params):
    """Checks the spec's `serve` object; returns (fixed serve flags, TraceSource). Problems go to
    loader.error with their JSON pointer."""
    flags, source = {}, TraceSource()
    if not loader.keys(serve, "/serve", tuple(SERVE_FLAGS) + ("trace",), required=("trace",)):
        return flags, source
    for k, v in serve.items():
        if k == "trace":
            continue
        if flag_ok(k, v):
            flags[k] = v
        else:
            loader.error(f"/serve/{k}", f"expected {expected(k)}, got {v!r}")
    varied = {p.flag for p in params if p.flag in TRACE_FLAGS}
    trace = serve.get("trace")
    if isinstance(trace, str):
        path = loader.file(trace)
        if varied:
            loader.error("/serve/trace", f"a trace file has fixed requests: parameters "
                         f"{', '.join(sorted(varied))} need a synthetic trace (an object)")
        try:
            _read(path)
        except OSError as e:
            loader.error("/serve/trace", f"'{trace}': cannot read {path}: {e.strerror}")
        return flags, TraceSource(path=path)
    if not loader.keys(trace, "/serve/trace", TRACE_KEYS):
        return flags, source
    settings = dict(trace)
    for k in TRACE_FLAGS:
        if k not in settings and k not in varied:
            loader.error("/serve/trace", f"missing '{k}' (or a parameter with flag {k})")
        elif k in settings and not flag_ok(k, settings[k]):
            loader.error(f"/serve/trace/{k}", f"expected {expected(k)}, got {settings[k]!r}")
    if "lengths" in settings:
        if not isinstance(settings["lengths"], str):
            loader.error("/serve/trace/lengths", "expected a CSV file of length pairs")
        else:
            settings["lengths"] = loader.file(settings["lengths"])
    for k in ("max_tokens", "seed"):
        if k in settings and (not isinstance(settings[k], int) or isinstance(settings[k], bool)
                              or settings[k] < (1 if k == "max_tokens" else 0)):
            loader.error(f"/serve/trace/{k}", "expected a non-negative integer"
                         if k == "seed" else "expected an integer of at least 1")
    for k in ("prompt", "output"):
        if k in settings:
            try:
                make_request_trace.parse_distribution(settings[k], k)
            except make_request_trace.TraceError as e:
                loader.error(f"/serve/trace/{k}", str(e))
    if "lengths" in settings and isinstance(settings["lengths"], str):
        try:
            make_request_trace.read_lengths(settings["lengths"])
        except make_request_trace.TraceError as e:
            loader.error("/serve/trace/lengths", str(e))
    return flags, TraceSource(settings=settings)
