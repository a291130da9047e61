#!/usr/bin/python3
"""Held-out accuracy of a *trained* model under npusim's compression (issue 25 item 5).

The zoo's weights are random, so compressing them says nothing about accuracy. This script
trains the Keras MNIST CNN (conv 3x3x32 + ReLU, 2x2 max pool, dense 128 + ReLU, dense 10) on
scikit-learn's bundled digits (scripts/digits_dataset.py, 1500 training and 297 held-out images,
28x28) with the independent numpy trainer (tests/training/numpy_cnn.py: Adam, lr 1e-3, batch 64,
--steps steps, Keras' initialisation from --seed), exports it with torch.onnx (Debian's
python3-torch, opset 17, a symbolic batch) and runs the 297 held-out images through
`npusim run --input` once per technique (int8 / bf16 / fp8-e4m3 / fp8-e5m2, fp8 on the --hw preset
with data_types.fp8 added; `--prune magnitude:F`, `--prune N:M`,
`--weight-dtype int4 [--weight-group G]`, `--compress-weights auto`), all values checked by
npusim against its own reference as usual.

Per technique it prints: the held-out top-1 accuracy of npusim's outputs; that of the float32
graph npusim compiled (`--save-float-outputs`: the same pruning, no quantization), which
separates the pruning's effect from the number format's; the top-1 agreement with torch's
unpruned float model; and the logits' cosine against it. A technique npusim refuses (exit 2) is
reported with its message.

  scripts/compression_accuracy.py [--npusim build/sim/npusim] [--hw tpu-v4-like-core]
      [--steps 200] [--seed 0] [--work DIR] [--markdown FILE] [--only "bf16 --weight" ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "training"))
import numpy_cnn  # noqa: E402  (the independent trainer)

TECHNIQUES = [
    ("int8", []),
    ("int8", ["--prune", "magnitude:0.5"]),
    ("int8", ["--prune", "magnitude:0.75"]),
    ("int8", ["--prune", "magnitude:0.9"]),
    ("int8", ["--prune", "2:4"]),
    ("int8", ["--prune", "magnitude:0.5", "--compress-weights", "auto"]),
    ("int8", ["--weight-dtype", "int4"]),
    ("int8", ["--weight-dtype", "int4", "--weight-group", "128"]),
    ("int8", ["--weight-dtype", "int4", "--weight-group", "32"]),
    ("int8", ["--prune", "2:4", "--weight-dtype", "int4"]),
    ("bf16", []),
    ("bf16", ["--prune", "magnitude:0.5"]),
    ("bf16", ["--prune", "2:4"]),
    ("bf16", ["--weight-dtype", "int4"]),
    ("bf16", ["--weight-dtype", "int4", "--weight-group", "128"]),
    ("bf16", ["--weight-dtype", "int4", "--weight-group", "32"]),
    ("fp8-e4m3", []),
    ("fp8-e5m2", []),
    ("fp8-e4m3", ["--prune", "2:4"]),
]


def digits(work):
    """(train NHWC x, y, held-out NHWC x, y) from scripts/digits_dataset.py."""
    d = os.path.join(work, "digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), d],
                   check=True, stdout=subprocess.DEVNULL)
    load = lambda *p: np.load(os.path.join(d, *p))
    return (load("x.npy").astype(np.float32), load("y.npy").astype(np.int64),
            load("heldout", "x.npy").astype(np.float32), load("heldout", "y.npy").astype(np.int64))


def export(params, path):
    """The trained CNN as an ONNX model with NCHW input [batch, 1, 28, 28]; returns the torch
    module. numpy_cnn flattens in (row, column, channel) order, torch in (channel, row, column):
    fc1's columns are permuted to match, so both compute the same function."""
    import torch
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(13 * 13 * 32, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    fc1 = params["fc1.weight"].reshape(128, 13, 13, 32).transpose(0, 3, 1, 2).reshape(128, -1)
    with torch.no_grad():
        for layer, name, w in ((model[0], "conv1", params["conv1.weight"]), (model[4], "fc1", fc1),
                               (model[6], "fc2", params["fc2.weight"])):
            layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            layer.bias.copy_(torch.from_numpy(params[name + ".bias"]))
    x = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}})
    return model


