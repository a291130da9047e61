#!/usr/bin/env python3
"""ONNX's own backend node tests (Debian's libonnx-testdata) run through `npusim run`.

Selection: every case directory under DATA (default /usr/share/libonnx-testdata/data/node) whose
model.onnx is a single node of one of the operator families of issues 12 and 21 (FAMILIES below),
whose
first graph input (the data input) is float32 and whose graph outputs are all float32. Cases are
identified by their directory name (test_conv_with_strides_padding, ...).

Per case: the first graph input is the data input; every other graph input is a weight or a
shape operand and becomes an initializer with the value of its test_data_set_0/input_<i>.pb (the
rewritten model is WORK/<case>/model.onnx). The data input goes to WORK/<case>/x.npy, and
`npusim run --hw edge --workload model.onnx --input x.npy --dtype D --save-outputs DIR` runs for
D = bf16 and int8. Every graph output DIR/<name>.npy is compared with output_<i>.pb: same shape,
and every element within TOLERANCE[D] times the largest magnitude of the expected output (bf16
2 %, int8 8 %: the tolerances of docs/onnx.md's tests; docs/quantization.md explains where int8
and bf16 deviate from the float result).

Result per case: `pass` (both data types within tolerance), `fail` (an output out of tolerance
or of the wrong shape, or npusim exited with anything but 0 or 2; the reason names the data type
and the largest relative error), or `unsupported` (npusim refused the model with exit code 2; the
reason is its message).

Modes (combinable):
  --check EXPECTED   exit 1 when a case EXPECTED lists as pass does not pass, or when fewer cases
                     pass than EXPECTED lists as passing (the CTest test OnnxConformance)
  --write-expected EXPECTED  record this run's results
  --update-doc docs/onnx.md  rewrite the table between the conformance marker comments
Needs python3 with numpy and onnx only.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
FAMILIES = {
    "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Gemm", "MatMul",
    "Relu", "Sigmoid", "Tanh", "Clip", "Erf", "Gelu", "Softmax", "LayerNormalization",
    "BatchNormalization", "Add", "Sub", "Mul", "Div", "Concat", "Flatten", "Reshape", "Transpose",
    "Squeeze", "Unsqueeze", "Pad", "ReduceMean", "Split", "Slice", "Gather", "Resize", "LSTM", "GRU",
    "ReduceSum", "ReduceMax", "Einsum", "Tile", "GatherElements", "GatherND"
}
DTYPES = ("bf16", "int8")
TOLERANCE = {"bf16": 0.02, "int8": 0.08}
DOC_BEGIN = "<!-- conformance table begin (tests/onnx/conformance.py --update-doc) -->"
DOC_END = "<!-- conformance table end -->"


def select_cases(data_dir):
    """(case name, operator) for every selected case, sorted by name."""
    cases = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name, "model.onnx")
        if not os.path.isfile(path):
            continue
        graph = onnx.load(path).graph
        if len(graph.node) != 1 or graph.node[0].op_type not in FAMILIES:
            continue
        float32 = onnx.TensorProto.FLOAT
        tensors = list(graph.input)[:1] + list(graph.output)
        if all(v.type.tensor_type.elem_type == float32 for v in tensors):
            cases.append((name, graph.node[0].op_type))
    return cases


def read_pb(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


def prepare(data_dir, work_dir, name):
    """Writes the rewritten model and x.npy; returns (model, x.npy, [(output name, expected)])."""
    src = os.path.join(data_dir, name)
    model = onnx.load(os.path.join(src, "model.onnx"))
    graph = model.graph
    data_set = os.path.join(src, "test_data_set_0")
    inputs = list(graph.input)
    case_dir = os.path.join(work_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    x = numpy_helper.to_array(read_pb(os.path.join(data_set, "input_0.pb")))
    x_path = os.path.join(case_dir, "x.npy")
    np.save(x_path, x.astype(np.float32))
    for i, value in enumerate(inputs[1:], start=1):
        tensor = read_pb(os.path.join(data_set, f"input_{i}.pb"))
        tensor.name = value.name
        graph.initializer.append(tensor)
        graph.input.remove(value)
    model_path = os.path.join(case_dir, "model.onnx")
    onnx.save(model, model_path)
    expected = []
    for i, value in enumerate(graph.output):
        want = numpy_helper.to_array(read_pb(os.path.join(data_set, f"output_{i}.pb")))
        expected.append((value.name, want))
    return model_path, x_path, expected


def first_line(text, case_dir):
    """npusim's first message line with the work directory's path taken out."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    line = lines[0] if lines else "(no message)"
    line = line.replace(case_dir + os.sep, "").replace("|", "/")
    line = re.sub(r"^npusim: error: (model\.onnx: )?", "", line)
    return re.sub(r" \(supported: [^)]*\)", "", line)


