#!/usr/bin/python3
"""Where vit_b_16 lost its int8 accuracy (docs/onnx.md, "vit_b_16 in int8: per-row scales"): every
encoder layer's residual output and layer norms, int8 in npusim against torch's float, for the
whole tensor and for the class token's row alone (the only row the classifier reads).

  bench/vit_int8_rows.py [--npusim build/sim/npusim] [--work DIR] [--size 64]
                         [--class-token-std S]

Exports vit_b_16 as tests/onnx/torch_corpus.py does (seed, image side --size), or with its class
token drawn from a normal of standard deviation S instead of torchvision's zeros (a stand-in for
a trained model's learned token), runs `npusim run --hw tpu-v1 --dtype int8 --save-outputs
--save-intermediates`, takes torch's own tensors with forward hooks, and prints one line per
tensor: cosine of the whole tensor, cosine of the class-token row, and the largest magnitude of
that row and of the tensor. Also prints the encoder input's int8 step and the class row's codes
with one scale for the whole tensor (what npusim did before per-row scales).
Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3); minutes of CPU.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import torch_corpus  # noqa: E402  (the corpus's model and seed)


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "sim", "npusim"))
    ap.add_argument("--work", help="keep the model and the tensors here (default: a temporary dir)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--class-token-std", type=float, help="draw the class token (default: zeros)")
    args = ap.parse_args()
    import torch
    work = args.work or tempfile.mkdtemp(prefix="vit-int8-")
    os.makedirs(work, exist_ok=True)

    torch.manual_seed(torch_corpus.SEED)
    np.random.seed(torch_corpus.SEED)
    model, shape = torch_corpus.build("vit_b_16", args.size)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(torch_corpus.SEED + 1))
    if args.class_token_std is not None:
        with torch.no_grad():
            model.class_token.normal_(0, args.class_token_std,
                                      generator=torch.Generator().manual_seed(5))
    ref = {}

    def keep(name):
        return lambda m, i, o: ref.__setitem__(name, o.detach().numpy())

    for i, layer in enumerate(model.encoder.layers):
        p = f"_encoder_layers_encoder_layer_{i}_"
        layer.ln_1.register_forward_hook(keep(p + "ln_1_LayerNormalization_output_0"))
        layer.ln_2.register_forward_hook(keep(p + "ln_2_LayerNormalization_output_0"))
        layer.register_forward_hook(keep(p + "Add_1_output_0"))
    model.encoder.ln.register_forward_hook(keep("_encoder_ln_LayerNormalization_output_0"))
    with torch.no_grad():
        tokens = model._process_input(x)
        tokens = torch.cat([model.class_token.expand(1, -1, -1), tokens], dim=1)
        encoder_input = (tokens + model.encoder.pos_embedding).numpy()[0]
        y = model(x)
    ref["output"] = y.numpy()
    # Gradients on: under no_grad nn.MultiheadAttention takes a fused path the exporter cannot write.
    onnx_path, input_path = os.path.join(work, "model.onnx"), os.path.join(work, "input.npy")
    torch.onnx.export(model, (x,), onnx_path, opset_version=17, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    np.save(input_path, x.numpy())

    out = os.path.join(work, "int8")
    subprocess.run([args.npusim, "run", "--hw", "tpu-v1", "--workload", onnx_path, "--dtype",
                    "int8", "--input", input_path, "--save-outputs", out, "--save-intermediates"],
                   check=True, stdout=subprocess.DEVNULL)

    step = np.abs(encoder_input).max() / 127
    codes = np.round(encoder_input[0] / step)
    print(f"encoder input with one scale: largest magnitude {np.abs(encoder_input).max():.3f} (int8 step "
          f"{step:.4f}); class row: rms {np.sqrt((encoder_input[0] ** 2).mean()):.4f}, codes "
          f"{codes.min():.0f} to {codes.max():.0f}, {100 * (codes == 0).mean():.0f} % zero; "
          f"patch rows: rms {np.sqrt((encoder_input[1:] ** 2).mean()):.4f}")
    print(f"{'tensor':64s} {'cosine':>8s} {'class row':>9s} {'row max':>8s} {'all max':>8s}")
    for name in sorted(ref, key=lambda n: (n != "output", len(n), n)):
        got = np.load(os.path.join(out, name + ".npy"))
        want = ref[name]
        if got.shape != want.shape and got.ndim == 3 and got.transpose(1, 2, 0).shape == want.shape:
            got = got.transpose(1, 2, 0)  # a [1, T, C] tensor is written as a map (C, 1, T)
        got = got.reshape(want.shape)
        if want.ndim == 3:
            print(f"{name:64s} {cosine(got, want):8.5f} {cosine(got[0, 0], want[0, 0]):9.5f} "
                  f"{np.abs(want[0, 0]).max():8.3f} {np.abs(want).max():8.3f}")
        else:
            print(f"{name:64s} {cosine(got, want):8.5f}")


if __name__ == "__main__":
    main()