def top1(logits, labels):
    return float((logits.argmax(axis=1) == labels).mean())


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    ap.add_argument("--hw", default="tpu-v4-like-core")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work")
    ap.add_argument("--markdown")
    ap.add_argument("--only", nargs="*",
                    help="only the techniques whose label starts with one of these")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="npusim-compression-accuracy-")
    os.makedirs(work, exist_ok=True)
    x, y, xh, yh = digits(work)
    params = numpy_cnn.initial_parameters(a.seed, x.shape[1])
    params, losses, evals = numpy_cnn.train(params, x, y, xh, yh, a.steps, 64,
                                            numpy_cnn.Optimizer("adam", 1e-3))
    numpy_acc = evals[-1]["accuracy"]
    model_path = os.path.join(work, "mnist_cnn_digits.onnx")
    model = export(params, model_path)
    inputs = np.ascontiguousarray(xh.transpose(0, 3, 1, 2))  # NCHW, ONNX's layout
    input_path = os.path.join(work, "heldout_nchw.npy")
    np.save(input_path, inputs)
    import torch
    with torch.no_grad():
        ref = model(torch.from_numpy(inputs)).numpy()
    print(f"trained {a.steps} Adam steps (numpy): final loss {losses[-1]:.4f}, held-out accuracy "
          f"numpy {100 * numpy_acc:.1f} %, torch {100 * top1(ref, yh):.1f} % "
          f"({len(yh)} images)", flush=True)
    # fp8 runs need a matrix unit that lists the formats: the preset with data_types.fp8 added.
    fp8_hw = a.hw
    preset = os.path.join(ROOT, "configs", "hw", a.hw + ".json")
    if os.path.exists(preset):
        with open(preset) as fh:
            desc = json.load(fh)
        desc["data_types"]["fp8"] = ["e4m3", "e5m2"]
        fp8_hw = os.path.join(work, a.hw + "-fp8.json")
        with open(fp8_hw, "w") as fh:
            json.dump(desc, fh)
    rows = []
    for dtype, flags in TECHNIQUES:
        label = dtype + (" " + " ".join(flags) if flags else "")
        if a.only is not None and not any(label.startswith(o) for o in a.only):
            continue
        out = os.path.join(work, "run-" + label.replace(" ", "_").replace(":", "-"))
        hw = fp8_hw if dtype.startswith("fp8") else a.hw
        cmd = [a.npusim, "run", "--hw", hw, "--workload", model_path, "--dtype", dtype,
               "--input", input_path, "--save-outputs", os.path.join(out, "q"),
               "--save-float-outputs", os.path.join(out, "f"), "--out", out] + flags
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 2:
            msg = r.stderr.strip().splitlines()[0] if r.stderr.strip() else "exit 2"
            rows.append((label, None, msg))
            print(f"{label}: refused: {msg}", flush=True)
            continue
        if r.returncode != 0:
            sys.exit(f"{label}: npusim exited {r.returncode}: {r.stderr.strip()[:400]}")
        stats = json.load(open(os.path.join(out, "stats.json")))
        check = stats.get("functional_check", {})
        own = check.get("bit_exact" if dtype == "int8" else "within_tolerance")
        own = own.get("value", own) if isinstance(own, dict) else own
        if own is not True:
            sys.exit(f"{label}: npusim's own check failed ({check})")
        q = np.load(os.path.join(out, "q", "logits.npy"))
        f = np.load(os.path.join(out, "f", "logits.npy"))
        row = {"accuracy": top1(q, yh), "float_accuracy": top1(f, yh),
               "agreement": float((q.argmax(1) == ref.argmax(1)).mean()),
               "cosine": cosine(q, ref)}
        rows.append((label, row, None))
        print(f"{label}: accuracy {100 * row['accuracy']:.1f} % (its float graph "
              f"{100 * row['float_accuracy']:.1f} %), top-1 agreement with torch "
              f"{100 * row['agreement']:.1f} %, logits cosine {row['cosine']:.5f}", flush=True)
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write("| data type, technique | held-out accuracy | its float graph (pruned, "
                     "unquantized) | top-1 agreement with torch | logits cosine vs torch |\n")
            fh.write("|---|---|---|---|---|\n")
            for label, row, msg in rows:
                if row is None:
                    fh.write(f"| `{label}` | refused: {msg.replace('|', '/')} | | | |\n")
                    continue
                fh.write(f"| `{label}` | {100 * row['accuracy']:.1f} % | "
                         f"{100 * row['float_accuracy']:.1f} % | {100 * row['agreement']:.1f} % | "
                         f"{row['cosine']:.5f} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
