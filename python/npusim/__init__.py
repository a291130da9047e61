"""npusim, the cycle-accurate TPU/NPU simulator, as a Python module (docs/python.md).

    import npusim
    r = npusim.run(hw="tpu-v1", workload="mnist-cnn")
    r.stats["total_cycles"]       # stats.json as a dict
    r.outputs["logits"]           # float32 NumPy arrays, as --save-outputs writes them
    pandas.DataFrame(r.layers)    # one dict per layer

Bad input raises npusim.InputError (a ValueError) with the command line's located message.
Threads: each call releases the GIL. Compilation runs in parallel, but SystemC keeps one
simulation context per process, so the simulations of runs in several threads take turns (a
process-wide lock); every run gets a fresh context and gives the result it gives alone. For
parallel sweeps use processes (scripts/dse.py does).
"""

import csv
import io
import json
import os
import tempfile

import numpy as np

from . import _npusim
from ._npusim import InputError, InternalError

__all__ = ["run", "generate", "decoders", "GenerateResult", "train", "TrainResult", "serve", "ServeResult", "compile", "validate", "presets", "zoo", "resolved_hardware", "Result",
           "InputError", "InternalError"]


class Result:
    """A run's results: stats (dict, equal to stats.json), outputs / intermediates /
    float_outputs (name -> float32 array, the graph's file layout), layers (list of dicts),
    hardware (the resolved description), report(), trace(path), html(path)."""

    def __init__(self, raw):
        self._stats_text, self._hardware_text = raw["stats"], raw["hardware"]
        self.stats = json.loads(self._stats_text)
        self.hardware = json.loads(self._hardware_text)
        self.outputs = dict(raw["outputs"])
        self.intermediates = dict(raw["intermediates"])
        self.float_outputs = dict(raw["float_outputs"])
        self.wall_seconds = raw["wall_seconds"]
        self.mismatch = raw["mismatch"]  # non-empty: the functional check failed (a bug)
        self._handle = raw["handle"]

    @property
    def layers(self):
        return self.stats["layers"]

    def report(self, per_layer=False):
        """report.txt (per_layer: with the per-layer tables)."""
        return self._handle.report(per_layer)

    def stats_json(self):
        """stats.json's text, as `npusim run --out` writes it."""
        return self._stats_text

    def hardware_json(self):
        """config.resolved.json's text, as `npusim run --out` writes it."""
        return self._hardware_text

    def layers_csv(self):
        return self._handle.layers_csv()

    def descriptors(self):
        """(path, unit, description) of every figure of stats (npusim run --list-stats)."""
        return self._handle.descriptors()

    def trace(self, path):
        """Writes the Chrome/Perfetto trace JSON to `path` (the run needs trace=True)."""
        self._handle.write_trace_json(os.fspath(path))

    def html(self, path):
        """Writes the self-contained HTML report to `path` (the run needs trace=True)."""
        self._handle.write_html(os.fspath(path))

    def __repr__(self):
        s = self.stats
        return (f"<npusim.Result {s['workload']} on {s['hardware']}: "
                f"{s['total_cycles']} cycles, batch {s['batch']}>")


def _target(tmp, hw, workload, inputs, batch, seed, dtype, parallel, micro_batch, host_ops,
            calibration, calibration_method, calibration_percentile):
    t = {"hw": hw, "hw_json": None, "batch": batch, "seed": seed, "dtype": dtype or "",
         "input_npy": "", "parallel": parallel, "micro_batch": micro_batch,
         "host_ops": host_ops if isinstance(host_ops, str) else ",".join(host_ops or ()),
         "calibration_file": "", "calibration_method": calibration_method,
         "calibration_percentile": calibration_percentile}
    if isinstance(hw, dict):
        t["hw"] = "hw"
        t["hw_json"] = json.dumps(hw)
    elif not isinstance(hw, (str, os.PathLike)):
        raise TypeError("hw: expected a preset name, a path or a dict")
    else:
        t["hw"] = os.fspath(hw)
    if isinstance(workload, (bytes, bytearray)):  # an ONNX model's bytes
        path = os.path.join(tmp(), "model.onnx")
        with open(path, "wb") as f:
            f.write(workload)
        t["workload"] = path
    elif isinstance(workload, (str, os.PathLike)):
        t["workload"] = os.fspath(workload)
    else:
        raise TypeError("workload: expected a zoo name, a path or ONNX bytes")
    for key, value, name in (("input_npy", inputs, "input.npy"),
                             ("calibration_file", calibration, "calibration.npy")):
        if value is None:
            continue
        if isinstance(value, (str, os.PathLike)):
            t[key] = os.fspath(value)
        else:
            path = os.path.join(tmp(), name)
            np.save(path, np.ascontiguousarray(value))
            t[key] = path
    return t


