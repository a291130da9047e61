"""Reading and checking a sweep spec (docs/dse.md), and expanding it into runs.

Every problem in a spec is collected and reported at once, each as `SPEC: /json/pointer: what was
expected`, so a user fixes them in one pass. A point is one hardware description plus the run
flags; a run is a point on one workload, keyed by a hash of everything that decides its result.
"""

import copy
import hashlib
import json
import os
import re

from . import sampling, serve_spec
from .expr import Expression, ExpressionError
from .npusim_cli import NpusimError, decoder_names, resolved_hw, zoo_names

# npusim run flags a parameter may vary, and those a spec's "run" may fix
FLAGS = ("hw", "batch", "dtype", "seed", "fidelity", "prune", "weight_dtype", "weight_group",
         "compress_weights", "memory_fidelity")
RUN_KEYS = ("batch", "dtype", "seed", "fidelity", "values", "prune", "weight_dtype",
            "weight_group", "compress_weights", "memory_fidelity")
COMMANDS = ("run", "serve")
# npusim run flags npusim serve takes too
SERVE_RUN_KEYS = ("dtype", "seed", "fidelity", "memory_fidelity")
METHODS = ("grid", "random", "lhs")
# Columns of results.csv that a parameter name must not shadow.
RESERVED = ("point", "key", "workload", "status", "error", "run_seconds")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpecError(Exception):
    def __init__(self, problems):
        super().__init__("\n".join(problems))
        self.problems = problems


def _escape(token):
    return str(token).replace("~", "~0").replace("/", "~1")


def parse_pointer(pointer):
    """RFC 6901 tokens of a JSON pointer; None when it is not one."""
    if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
        return None
    if pointer == "":
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def pointer_get(doc, tokens):
    for t in tokens:
        if isinstance(doc, dict) and t in doc:
            doc = doc[t]
        elif isinstance(doc, list) and t.isdigit() and int(t) < len(doc):
            doc = doc[int(t)]
        else:
            raise KeyError(t)
    return doc


def pointer_set(doc, tokens, value):
    parent = pointer_get(doc, tokens[:-1])
    if isinstance(parent, list):
        parent[int(tokens[-1])] = value
    else:
        parent[tokens[-1]] = value


def looks_like_path(name):
    return "/" in name or name.endswith(".json") or name.endswith(".onnx")