def run_dtype(npusim, case_dir, model_path, x_path, expected, dtype):
    """(status, reason, max relative error) for one data type."""
    out_dir = os.path.join(case_dir, "out-" + dtype)
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [npusim, "run", "--hw", "edge", "--workload", model_path, "--input", x_path,
           "--dtype", dtype, "--save-outputs", out_dir]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "fail", f"{dtype}: npusim ran longer than 120 s", None
    if r.returncode == 2:
        return "unsupported", first_line(r.stderr, case_dir), None
    if r.returncode != 0:
        return "fail", f"{dtype}: exit {r.returncode}: {first_line(r.stderr, case_dir)}", None
    worst = 0.0
    for name, want in expected:
        got_path = os.path.join(out_dir, name + ".npy")
        if not os.path.isfile(got_path):
            return "fail", f"{dtype}: output '{name}' not written", None
        got = np.load(got_path).astype(np.float64)
        if got.shape != want.shape:
            return "fail", (f"{dtype}: output '{name}' has shape {list(got.shape)}, "
                            f"expected {list(want.shape)}"), None
        want64 = want.astype(np.float64)
        scale = float(np.max(np.abs(want64))) if want64.size else 0.0
        err = float(np.max(np.abs(got - want64))) if want64.size else 0.0
        rel = err / scale if scale > 0 else err
        if not np.isfinite(rel):
            rel = float("inf")
        worst = max(worst, rel)
    if worst > TOLERANCE[dtype]:
        return "fail", (f"{dtype}: max error {worst:.3g} of the output range "
                        f"(tolerance {TOLERANCE[dtype]:g})"), worst
    return "pass", "", worst


def run_case(npusim, data_dir, work_dir, name):
    """(status, reason, {dtype: max relative error}) of one case."""
    case_dir = os.path.join(work_dir, name)
    try:
        model_path, x_path, expected = prepare(data_dir, work_dir, name)
    except Exception as e:  # a case the script cannot rewrite is reported, not skipped
        return "fail", f"conformance.py could not prepare the case: {e}", {}
    errors, reasons = {}, []
    for dtype in DTYPES:
        status, reason, err = run_dtype(npusim, case_dir, model_path, x_path, expected, dtype)
        if status == "unsupported":
            return status, reason, errors
        if err is not None:
            errors[dtype] = err
        if status == "fail":
            reasons.append(reason)
    if reasons:
        return "fail", "; ".join(reasons), errors
    return "pass", "", errors


def read_expected(path):
    results = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, status = line.split()[:2]
                results[name] = status
    return results


def write_expected(path, cases, results):
    with open(path, "w") as f:
        f.write("# ONNX conformance cases (tests/onnx/conformance.py): case result.\n"
                "# OnnxConformance fails when a case listed as pass stops passing or when fewer\n"
                "# cases pass than are listed here. Rewrite with --write-expected.\n")
        for name, _ in cases:
            f.write(f"{name} {results[name][0]}\n")