class _TempDir:
    """A temporary directory made on first use."""

    def __init__(self):
        self.dir = None

    def __call__(self):
        if self.dir is None:
            self.dir = tempfile.TemporaryDirectory(prefix="npusim-")
        return self.dir.name

    def close(self):
        if self.dir is not None:
            self.dir.cleanup()


def run(hw, workload, inputs=None, *, values=True, batch=None, seed=1, dtype=None,
        fidelity="fast", parallel="auto", micro_batch=None, host_ops=None, calibration=None,
        calibration_method="max", calibration_percentile=None, intermediates=False,
        float_outputs=False, trace=False, prune=None, weight_dtype=None, weight_group=None,
        compress_weights=None, memory_fidelity=None):
    """Compiles `workload` for `hw` and simulates it (npusim run).

    hw: a preset name (presets()), a hardware JSON file, or a description as a dict.
    workload: a zoo name (zoo()), a JSON graph or .onnx file, or an ONNX model's bytes.
    inputs: the input batch (a NumPy array as --input takes it, or a .npy path); default random.
    values=False runs timing only (same cycles, no values, no outputs, no check).
    trace=True records the timeline for Result.trace / Result.html.
    prune: "magnitude:F", "global:F" or "N:M" (npusim run --prune; docs/compression.md).
    dtype: "int8", "bf16", "fp8-e4m3" or "fp8-e5m2" (--dtype; fp8 needs a matrix unit whose
      data_types.fp8 lists it, e.g. "tpu-v4-like-fp8"; docs/quantization.md).
    weight_dtype: "int4" for weight-only int4 (npusim run --weight-dtype: W4A8 with dtype "int8",
        W4A16 with bf16 scales with "bf16"; docs/compression.md).
    weight_group: with weight_dtype "int4", a scale per group of this many weights (--weight-group).
    compress_weights: "auto" or "huffman" to store weights compressed off chip (npusim run
        --compress-weights).
    memory_fidelity: "command" or "bulk" (--memory-fidelity; docs/memory_system.md); default the
    hardware's memory.fidelity.
    Returns a Result; raises InputError on bad input.
    """
    tmp = _TempDir()
    try:
        o = _target(tmp, hw, workload, inputs, batch, seed, dtype, parallel, micro_batch,
                    host_ops, calibration, calibration_method, calibration_percentile)
        o.update(fidelity=fidelity, values=bool(values), intermediates=bool(intermediates),
                 float_outputs=bool(float_outputs), trace=bool(trace), prune=prune or "",
                 weight_dtype=weight_dtype or "", weight_group=weight_group,
                 compress_weights=compress_weights or "",
                 memory_fidelity=memory_fidelity or "")
        return Result(_npusim.run(o))
    finally:
        tmp.close()


