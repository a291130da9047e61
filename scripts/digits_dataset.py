#!/usr/bin/python3
"""Writes scikit-learn's bundled 8x8 handwritten digits as a training set for a model's input.

The digits (1797 images of 8x8 pixels, 16 grey levels; UCI "Optical Recognition of Handwritten
Digits", shipped inside Debian's python3-sklearn, so nothing is downloaded) are upscaled to the
model's image size by bilinear interpolation, scaled to [0, 1], and split once, by a seeded
permutation, into a training part and a held-out part:

  OUT/x.npy          float32 [N, size, size, 1]  (NHWC, the zoo's mnist-cnn input layout)
  OUT/y.npy          int64   [N]                 labels 0..9
  OUT/heldout/x.npy, OUT/heldout/y.npy           the held-out samples, same layout

`--layout nchw` writes [N, 1, size, size] instead (the layout of a model exported from PyTorch).

Usage: scripts/digits_dataset.py OUT [--size 28] [--heldout 297] [--seed 0] [--layout nhwc|nchw]
"""

import argparse
import os
import sys

import numpy as np


def upscale(images, size):
    """Bilinear resize of [N, h, w] images to [N, size, size] (pixel centres aligned, as
    align_corners=False / half-pixel resizing does)."""
    n, h, w = images.shape

    def axis_weights(src, dst):
        pos = (np.arange(dst) + 0.5) * src / dst - 0.5
        pos = np.clip(pos, 0, src - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, src - 1)
        frac = pos - lo
        m = np.zeros((dst, src))
        m[np.arange(dst), lo] += 1 - frac
        m[np.arange(dst), hi] += frac
        return m

    rows = axis_weights(h, size)  # [size, h]
    cols = axis_weights(w, size)  # [size, w]
    return np.einsum("ph,nhw,qw->npq", rows, images, cols)


def make(size, heldout, seed):
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("digits_dataset.py: needs scikit-learn (Debian: apt install python3-sklearn)")
    digits = load_digits()
    images = digits.images.astype(np.float64) / 16.0  # 0..16 grey levels -> [0, 1]
    labels = digits.target.astype(np.int64)
    x = np.clip(upscale(images, size), 0.0, 1.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(labels))
    x, labels = x[order], labels[order]
    if not 0 < heldout < len(labels):
        sys.exit(f"digits_dataset.py: --heldout {heldout} must be in [1, {len(labels) - 1}]")
    return (x[heldout:], labels[heldout:]), (x[:heldout], labels[:heldout])


def save(directory, x, y, layout):
    os.makedirs(directory, exist_ok=True)
    x = x[:, None, :, :] if layout == "nchw" else x[:, :, :, None]
    np.save(os.path.join(directory, "x.npy"), np.ascontiguousarray(x))
    np.save(os.path.join(directory, "y.npy"), y)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--size", type=int, default=28, help="image side after upscaling (default 28)")
    p.add_argument("--heldout", type=int, default=297, help="held-out samples (default 297)")
    p.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    p.add_argument("--layout", choices=["nhwc", "nchw"], default="nhwc")
    a = p.parse_args()
    if a.size < 8:
        sys.exit(f"digits_dataset.py: --size {a.size} must be at least 8")
    (xt, yt), (xh, yh) = make(a.size, a.heldout, a.seed)
    save(a.out, xt, yt, a.layout)
    save(os.path.join(a.out, "heldout"), xh, yh, a.layout)
    print(f"{a.out}: {len(yt)} training and {len(yh)} held-out digits, {a.size}x{a.size}, "
          f"{a.layout}")


if __name__ == "__main__":
    main()
