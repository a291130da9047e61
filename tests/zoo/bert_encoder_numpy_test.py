#!/usr/bin/python3
"""The zoo's bert-encoder against an independent float implementation in numpy.

npusim_zoo_parameters writes the layer's weights as `npusim run` draws them (seed 1); numpy runs
the BERT encoder layer of Devlin et al. 2019 on them in float64 (one 768-wide projection each for
query, key and value, 12 heads of 64, softmax over the keys, output projection, residual, layer
norm, feed-forward 3072 with erf GELU, residual, layer norm) and `npusim run --input` the same
input (int8 codes times the graph's input scale 1/64, so the input itself loses nothing) in int8
and bf16. Cosine of npusim's output against numpy's: >= 0.99 in int8, >= 0.999 in bf16 (and a max
error <= 2 % of the output range), and npusim's own check (int8 bit-exact, bf16 within bound).

  bert_encoder_numpy_test.py --npusim BIN --parameters TOOL [--hw tpu-v4-like-core] [--work DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.special import erf

SEQ, HIDDEN, HEADS = 128, 768, 12


def layernorm(x, gamma, beta, eps=1e-12):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def encoder(x, p):
    """One BERT encoder layer, float64, x [SEQ, HIDDEN]; p: name -> array."""
    def dense(name, t):
        return t @ p[name + ".weights"] + p[name + ".bias"]

    d = HIDDEN // HEADS

    def heads(t):  # [SEQ, HIDDEN] -> [HEADS, SEQ, d]
        return t.reshape(SEQ, HEADS, d).transpose(1, 0, 2)

    q, k, v = (heads(dense(n, x)) for n in ("query", "key", "value"))
    scores = q @ k.transpose(0, 2, 1)  # the 1/sqrt(d) is part of the query weights
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(1, 0, 2).reshape(SEQ, HIDDEN)
    attention = layernorm(dense("attention_output", context) + x, p["attention_norm.gamma"],
                          p["attention_norm.beta"])
    h = dense("intermediate", attention)
    h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
    return layernorm(dense("output", h) + attention, p["output_norm.gamma"],
                     p["output_norm.beta"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", required=True)
    ap.add_argument("--parameters", required=True, help="the npusim_zoo_parameters tool")
    ap.add_argument("--hw", default="tpu-v4-like-core")
    ap.add_argument("--work")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bert-numpy-")
    params_dir = os.path.join(work, "parameters")
    subprocess.run([args.parameters, "bert-encoder", "1", params_dir], check=True)
    p = {f[:-4]: np.load(os.path.join(params_dir, f)).astype(np.float64)
         for f in os.listdir(params_dir)}

    rng = np.random.default_rng(21)
    codes = rng.integers(-127, 128, size=(1, SEQ, HIDDEN))
    codes[0, 0, 0] = 127  # the input scale npusim takes from the file: 127 / 64 / 127 = 1 / 64
    x = (codes / 64.0).astype(np.float32)
    input_path = os.path.join(work, "input.npy")
    np.save(input_path, x)
    expected = encoder(x[0].astype(np.float64), p)

    failed = False
    for dtype, min_cosine in (("int8", 0.99), ("bf16", 0.999)):
        out = os.path.join(work, dtype)
        r = subprocess.run([args.npusim, "run", "--hw", args.hw, "--workload", "bert-encoder",
                            "--dtype", dtype, "--input", input_path, "--out", out,
                            "--save-outputs", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{dtype}: npusim exited {r.returncode}\n{r.stderr}")
            failed = True
            continue
        got = np.load(os.path.join(out, "output_norm.npy")).astype(np.float64)[0]
        with open(os.path.join(out, "stats.json")) as f:
            check = json.load(f)["functional_check"]
        cosine = float((got * expected).sum() /
                       (np.linalg.norm(got) * np.linalg.norm(expected)))
        max_error = float(np.abs(got - expected).max() / (expected.max() - expected.min()))
        ok = cosine >= min_cosine and check["within_tolerance"]
        ok = ok and (check["bit_exact"] if dtype == "int8" else max_error <= 0.02)
        print(f"bert-encoder {dtype} on {args.hw}: cosine {cosine:.5f} (>= {min_cosine}), "
              f"max error {100 * max_error:.2f} % of the range, npusim's check "
              f"bit_exact={check['bit_exact']} within_tolerance={check['within_tolerance']}: "
              f"{'pass' if ok else 'FAIL'}")
        failed = failed or not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