class GenerateResult:
    """A generation's results: stats (dict, equal to stats.json; stats["generation"] holds
    ttft_s, tpot_s, tokens_per_s, ...), tokens (int32 [batch, new_tokens], the generated ids,
    empty with values=False), prompt (int32 [batch, prompt_tokens]), report (report.txt),
    wall_seconds, mismatch ("" unless the check failed: a bug in npusim); trace(path) writes the
    Chrome / Perfetto trace of the programs (generate(..., trace=True)), html(path) the HTML
    report (npusim generate --trace-json, --html)."""

    def __init__(self, r):
        self.stats = json.loads(r["stats"])
        self.tokens = r["tokens"]
        self.prompt = r["prompt"]
        self.logits = r["logits"]  # float32 [new_tokens, batch, vocab], None without values
        self.report = r["report"]
        self.wall_seconds = r["wall_seconds"]
        self.mismatch = r["mismatch"]
        self._trace_json = r["trace_json"]
        self._html = r["html"]

    def trace(self, path):
        """Writes the Chrome / Perfetto trace JSON to `path` (the run needs trace=True)."""
        if not self._trace_json:
            raise InputError(f"trace '{os.fspath(path)}': the run recorded no trace "
                             "(generate(..., trace=True))")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._trace_json)

    def html(self, path):
        """Writes the self-contained HTML report of the generation to `path`."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._html)


def generate(hw, workload, prompt=None, *, prompt_tokens=None, new_tokens=8, batch=None,
             weights=None, values=True, seed=1, dtype=None, fidelity="fast", parallel="auto",
             prune=None, weight_dtype=None, weight_group=None, compress_weights=None,
             memory_fidelity=None, trace=False, trace_steps="all"):
    """Generates tokens with a decoder-only transformer (npusim generate, docs/llm.md).

    workload: a built-in decoder (decoders()) or a decoder JSON file.
    prompt: the prompt ids (an int array [batch, tokens] or a .npy path); default drawn from the
    seed, prompt_tokens long (default 16). weights: a .safetensors file (Hugging Face names).
    prune, weight_dtype, weight_group, compress_weights: as for run (docs/compression.md).
    memory_fidelity: "command" or "bulk", as for run.
    trace=True records the programs named by trace_steps ("all", or e.g. "prefill,1,last") for
    GenerateResult.trace.
    Returns a GenerateResult; raises InputError on bad input.
    """
    tmp = _TempDir()
    try:
        o = _target(tmp, hw, workload, prompt, batch, seed, dtype, parallel, None, None, None,
                    "max", None)
        o.update(fidelity=fidelity, values=bool(values), prompt_tokens=int(prompt_tokens or 0),
                 new_tokens=int(new_tokens), weights=os.fspath(weights) if weights else "",
                 prune=prune or "", weight_dtype=weight_dtype or "", weight_group=weight_group,
                 compress_weights=compress_weights or "",
                 memory_fidelity=memory_fidelity or "", trace=bool(trace),
                 trace_steps=str(trace_steps))
        return GenerateResult(_npusim.generate(o))
    finally:
        tmp.close()


class TrainResult:
    """A training run's results: stats (dict, equal to stats.json; stats["training"] holds the
    loss per step, held-out accuracy, step cycles, samples/s, energy, off-chip memory), loss (list
    of floats, per step), report (report.txt), wall_seconds, mismatch ("" unless a step's check
    failed: a bug in npusim); html(path) writes the HTML report (npusim train --html)."""

    def __init__(self, r):
        self.stats = json.loads(r["stats"])
        self.loss = list(r["loss"])
        self.report = r["report"]
        self.wall_seconds = r["wall_seconds"]
        self.mismatch = r["mismatch"]
        self._html = r["html"]

    def html(self, path):
        """Writes the HTML report (npusim train --html)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._html)


def train(hw, workload, *, batch=32, steps=1, optimizer="sgd", lr=0.01, data=None,
          shuffle=False, eval_every=0, save_weights=None, seed=1, dtype=None, fidelity="fast",
          memory_fidelity=None, parallel="auto", values=True, loss="auto", optimizer_on="chip"):
    """Training steps of a workload on the simulated chip (npusim train, docs/training.md).

    workload: a classifier ending in a softmax (workloads/training/digits-mlp.json) or, with
    loss "mse" (mean squared error against float targets y.npy of the output's shape), any
    other (workloads/training/tiny-encoder.json). loss: "xent", "mse" or "auto".
    optimizer: "sgd", "momentum" or "adam". data: a directory with x.npy / y.npy (and heldout/),
    default random samples. save_weights: a directory for initial/ and final/ parameters.
    parallel: "auto" or "data" on a chip of several cores (each core trains on batch / cores
    samples, the gradients summed by a ring all-reduce; "data" needs a batch that is a multiple
    of the cores). values=False: timing only (no data, weights or loss; the step's cycles).
    optimizer_on: "chip" (the fp32 update on the vector unit, checked bit for bit against the
    host's every step) or "host" (the host updates the masters between steps, no cycles).
    Returns a TrainResult; raises InputError on bad input (dtype "int8" among it).
    """
    tmp = _TempDir()
    try:
        o = _target(tmp, hw, workload, None, batch, seed, dtype, parallel, None, None, None, "max",
                    None)
        o.update(fidelity=fidelity, steps=int(steps), optimizer=optimizer, lr=float(lr), loss=loss,
                 data=os.fspath(data) if data else "", shuffle=bool(shuffle),
                 eval_every=int(eval_every),
                 save_weights=os.fspath(save_weights) if save_weights else "",
                 memory_fidelity=memory_fidelity or "", values=bool(values),
                 optimizer_on=optimizer_on)
        return TrainResult(_npusim.train(o))
    finally:
        tmp.close()