def doc_table(cases, results):
    counts = {s: sum(1 for n, _ in cases if results[n][0] == s)
              for s in ("pass", "fail", "unsupported")}
    total = len(cases)
    summary = (f"{counts['pass']} of {total} cases pass ({100.0 * counts['pass'] / total:.0f} %), "
               f"{counts['fail']} fail, {counts['unsupported']} are unsupported. Error: the "
               "largest deviation from ONNX's expected output, as a fraction of the largest "
               "expected magnitude (bf16 / int8).")
    lines = [DOC_BEGIN, ""] + textwrap.wrap(summary, 100) + ["",
             "| case | operator | result | bf16 / int8 error, or reason |", "|---|---|---|---|"]
    for name, op in cases:
        status, reason, errors = results[name]
        err = " / ".join(f"{errors[d]:.2g}" if d in errors else "-" for d in DTYPES)
        detail = err if status == "pass" else reason
        lines.append(f"| `{name}` | {op} | {status} | {detail} |")
    lines += ["", DOC_END]
    return "\n".join(lines)


def update_doc(path, table):
    with open(path) as f:
        text = f.read()
    begin, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if begin < 0 or end < begin:
        sys.exit(f"{path}: the marker comments '{DOC_BEGIN}' and '{DOC_END}' are missing")
    text = text[:begin] + table + text[end + len(DOC_END):]
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npusim", required=True, help="the npusim binary")
    ap.add_argument("--data", default=DEFAULT_DATA, help="libonnx-testdata's node directory")
    ap.add_argument("--work", required=True, help="scratch directory (rewritten models, outputs)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="cases run in parallel")
    ap.add_argument("--filter", default="", help="run only cases whose name matches this regex")
    ap.add_argument("--check", metavar="EXPECTED", help="fail on regressions against EXPECTED")
    ap.add_argument("--write-expected", metavar="EXPECTED", help="record the results")
    ap.add_argument("--update-doc", metavar="MD", help="rewrite the table in MD (docs/onnx.md)")
    ap.add_argument("--verbose", action="store_true", help="print every case's result")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        sys.exit(f"--data {args.data}: no such directory (install libonnx-testdata)")
    if not os.access(args.npusim, os.X_OK):
        sys.exit(f"--npusim {args.npusim}: not an executable")
    cases = [c for c in select_cases(args.data) if re.search(args.filter, c[0])]
    if not cases:
        sys.exit(f"{args.data}: no case selected")
    if args.filter and (args.write_expected or args.update_doc):
        sys.exit("--filter runs a subset: it cannot be combined with --write-expected/--update-doc")
    os.makedirs(args.work, exist_ok=True)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {n: pool.submit(run_case, args.npusim, args.data, args.work, n) for n, _ in cases}
        results = {n: f.result() for n, f in futures.items()}
    counts = {s: sum(1 for r in results.values() if r[0] == s)
              for s in ("pass", "fail", "unsupported")}
    for name, _ in cases:
        status, reason, _ = results[name]
        if args.verbose or status == "fail":
            print(f"{name}: {status}{': ' + reason if reason else ''}")
    print(f"{len(cases)} cases: {counts['pass']} pass, {counts['fail']} fail, "
          f"{counts['unsupported']} unsupported ({time.time() - start:.0f} s)")
    status = 0
    if args.check:
        expected = read_expected(args.check)
        for name, _ in cases:
            if expected.get(name) == "pass" and results[name][0] != "pass":
                print(f"REGRESSION {name}: listed as pass, now {results[name][0]}: "
                      f"{results[name][1]}")
                status = 1
        listed = [n for n, s in expected.items() if s == "pass"]
        if not args.filter and counts["pass"] < len(listed):
            print(f"REGRESSION: {counts['pass']} cases pass, {args.check} lists {len(listed)}")
            status = 1
        unknown = sorted(set(expected) - set(results)) if not args.filter else []
        if unknown:
            print(f"{args.check}: cases not selected any more: {', '.join(unknown)}")
            status = 1
    if args.write_expected:
        write_expected(args.write_expected, cases, results)
    if args.update_doc:
        update_doc(args.update_doc, doc_table(cases, results))
    return status


if __name__ == "__main__":
    sys.exit(main())
