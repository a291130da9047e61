"""Running a sweep's runs: in worker processes through the npusim Python module, or one npusim
process per run, on local threads or a Dask cluster.

`execute` is the whole of a run and needs nothing but its task dict and the npusim binary (at the
same path on every Dask worker): it writes the point's hardware description to a private
directory, runs `npusim run --hw hw.json --workload W --out DIR`, and returns what npusim wrote.
`execute_in_process` does the same run with the module (python/, the build's python/ folder beside
the binary's sim/), in a pool of worker processes that each run many points: no process start,
no command line, the same files and messages (tests/dse/test_in_process.py checks that).
The client alone writes into the sweep's directory, so workers need no shared file system.

A run is finished when OUT/runs/<key>/result.json exists (written last, atomically): resuming
skips it. npusim's own verdicts (exit 0, 1 or 2) are final; a run killed by a signal or lost with
its worker is reported but not recorded, so the next invocation runs it again.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import serve_spec

RECORDED_EXIT_CODES = (0, 1, 2)


# npusim serve's options a task may carry: the run flags it shares, then its own (serve_spec).
SERVE_OPTIONS = (("dtype", "seed", "fidelity", "memory_fidelity")
                 + tuple(serve_spec.SERVE_FLAGS))
# What a run leaves that the sweep keeps, per command.
FILES = {"run": ("stats.json", "config.resolved.json", "report.txt"),
         "serve": ("stats.json", "report.txt", "requests.csv")}


def is_serve(task):
    return task.get("command", "run") == "serve"


def command(task, hw_path, out_dir, trace_path="trace.csv"):
    if is_serve(task):
        args = [task["npusim"], "serve", "--hw", hw_path, "--workload", task["workload"],
                "--trace", trace_path, "--out", out_dir]
        for flag in SERVE_OPTIONS:
            if flag in task["flags"]:
                args += ["--" + flag.replace("_", "-"), str(task["flags"][flag])]
        return args
    args = [task["npusim"], "run", "--hw", hw_path, "--workload", task["workload"], "--out",
            out_dir]
    for flag in ("batch", "dtype", "seed", "fidelity", "values", "prune", "weight_dtype",
                 "weight_group", "compress_weights", "memory_fidelity"):
        if flag in task["flags"] and not (flag in ("prune", "weight_group")
                                          and task["flags"][flag] == "none"):
            args += [f"--{flag.replace('_', '-')}", str(task["flags"][flag])]
    return args


def write_trace(task, work):
    """A serving run's trace as WORK/trace.csv; None for a plain run."""
    if not is_serve(task):
        return None
    path = os.path.join(work, "trace.csv")
    with open(path, "w", encoding="utf-8") as f:
        f.write(task["trace"])
    return path


def label_trace(task, files, trace_path):
    """stats.json and report.txt name the trace as trace.csv (the copy kept beside them), not the
    worker's temporary file: the CLI and the module, on any machine, record the same text."""
    if not is_serve(task):
        return
    if "stats.json" in files:
        stats = json.loads(files["stats.json"])
        stats["trace"] = "trace.csv"
        files["stats.json"] = json.dumps(stats, indent=2) + "\n"
    if "report.txt" in files:
        files["report.txt"] = files["report.txt"].replace(trace_path, "trace.csv")


def write_hw(task, work):
    """The point's hardware description as WORK/hw.json (what --hw and the module read)."""
    hw_path = os.path.join(work, "hw.json")
    with open(hw_path, "w", encoding="utf-8") as f:
        json.dump(task["hw"], f, indent=2)
        f.write("\n")
    return hw_path