class ServeResult:
    """What npusim.serve returns: stats (dict, stats.json; the figures under "serving"), requests
    and steps (lists of dicts, requests.csv and steps.csv with numbers as floats), report()
    (report.txt); stats_json(), requests_csv() and steps_csv() give the files' text as the
    command line writes them; trace(path) and html(path) write the trace and the HTML report."""

    def __init__(self, raw):
        self._raw = raw
        self.stats = json.loads(raw["stats"])
        self.requests = _csv_rows(raw["requests_csv"])
        self.steps = _csv_rows(raw["steps_csv"])

    def report(self):
        return self._raw["report"]

    def stats_json(self):
        return self._raw["stats"]

    def requests_csv(self):
        return self._raw["requests_csv"]

    def steps_csv(self):
        return self._raw["steps_csv"]

    def trace(self, path):
        """Writes the Chrome / Perfetto trace (npusim serve --trace-json)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._raw["trace_json"])

    def html(self, path):
        """Writes the HTML report (npusim serve --html)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._raw["html"])


def _csv_rows(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    for row in rows:
        for k, v in row.items():
            if k != "id":
                row[k] = float(v) if v != "" else None
    return rows


def serve(hw, workload, trace, *, max_batch=32, kv_block_tokens=16, max_step_tokens=2048,
          kv_cache_bytes=None, slo_ttft=0.0, slo_tpot=0.0, grid_tokens=64, max_simulated_batch=16,
          seed=1, dtype=None, fidelity="fast", parallel="auto", memory_fidelity=None):
    """Replays a request trace (CSV: id,arrival_s,prompt_tokens,output_tokens) on the simulated
    chip with continuous batching over a paged KV cache (npusim serve, docs/serving.md).
    Returns a ServeResult; raises InputError on bad input."""
    tmp = _TempDir()
    try:
        o = _target(tmp, hw, workload, None, None, seed, dtype, parallel, None, None, None, "max",
                    None)
        o.update(fidelity=fidelity, trace=os.fspath(trace), max_batch=int(max_batch),
                 kv_block_tokens=int(kv_block_tokens), max_step_tokens=int(max_step_tokens),
                 kv_cache_bytes=kv_cache_bytes, slo_ttft=float(slo_ttft),
                 slo_tpot=float(slo_tpot), grid_tokens=int(grid_tokens),
                 max_simulated_batch=int(max_simulated_batch),
                 memory_fidelity=memory_fidelity or "")
        return ServeResult(_npusim.serve(o))
    finally:
        tmp.close()


def decoders():
    """The built-in decoders (npusim generate --list), as dicts."""
    return _npusim.decoders()


def compile(hw, workload, inputs=None, *, batch=None, seed=1, dtype=None, parallel="auto",
            micro_batch=None, host_ops=None, calibration=None, calibration_method="max",
            calibration_percentile=None):
    """The program as assembly text (npusim compile)."""
    tmp = _TempDir()
    try:
        return _npusim.compile(_target(tmp, hw, workload, inputs, batch, seed, dtype, parallel,
                                       micro_batch, host_ops, calibration, calibration_method,
                                       calibration_percentile))
    finally:
        tmp.close()


def validate(hw, workload=None, *, batch=None):
    """Checks a hardware description (and compiles a workload on it): a dict with hw_name, and
    network, layers, macs, batch, instructions when a workload is given (npusim validate)."""
    tmp = _TempDir()
    try:
        o = _target(tmp, hw, workload if workload is not None else "", None, batch, 1, None,
                    "auto", None, None, None, "max", None)
        return _npusim.validate(o)
    finally:
        tmp.close()


def presets():
    """The built-in hardware presets: dicts with name, headline, description, facts."""
    return _npusim.presets()


def resolved_hardware(hw):
    """A preset or hardware file with every default filled in (npusim presets --show)."""
    return json.loads(_npusim.resolved_hardware(os.fspath(hw)))


def zoo():
    """The built-in networks: dicts with name, batch, layers, macs, description."""
    return _npusim.zoo()