def _type_name(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null"


def conform(value, like):
    """`value` converted to the JSON type of `like` (the base's value at that pointer), or None."""
    t = _type_name(like)
    if t == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return None
    if t == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return value if _type_name(value) == t else None


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class Parameter:
    def __init__(self, name, place):
        self.name, self.place = name, place
        self.pointers = []  # token lists; empty for a flag
        self.flag = None
        self.domain = None
        self.labels = None  # value index -> label, with "values" only

    def label(self, value):
        if self.labels is not None:
            return self.labels[self.domain.values.index(value)]
        return value if not isinstance(value, (dict, list)) else canonical(value)


class Workload:
    def __init__(self, spec, label, batch, identity):
        self.spec = spec  # what npusim run --workload receives (a zoo name or an absolute path)
        self.label = label
        self.batch = batch
        self.identity = identity  # zoo name, or file name and content hash: part of the run key


class Run:
    """One point on one workload: what a worker needs to run it, and where it goes."""

    def __init__(self, point, workload, key, hw, flags, command="run", trace=None):
        self.point, self.workload, self.key, self.hw, self.flags = point, workload, key, hw, flags
        self.command, self.trace = command, trace  # trace: (CSV text, label) for serve

    def task(self, npusim):
        """A plain dict a worker (a thread or a Dask process elsewhere) runs with runner."""
        t = {"key": self.key, "npusim": npusim, "hw": self.hw, "workload": self.workload.spec,
             "flags": self.flags, "command": self.command}
        if self.trace is not None:
            t["trace"], t["trace_label"] = self.trace
        return t


class Point:
    def __init__(self, index, values, labels):
        self.index, self.values, self.labels = index, values, labels


class Sweep:
    """A checked spec: parameters, workloads, points and their runs."""

    def __init__(self):
        self.path = None
        self.command = "run"
        self.description = ""
        self.parameters = []
        self.workloads = []
        self.points = []
        self.runs = []
        self.result_constraints = []
        self.excluded = 0  # points the input constraints removed
        self.duplicates = 0  # sampled points equal to an earlier one


def load(path, npusim, values=None):
    """Reads and checks the spec at `path`; raises SpecError with every problem found."""
    problems = []
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except OSError as e:
        raise SpecError([f"{path}: cannot read: {e.strerror}"]) from None
    except json.JSONDecodeError as e:
        raise SpecError([f"{path}: line {e.lineno} column {e.colno}: {e.msg}"]) from None
    return _Loader(path, npusim, problems).load(spec, values)


class _Loader:
    def __init__(self, path, npusim, problems):
        self.path, self.npusim, self.problems = path, npusim, problems
        self.dir = os.path.dirname(os.path.abspath(path))

    def error(self, place, message):
        self.problems.append(f"{self.path}: {place or '/'}: {message}")

    def keys(self, obj, place, allowed, required=()):
        if not isinstance(obj, dict):
            self.error(place, "expected an object")
            return False
        for k in obj:
            if k not in allowed:
                self.error(f"{place}/{_escape(k)}",
                           f"unknown key (expected one of: {', '.join(allowed)})")
        for k in required:
            if k not in obj:
                self.error(place, f"missing required key '{k}'")
        return True

    def file(self, name):
        return name if os.path.isabs(name) else os.path.normpath(os.path.join(self.dir, name))

    def hw_name(self, name):
        return self.file(name) if looks_like_path(name) else name

    def base_hw(self, name, place):
        try:
            return resolved_hw(self.npusim, self.hw_name(name))
        except NpusimError as e:
            self.error(place, f"hardware '{name}': {e}")
            return None

    def load(self, spec, values):
        sw = Sweep()
        sw.path = self.path
        top = ("description", "command", "base", "set", "workloads", "run", "serve", "parameters",
               "sampling", "constraints")
        if not self.keys(spec, "", top, required=("workloads",)):
            raise SpecError(self.problems)
        sw.description = spec.get("description", "")
        self.command = sw.command = spec.get("command", "run")
        if sw.command not in COMMANDS:
            self.error("/command", f"expected one of {', '.join(COMMANDS)}, got "
                       f"{json.dumps(sw.command)}")
            raise SpecError(self.problems)
        if sw.command == "run" and "serve" in spec:
            self.error("/serve", 'goes with "command": "serve"')
        run = self.load_run(spec.get("run", {}), values)
        params = self.load_parameters(spec.get("parameters", []))
        self.serve_flags, self.trace_source = {}, None
        if sw.command == "serve":
            self.serve_flags, self.trace_source = serve_spec.load(self, spec.get("serve", {}),
                                                                  params)
        sw.parameters = params
        hw_param = next((p for p in params if p.flag == "hw"), None)
        bases = {}
        if "base" in spec and hw_param is not None:
            self.error("/base", f"the base hardware is also the parameter '{hw_param.name}' "
                       "(flag hw): give one of them")
        elif "base" in spec:
            if isinstance(spec["base"], str):
                bases[spec["base"]] = self.base_hw(spec["base"], "/base")
            else:
                self.error("/base", "expected a preset name or a hardware JSON file")
        elif hw_param is not None and hw_param.domain is not None:
            for i, name in enumerate(hw_param.domain.values):
                bases[name] = self.base_hw(name, f"{hw_param.place}/values/{i}")
        else:
            self.error("", "missing required key 'base' (a preset name or hardware JSON file)")
        overrides = self.load_set(spec.get("set", {}), bases)
        self.check_pointers(params, bases, overrides)
        sw.workloads = self.load_workloads(spec["workloads"], params, run)
        method, samples, seed = self.load_sampling(spec.get("sampling", {"method": "grid"}), params)
        inputs, sw.result_constraints = self.load_constraints(spec.get("constraints", {}), params)
        if self.problems:
            raise SpecError(self.problems)
        self.expand(sw, bases, overrides, run, method, samples, seed, inputs)
        if self.problems:
            raise SpecError(self.problems)
        return sw

    def load_run(self, run, values):
        out = {"seed": 1, "fidelity": "fast"}
        if self.command == "serve":  # always timing only: no values, no batch (the trace's)
            if self.keys(run, "/run", SERVE_RUN_KEYS):
                out.update((k, v) for k, v in run.items()
                           if k in SERVE_RUN_KEYS and self.flag_value(k, v, f"/run/{k}"))
            return out
        if not self.keys(run, "/run", RUN_KEYS):
            return out
        for k, v in run.items():
            if k in RUN_KEYS and self.flag_value(k, v, f"/run/{k}"):
                out[k] = v
        if values is not None:
            out["values"] = values  # the command line wins
        if out.get("values") == "on":
            del out["values"]  # npusim's default: the same runs (and keys) as without the flag
        return out

    def flag_value(self, flag, v, place):
        if flag not in FLAGS and flag != "values":
            ok = serve_spec.flag_ok(flag, v)
            if not ok:
                self.error(place, f"expected {serve_spec.expected(flag)}, got {json.dumps(v)}")
            return ok
        ok = {
            "batch": lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 65536,
            "seed": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "dtype": lambda v: v in ("int8", "bf16"),
            "fidelity": lambda v: v in ("fast", "pe"),
            "values": lambda v: v in ("on", "off"),
            "hw": lambda v: isinstance(v, str) and v != "",
            "prune": lambda v: isinstance(v, str) and v != "",
            "weight_dtype": lambda v: v in ("int8", "bf16", "int4"),
            "compress_weights": lambda v: v in ("off", "auto", "huffman"),
            "memory_fidelity": lambda v: v in ("command", "bulk"),
            "weight_group": lambda v: v == "none" or (isinstance(v, int) and not isinstance(v, bool)
                                                      and 1 <= v <= 65536),
        }[flag](v)
        if not ok:
            expected = {"batch": "an integer from 1 to 65536", "seed": "a non-negative integer",
                        "dtype": "int8 or bf16", "fidelity": "fast or pe", "values": "on or off",
                        "hw": "a preset name or hardware JSON file",
                        "prune": "none or an npusim run --prune value",
                        "weight_dtype": "int8, bf16 or int4",
                        "compress_weights": "off, auto or huffman",
                        "memory_fidelity": "command or bulk",
                        "weight_group": "none or an integer from 1 to 65536"}[flag]
            self.error(place, f"expected {expected}, got {json.dumps(v)}")
        return ok

    def load_parameters(self, items):
        params = []
        if not isinstance(items, list):
            self.error("/parameters", "expected an array of parameters")
            return params
        names = set()
        for i, item in enumerate(items):
            place = f"/parameters/{i}"
            allowed = ("name", "pointer", "flag", "values", "labels", "range")
            if not self.keys(item, place, allowed, required=("name",)):
                continue
            name = item.get("name")
            p = Parameter(name, place)
            if not isinstance(name, str) or not _NAME.match(name):
                self.error(f"{place}/name", "expected a name made of letters, digits and _ (it is "
                           "a column of results.csv and a name in constraints)")
            elif name in names:
                self.error(f"{place}/name", f"'{name}' names two parameters")
            elif name in RESERVED:
                self.error(f"{place}/name", f"'{name}' is a column of results.csv already")
            names.add(name)
            if ("pointer" in item) == ("flag" in item):
                self.error(place, "expected exactly one of 'pointer' (into the hardware "
                           "description) and 'flag' (an npusim run flag)")
            elif "pointer" in item:
                ptrs = item["pointer"] if isinstance(item["pointer"], list) else [item["pointer"]]
                if not ptrs:
                    self.error(f"{place}/pointer", "expected a JSON pointer or a non-empty array")
                for j, ptr in enumerate(ptrs):
                    tokens = parse_pointer(ptr)
                    where = f"{place}/pointer" + (f"/{j}" if isinstance(item["pointer"], list)
                                                  else "")
                    if tokens is None or tokens == []:
                        self.error(where, f"expected a JSON pointer such as /matrix_unit/rows, "
                                   f"got {json.dumps(ptr)}")
                    else:
                        p.pointers.append((ptr, tokens, where))
            elif item["flag"] not in self.flags():
                self.error(f"{place}/flag", f"expected one of {', '.join(self.flags())}, got "
                           f"{json.dumps(item['flag'])}")
            else:
                p.flag = item["flag"]
            p.domain = self.load_domain(item, place)
            if p.domain is not None and p.flag is not None:
                if not p.domain.discrete:
                    self.error(place, f"flag {p.flag} takes a list of values or a stepped range")
                else:
                    for j, v in enumerate(p.domain.values):
                        self.flag_value(p.flag, v, f"{place}/values/{j}")
            if "labels" in item and p.domain is not None:
                labels = item["labels"]
                if "values" not in item:
                    self.error(f"{place}/labels", "labels go with 'values'")
                elif (not isinstance(labels, list) or len(labels) != len(p.domain.values) or
                      not all(isinstance(x, str) and x for x in labels)):
                    self.error(f"{place}/labels", f"expected {len(p.domain.values)} non-empty "
                               "strings, one per value")
                elif len(set(labels)) != len(labels):
                    self.error(f"{place}/labels", "expected distinct labels")
                else:
                    p.labels = labels
            params.append(p)
        return params

    def flags(self):
        """The flags a parameter may vary for this spec's command."""
        if self.command == "serve":
            return (("hw",) + SERVE_RUN_KEYS + tuple(serve_spec.SERVE_FLAGS) +
                    serve_spec.TRACE_FLAGS)
        return FLAGS

    def load_domain(self, item, place):
        if ("values" in item) == ("range" in item):
            self.error(place, "expected exactly one of 'values' (a list) and 'range'")
            return None
        if "values" in item:
            values = item["values"]
            if not isinstance(values, list) or not values:
                self.error(f"{place}/values", "expected a non-empty array (an empty range)")
                return None
            if len({canonical(v) for v in values}) != len(values):
                self.error(f"{place}/values", "a value is listed twice")
            return sampling.Domain(values=values)
        r, rp = item["range"], f"{place}/range"
        if not self.keys(r, rp, ("from", "to", "step", "num", "scale", "integer"),
                         required=("from", "to")):
            return None
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        low, high = r.get("from"), r.get("to")
        if not (number(low) and number(high)):
            self.error(rp, "expected numbers 'from' and 'to'")
            return None
        if low > high:
            self.error(rp, f"empty range: from {low} is above to {high}")
            return None
        scale = r.get("scale", "linear")
        if scale not in ("linear", "log"):
            self.error(f"{rp}/scale", "expected linear or log")
            return None
        if scale == "log" and low <= 0:
            self.error(f"{rp}/from", "a log scale needs from > 0")
            return None
        integer = r.get("integer", isinstance(low, int) and isinstance(high, int))
        if not isinstance(integer, bool):
            self.error(f"{rp}/integer", "expected true or false")
            return None
        if "step" in r and "num" in r:
            self.error(rp, "expected 'step' or 'num', not both")
            return None
        if "step" in r:
            if not number(r["step"]) or r["step"] <= 0:
                self.error(f"{rp}/step", "expected a number above 0")
                return None
            if scale != "linear":
                self.error(f"{rp}/scale", "a step goes with the linear scale; use num for log")
                return None
            return sampling.Domain(values=sampling.linear_values(low, high, r["step"]))
        if "num" in r:
            if not isinstance(r["num"], int) or isinstance(r["num"], bool) or r["num"] < 1:
                self.error(f"{rp}/num", "expected an integer of at least 1")
                return None
            return sampling.Domain(
                values=sampling.spaced_values(low, high, r["num"], scale == "log", integer))
        return sampling.Domain(low=low, high=high, log=scale == "log", integer=integer)

    def load_set(self, overrides, bases):
        out = []
        if not self.keys(overrides, "/set", overrides.keys() if isinstance(overrides, dict)
                         else ()):
            return out
        for ptr, value in overrides.items():
            place = f"/set/{_escape(ptr)}"
            tokens = parse_pointer(ptr)
            if not tokens:
                self.error(place, "expected a JSON pointer such as /memory/bandwidth_gbps")
                continue
            for name, hw in bases.items():
                if hw is None:
                    continue
                try:
                    like = pointer_get(hw, tokens)
                except KeyError:
                    self.error(place, self.unknown_pointer(ptr, hw, tokens, name))
                    continue
                if conform(value, like) is None:
                    self.error(place, f"expected a {_type_name(like)} like {name}'s "
                               f"{json.dumps(like)}, got {json.dumps(value)}")
            out.append((tokens, value))
        return out

    def unknown_pointer(self, ptr, hw, tokens, base):
        doc, known = hw, []
        for t in tokens:
            if isinstance(doc, dict) and t in doc:
                doc = doc[t]
            else:
                known = sorted(doc) if isinstance(doc, dict) else []
                break
        hint = f" (keys there: {', '.join(known)})" if known else ""
        return (f"unknown JSON pointer {ptr} into the hardware description of {base} "
                f"(npusim presets --show {base}){hint}")

    def check_pointers(self, params, bases, overrides):
        for p in params:
            for ptr, tokens, where in p.pointers:
                for name, hw in bases.items():
                    if hw is None:
                        continue
                    hw = copy.deepcopy(hw)
                    for t, v in overrides:
                        try:
                            pointer_set(hw, t, v)
                        except KeyError:
                            pass  # reported by load_set
                    try:
                        like = pointer_get(hw, tokens)
                    except KeyError:
                        self.error(where, self.unknown_pointer(ptr, hw, tokens, name))
                        continue
                    if p.domain is None:
                        continue
                    if p.domain.discrete:
                        for j, v in enumerate(p.domain.values):
                            if conform(v, like) is None:
                                self.error(f"{p.place}/values/{j}", f"expected a "
                                           f"{_type_name(like)} for {ptr} (like {name}'s "
                                           f"{json.dumps(like)}), got {json.dumps(v)}")
                    elif conform(p.domain.low, like) is None or not isinstance(like, (int, float)):
                        self.error(f"{p.place}/range", f"{ptr} holds a {_type_name(like)}, not a "
                                   "number range")

    def load_workloads(self, items, params, run):
        out = []
        if not isinstance(items, list) or not items:
            self.error("/workloads", "expected a non-empty array of workloads")
            return out
        batch_param = next((p for p in params if p.flag == "batch"), None)
        labels = set()
        for i, item in enumerate(items):
            place = f"/workloads/{i}"
            if isinstance(item, str):
                item = {"workload": item}
            elif not self.keys(item, place, ("workload", "batch", "label"), ("workload",)):
                continue
            name = item.get("workload")
            if not isinstance(name, str) or not name:
                self.error(f"{place}/workload", "expected a zoo name, a JSON graph or an ONNX file")
                continue
            batch = item.get("batch")
            if batch is not None and self.command == "serve":
                self.error(f"{place}/batch", "a serving sweep's batches are the scheduler's "
                           "(vary max_batch)")
                batch = None
            if batch is not None:
                self.flag_value("batch", batch, f"{place}/batch")
                if batch_param is not None:
                    self.error(f"{place}/batch", f"batch is also the parameter "
                               f"'{batch_param.name}': give one of them")
            if looks_like_path(name):
                path = self.file(name)
                try:
                    with open(path, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                except OSError as e:
                    self.error(f"{place}/workload", f"'{name}': cannot read {path}: {e.strerror}")
                    continue
                wl = Workload(path, os.path.splitext(os.path.basename(name))[0], batch,
                              {"file": os.path.basename(name), "sha256": digest})
            else:
                # A built-in name: a decoder for serve, a zoo network for run.
                serve = self.command == "serve"
                lister, what = ((decoder_names, "npusim generate --list") if serve
                                else (zoo_names, "npusim zoo"))
                try:
                    known = lister(self.npusim)
                except NpusimError as e:
                    self.error(f"{place}/workload", f"{what}: {e}")
                    continue
                if name not in known:
                    self.error(f"{place}/workload", (
                        f"'{name}' is not a built-in decoder ({', '.join(known)}) and does not "
                        "look like a decoder JSON file") if serve else (
                        f"'{name}' is not in the zoo ({', '.join(known)}) and does not look like "
                        "a file (.json, .onnx or a path with /)"))
                    continue
                wl = Workload(name, name, batch, {"decoder" if serve else "zoo": name})
            wl.label = item.get("label", wl.label)
            if not isinstance(wl.label, str) or not wl.label:
                self.error(f"{place}/label", "expected a non-empty string")
            elif wl.label in labels:
                self.error(f"{place}", f"two workloads are labelled '{wl.label}': give each a "
                           "distinct 'label'")
            labels.add(wl.label)
            out.append(wl)
        return out

    def load_sampling(self, s, params):
        if not self.keys(s, "/sampling", ("method", "samples", "seed")):
            return "grid", 0, 1
        method = s.get("method", "grid")
        if method not in METHODS:
            self.error("/sampling/method", f"expected one of {', '.join(METHODS)}, got "
                       f"{json.dumps(method)}")
            return "grid", 0, 1
        seed = s.get("seed", 1)
        if not isinstance(seed, int) or isinstance(seed, bool):
            self.error("/sampling/seed", "expected an integer")
        samples = s.get("samples")
        if method == "grid":
            if samples is not None:
                self.error("/sampling/samples", "grid sampling takes every combination; samples "
                           "goes with random or lhs")
            for p in params:
                if p.domain is not None and not p.domain.discrete:
                    self.error(f"{p.place}/range", "grid sampling needs a finite set: give step "
                               "or num (or sample with random or lhs)")
        elif not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
            self.error("/sampling/samples", f"{method} sampling needs samples, an integer >= 1")
        return method, samples, seed

    def load_constraints(self, c, params):
        inputs, results = [], []
        if not self.keys(c, "/constraints", ("inputs", "results")):
            return inputs, results
        names = {p.name for p in params}
        for kind, out in (("inputs", inputs), ("results", results)):
            items = c.get(kind, [])
            if not isinstance(items, list):
                self.error(f"/constraints/{kind}", "expected an array of expressions")
                continue
            for i, text in enumerate(items):
                place = f"/constraints/{kind}/{i}"
                try:
                    e = Expression(text)
                except ExpressionError as err:
                    self.error(place, str(err))
                    continue
                if kind == "inputs":
                    unknown = [n for n in e.names if n not in names]
                    if unknown:
                        self.error(place, f"'{text}': {', '.join(unknown)} is not a parameter "
                                   f"(parameters: {', '.join(sorted(names)) or 'none'}); "
                                   "constraints on stats.json figures go under 'results'")
                        continue
                out.append(e)
        return inputs, results

    def expand(self, sw, bases, overrides, run, method, samples, seed, inputs):
        params = sw.parameters
        domains = [p.domain for p in params]
        if method == "grid":
            rows = sampling.grid(domains)
        elif method == "random":
            rows = sampling.random_samples(domains, samples, seed)
        else:
            rows = sampling.latin_hypercube(domains, samples, seed)
        seen = set()
        for row in rows:
            values = {p.name: v for p, v in zip(params, row)}
            ok = True
            for e in inputs:
                try:
                    ok = bool(e.evaluate(values.__getitem__))
                except ExpressionError as err:
                    self.error("/constraints/inputs", str(err))
                    return
                if not ok:
                    break
            if not ok:
                sw.excluded += 1
                continue
            hw_value = values.get(next((p.name for p in params if p.flag == "hw"), None))
            base_name = hw_value if hw_value is not None else next(iter(bases))
            hw = copy.deepcopy(bases[base_name])
            # Values are copied in: points must share no object (a later pointer edits inside).
            for tokens, value in overrides:
                pointer_set(hw, tokens, copy.deepcopy(conform(value, pointer_get(hw, tokens))))
            flags = dict(run, **self.serve_flags)
            for p, v in zip(params, row):
                for _, tokens, where in p.pointers:
                    try:
                        like = pointer_get(hw, tokens)
                    except KeyError:
                        self.error(where, f"{_escape_path(tokens)} is gone from the point's "
                                   "hardware (an earlier parameter replaced its parent)")
                        return
                    pointer_set(hw, tokens, copy.deepcopy(conform(v, like)))
                if p.flag is not None and p.flag != "hw":
                    flags[p.flag] = v
            memory = hw.get("memory", {})
            if isinstance(memory.get("preset"), str) and looks_like_path(memory["preset"]):
                memory["preset"] = self.file(memory["preset"])
            identity = canonical({"hw": hw, "flags": flags})
            if identity in seen:
                sw.duplicates += 1
                continue
            seen.add(identity)
            point = Point(len(sw.points), row, [p.label(v) for p, v in zip(params, row)])
            sw.points.append(point)
            trace = None
            if sw.command == "serve":
                varied = {k: flags.pop(k) for k in serve_spec.TRACE_FLAGS if k in flags}
                trace = self.trace_source.text(varied)
            for wl in sw.workloads:
                run_flags = dict(flags)
                if wl.batch is not None:
                    run_flags["batch"] = wl.batch
                what = {"hw": hw, "workload": wl.identity, "flags": run_flags}
                if trace is not None:  # a run's key as before unless it serves a trace
                    what.update(command="serve", trace=serve_spec.digest(trace[0]))
                key = hashlib.sha256(canonical(what).encode()).hexdigest()
                sw.runs.append(Run(point, wl, key[:20], hw, run_flags, sw.command, trace))


def _escape_path(tokens):
    return "/" + "/".join(_escape(t) for t in tokens)
