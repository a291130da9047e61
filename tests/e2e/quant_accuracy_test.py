#!/usr/bin/env python3
"""scripts/quant_accuracy.py on mnist-cnn: one table row per output (the logits it adds and the
probabilities), four calibrations each, errors that say int8 follows the float32 graph.

  quant_accuracy_test.py NPUSIM
"""
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    npusim = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "quant_accuracy.py"),
                            "--npusim", npusim, "--networks", "mnist-cnn", "--onnx",
                            "--calib-samples", "8", "--eval-samples", "8", "--work", work],
                           capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    rows = [line for line in p.stdout.splitlines() if line.startswith("| mnist-cnn |")]
    if [r.split("|")[2].strip() for r in rows] != ["fc2", "probs"]:
        sys.exit(f"expected rows fc2 and probs:\n{p.stdout}")
    for r in rows:
        cells = [c.strip() for c in r.strip().strip("|").split("|")[2:]]
        if len(cells) != 4:
            sys.exit(f"expected four calibrations: {r}")
        for c in cells:
            m = re.fullmatch(r"([0-9.]+), ([0-9.]+) dB, ([0-9]+) %", c)
            if not m:
                sys.exit(f"malformed cell '{c}' in {r}")
            rel, sqnr = float(m.group(1)), float(m.group(2))
            # int8 follows the float graph (docs/quantization.md: a few % on mnist-cnn), and the
            # two figures are the same measurement.
            if not 0.0 < rel < 0.2 or abs(sqnr + 20 * math.log10(rel)) > 0.1:
                sys.exit(f"implausible cell '{c}' in {r}")
    print(p.stdout)


if __name__ == "__main__":
    main()
