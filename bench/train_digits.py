#!/usr/bin/python3
"""`npusim train` of the zoo's mnist-cnn (Keras' MNIST CNN) or workloads/training/digits-mlp.json
on the bundled digits against the numpy reference (tests/training/numpy_cnn.py, numpy_mlp.py)
from the same initial weights (docs/training.md):

  bench/train_digits.py [--workload mnist-cnn|digits-mlp] [--npusim build/sim/npusim]
                        [--hw tpu-v4-like-core] [--steps 200] [--batch 64] [--optimizer adam]
                        [--lr 0.001] [--eval-every 50] [--work DIR]

Writes the digits (scripts/digits_dataset.py), runs the simulated training with --save-weights,
runs the numpy reference from DIR/weights/initial over the same batches (in float32, and with
every matrix product's inputs rounded to bf16, the simulated chip's precision rule, and with the
loss's tensors also stored in bf16), and prints
the loss of each every --eval-every steps, the largest relative loss difference over the first
100 and all steps, the held-out accuracies, the simulated step's cycles, samples/s and energy,
and the simulation's CPU and wall time.
"""
import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "training"))
import numpy_cnn  # noqa: E402
import numpy_mlp  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="mnist-cnn", choices=("mnist-cnn", "digits-mlp"))
    p.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    p.add_argument("--hw", default="tpu-v4-like-core")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--work")
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="train_digits.")
    data = os.path.join(work, "digits")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_dataset.py"), data],
                   check=True, stdout=subprocess.DEVNULL)
    weights, out = os.path.join(work, "weights"), os.path.join(work, "out")
    start = time.time()
    workload = a.workload if a.workload == "mnist-cnn" else os.path.join(
        ROOT, "workloads", "training", "digits-mlp.json")
    reference = numpy_cnn if a.workload == "mnist-cnn" else numpy_mlp
    cpu = os.times()
    subprocess.run([a.npusim, "train", "--hw", a.hw, "--workload", workload, "--data", data,
                    "--batch", str(a.batch), "--steps", str(a.steps), "--optimizer", a.optimizer,
                    "--lr", str(a.lr), "--eval-every", str(a.eval_every), "--save-weights",
                    weights, "--out", out], check=True, stdout=subprocess.DEVNULL)
    sim_wall = time.time() - start
    after = os.times()
    sim_cpu = (after.children_user - cpu.children_user) + (after.children_system -
                                                           cpu.children_system)
    with open(os.path.join(out, "stats.json")) as f:
        t = json.load(f)["training"]
    x = np.load(os.path.join(data, "x.npy"))
    y = np.load(os.path.join(data, "y.npy"))
    xh = np.load(os.path.join(data, "heldout", "x.npy"))
    yh = np.load(os.path.join(data, "heldout", "y.npy"))
    params = reference.load_parameters(os.path.join(weights, "initial"))
    start = time.time()
    _, losses, evals = reference.train(dict(params), x, y, xh, yh, a.steps, a.batch,
                                       numpy_cnn.Optimizer(a.optimizer, a.lr), a.eval_every)
    numpy_wall = time.time() - start
    runs = [("numpy", losses, evals)]
    # The same step with every matrix product's inputs rounded to bf16 (numpy_cnn.bf16), and
    # with the loss's tensors stored in bf16 as well.
    for mode in ("bf16", "bf16-stored"):
        model = (functools.partial(reference.loss_and_gradients, matrix_inputs=mode),
                 reference.accuracy)
        _, losses16, evals16 = numpy_cnn.train(dict(params), x, y, xh, yh, a.steps, a.batch,
                                               numpy_cnn.Optimizer(a.optimizer, a.lr),
                                               a.eval_every, model=model)
        runs.append((f"numpy-{mode}", losses16, evals16))
    sim_loss = t["loss"]
    print(f"{a.workload}: {a.steps} steps of batch {a.batch}, {a.optimizer} lr {a.lr:g}, on {a.hw}")
    print("step  loss npusim" + "".join(f"  {'loss ' + n:>22}" for n, _, _ in runs))
    for s in sorted({1, *range(a.eval_every, a.steps + 1, max(a.eval_every, 1)), a.steps}):
        print(f"{s:4d}  {sim_loss[s - 1]:11.4f}" + "".join(f"  {r[1][s - 1]:22.4f}" for r in runs))
    for name, ref, _ in runs:
        rel = [abs(u - v) / abs(v) for u, v in zip(sim_loss, ref)]
        for n in sorted({min(100, a.steps), a.steps}):
            print(f"largest relative loss difference from {name} over steps 1-{n}: "
                  f"{100 * max(rel[:n]):.2f} %")
    print("step  held-out npusim" + "".join(f"  {'held-out ' + n:>24}" for n, _, _ in runs))
    for i, hs in enumerate(t["heldout"]):
        print(f"{hs['step']:4d}  {100 * hs['accuracy']:14.1f} %" +
              "".join(f"  {100 * r[2][i]['accuracy']:22.1f} %" for r in runs))
    print(f"step {t['step_cycles']:.0f} cycles (forward {t['forward_cycles']:.0f}, backward "
          f"{t['backward_cycles']:.0f}, optimizer {t.get('optimizer_cycles', 0):.0f} on the "
          f"{t.get('optimizer_on', 'host')}), {t['samples_per_s']:.0f} samples/s, "
          f"{t['energy_per_step_j']:.3g} J per step")
    print(f"npusim train {sim_cpu:.1f} s of CPU (user + system), {sim_wall:.1f} s wall; numpy "
          f"{numpy_wall:.1f} s wall")


if __name__ == "__main__":
    main()
