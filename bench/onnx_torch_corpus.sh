#!/usr/bin/env bash
# The torch.onnx corpus table of docs/onnx.md ("Models exported by torch.onnx"): exports every
# model of tests/onnx/torch_corpus.py with Debian's python3-torch / -torchvision (opset 17, seeded
# random weights), runs each in int8 and bf16 on tpu-v1 and compares with torch's float outputs.
# Usage: bench/onnx_torch_corpus.sh [build-dir] [size] [out-dir]
#   size: the torchvision models' image side (default: 64, as the docs table; "full" for each
#   model's own, 224 / 299, which takes far longer: wide_resnet50_2 alone runs for minutes).
# Writes OUT/table.md (the docs table) and prints one line per model and data type.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
size="${2:-64}"
out="${3:-$root/build/torch_corpus_bench}"
size_flag=()
[ "$size" != "full" ] && size_flag=(--size "$size")
mkdir -p "$out"
corpus=(/usr/bin/python3 "$root/tests/onnx/torch_corpus.py")
"${corpus[@]}" export --out "$out" "${size_flag[@]}" 2> "$out.export.log"
"${corpus[@]}" check --npusim "$build/sim/npusim" --out "$out" --hw tpu-v1 \
  --markdown "$out/table.md" || true
echo "table: $out/table.md"