def execute(task):
    """Runs one task; returns {key, exit_code, error, seconds, files: {name: text}}."""
    work = tempfile.mkdtemp(prefix="npusim-dse-")
    try:
        hw_path = write_hw(task, work)
        trace_path = write_trace(task, work)
        out = os.path.join(work, "out")
        start = time.perf_counter()
        try:
            r = subprocess.run(command(task, hw_path, out, trace_path), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            exit_code, stderr = r.returncode, r.stderr
        except OSError as e:
            exit_code, stderr = None, f"cannot start {task['npusim']}: {e.strerror}"
        seconds = time.perf_counter() - start
        files = {}
        if exit_code is not None and exit_code >= 0:
            for name in FILES[task.get("command", "run")]:
                try:
                    with open(os.path.join(out, name), encoding="utf-8") as f:
                        files[name] = f.read()
                except OSError:
                    pass
            label_trace(task, files, trace_path)
        error = ""
        if exit_code != 0:
            error = _error_text(stderr, hw_path)
            if exit_code is not None and exit_code < 0:
                error = f"killed by signal {-exit_code}" + (f": {error}" if error else "")
            elif not error:
                error = f"npusim exited with {exit_code}"
        return {"key": task["key"], "exit_code": exit_code, "error": error,
                "seconds": seconds, "files": files}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _error_text(stderr, hw_path):
    """npusim's message on stderr as one line, naming the run's own copy of the hardware (npusim
    names the worker's private file)."""
    lines = [line.removeprefix("npusim: error: ").removeprefix("npusim: ")
             for line in stderr.strip().splitlines()]
    return " ".join(lines).replace(hw_path, "hw.json")


def module_dir(npusim):
    """build/python of the build that holds `npusim` (build/sim/npusim), if the module is there."""
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(npusim))), "python")
    return d if os.path.exists(os.path.join(d, "npusim", "__init__.py")) else None


_module = None


def _load_module(path):
    """Worker initializer: imports the module of the sweep's build."""
    global _module
    sys.path.insert(0, path)
    import npusim  # noqa: E402  (python/, built beside the binary)
    _module = npusim


def execute_in_process(task):
    """`execute` through the module in this (worker) process; the same result dict."""
    work = tempfile.mkdtemp(prefix="npusim-dse-")
    try:
        hw_path = write_hw(task, work)
        flags = task["flags"]
        kwargs = {k: flags[k] for k in ("batch", "dtype", "seed", "fidelity", "memory_fidelity")
                  if k in flags}
        if flags.get("prune", "none") != "none":
            kwargs["prune"] = flags["prune"]
        if "weight_dtype" in flags:
            kwargs["weight_dtype"] = flags["weight_dtype"]
        if flags.get("weight_group", "none") != "none":
            kwargs["weight_group"] = int(flags["weight_group"])
        if "compress_weights" in flags:
            kwargs["compress_weights"] = flags["compress_weights"]
        if "batch" in kwargs:
            kwargs["batch"] = int(kwargs["batch"])
        if "seed" in kwargs:
            kwargs["seed"] = int(kwargs["seed"])
        values = str(flags.get("values", "on"))
        start = time.perf_counter()
        # What the command line would print on stderr, and its exit code (sim/cli.cpp).
        files, stderr, exit_code = {}, "", 0
        try:
            if is_serve(task):
                trace_path = write_trace(task, work)
                files = _serve_in_process(task, hw_path, trace_path)
                label_trace(task, files, trace_path)
            else:
                if values not in ("on", "off"):
                    raise _module.InputError(f"--values '{values}': expected on or off")
                r = _module.run(hw=hw_path, workload=task["workload"], values=values == "on",
                                **kwargs)
                files = {"stats.json": r.stats_json(), "config.resolved.json": r.hardware_json(),
                         "report.txt": r.report(per_layer=True)}
                if r.mismatch:
                    exit_code, stderr = 1, f"npusim: {r.mismatch}"
        except _module.InputError as e:
            exit_code, stderr = 2, f"npusim: error: {e}"
        except _module.InternalError as e:
            exit_code, stderr = 1, f"npusim: {e}"
        except Exception as e:
            exit_code, stderr = 1, f"npusim: internal error: {e}"
        seconds = time.perf_counter() - start
        return {"key": task["key"], "exit_code": exit_code,
                "error": _error_text(stderr, hw_path) if exit_code else "", "seconds": seconds,
                "files": files}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _serve_in_process(task, hw_path, trace_path):
    kwargs = {k: task["flags"][k] for k in SERVE_OPTIONS if k in task["flags"]}
    r = _module.serve(hw=hw_path, workload=task["workload"], trace=trace_path, **kwargs)
    return {"stats.json": r.stats_json(), "report.txt": r.report(),
            "requests.csv": r.requests_csv()}


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


class Store:
    """OUT/runs/<key>/: hw.json, run.json (what ran), npusim's files, result.json (last)."""

    def __init__(self, out_dir):
        self.root = os.path.join(out_dir, "runs")

    def dir(self, key):
        return os.path.join(self.root, key)

    def finished(self, key):
        return os.path.exists(os.path.join(self.dir(key), "result.json"))

    def forget(self, key):
        path = os.path.join(self.dir(key), "result.json")
        if os.path.exists(path):
            os.remove(path)

    def record(self, run, task, result):
        d = self.dir(run.key)
        os.makedirs(d, exist_ok=True)
        for name in set(FILES["run"] + FILES["serve"]):
            if os.path.exists(os.path.join(d, name)):
                os.remove(os.path.join(d, name))
        _write(os.path.join(d, "hw.json"), json.dumps(task["hw"], indent=2) + "\n")
        how = {"workload": task["workload"], "flags": task["flags"],
               "command": command(dict(task, npusim="npusim"), "hw.json", ".")}
        if is_serve(task):  # the trace the command names, beside it
            _write(os.path.join(d, "trace.csv"), task["trace"])
            how["trace"] = task["trace_label"]
        _write(os.path.join(d, "run.json"), json.dumps(how, indent=2) + "\n")
        for name, text in result["files"].items():
            _write(os.path.join(d, name), text)
        if result["exit_code"] in RECORDED_EXIT_CODES:
            summary = {k: result[k] for k in ("exit_code", "error", "seconds")}
            _write(os.path.join(d, "result.json"), json.dumps(summary, indent=2) + "\n")

    def load(self, key):
        """(result summary, stats dict or None, resolved hardware or None) of a finished run."""
        d = self.dir(key)
        with open(os.path.join(d, "result.json"), encoding="utf-8") as f:
            result = json.load(f)
        docs = []
        for name in ("stats.json", "config.resolved.json"):
            try:
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    docs.append(json.load(f))
            except (OSError, json.JSONDecodeError):
                docs.append(None)
        return result, docs[0], docs[1]


def run_all(runs, npusim, store, jobs, scheduler=None, progress=True, in_process=True):
    """Runs `runs` (not yet finished); records each as it completes. Returns the unrecorded ones
    (killed or lost) as {key: error}. Locally, through the module when `in_process` and the
    build has it, else one npusim process per run."""
    from tqdm import tqdm  # python3-tqdm

    lost = {}
    if not runs:
        return lost
    by_key = {r.key: r for r in runs}
    tasks = {r.key: r.task(npusim) for r in runs}
    bar = tqdm(total=len(runs), unit="run", desc="npusim", disable=not progress,
               file=sys.stderr, mininterval=0.5, smoothing=0.1)
    failed = 0

    def done(result):
        nonlocal failed
        run = by_key[result["key"]]
        store.record(run, tasks[run.key], result)
        if result["exit_code"] not in RECORDED_EXIT_CODES:
            lost[run.key] = result["error"]
        if result["exit_code"] != 0:
            failed += 1
            bar.set_postfix(failed=failed, refresh=False)
        bar.update(1)

    try:
        module = module_dir(npusim) if in_process and scheduler is None else None
        if module is not None:
            _run_in_workers(runs, tasks, jobs, module, done, lost)
        elif scheduler is None:
            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(execute, tasks[r.key]) for r in runs]
                try:
                    for f in concurrent.futures.as_completed(futures):
                        done(f.result())
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        else:
            _run_on_dask(runs, tasks, scheduler, done, lost)
    finally:
        bar.close()
    return lost


def _run_in_workers(runs, tasks, jobs, module, done, lost):
    # A worker that dies (a crash inside npusim) breaks the pool: its runs and those not yet
    # started are reported lost, not recorded, and run again next time.
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, initializer=_load_module,
                                                initargs=(module,)) as pool:
        futures = {pool.submit(execute_in_process, tasks[r.key]): r.key for r in runs}
        try:
            for f in concurrent.futures.as_completed(futures):
                try:
                    result = f.result()
                except concurrent.futures.process.BrokenProcessPool as e:
                    result = {"key": futures[f], "exit_code": None, "seconds": 0.0, "files": {},
                              "error": f"lost: its worker process died ({e})"}
                done(result)
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _run_on_dask(runs, tasks, scheduler, done, lost):
    import cloudpickle  # python3-cloudpickle, with python3-distributed
    from distributed import Client, as_completed

    # Workers elsewhere need not have this module: ship it with the function.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with Client(scheduler, timeout="30s") as client:
        futures = [client.submit(execute, tasks[r.key], key=f"npusim-run-{r.key}", pure=False)
                   for r in runs]
        for f in as_completed(futures):
            if f.status == "finished":
                done(f.result())
            else:
                key = f.key.removeprefix("npusim-run-")
                error = f"lost on the cluster: {f.exception()!r}"
                done({"key": key, "exit_code": None, "error": error, "seconds": 0.0, "files": {}})
            f.release()
