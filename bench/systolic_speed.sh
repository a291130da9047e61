#!/usr/bin/env bash
# Speed of the systolic-array cores, both fidelities: simulated cycles and MACs per wall second
# on ResNet-50 (batch 1) tiled onto one array, per wall second and per CPU second (the latter is
# the fairer figure on a shared machine). Builds nothing; build the benchmark first:
#   cmake --build BUILD_DIR --target npusim_systolic_bench
# Usage: bench/systolic_speed.sh [BUILD_DIR]   (default: build)
# PE_BUDGET_S (default 5) caps the wall time of each pe run; it then reports the part it ran.
set -euo pipefail
build_dir="${1:-build}"
bench="${build_dir}/models/systolic/npusim_systolic_bench"
if [[ ! -x "${bench}" ]]; then
  echo "systolic_speed.sh: ${bench} not found; build the npusim_systolic_bench target first" >&2
  exit 2
fi
budget="${PE_BUDGET_S:-5}"

echo "== fast fidelity: whole ResNet-50 =="
"${bench}" --fidelity fast --rows 256 --cols 256 --dataflow ws --type int8
"${bench}" --fidelity fast --rows 128 --cols 128 --dataflow os --type int8
"${bench}" --fidelity fast --rows 128 --cols 128 --dataflow is --type int8
"${bench}" --fidelity fast --rows 256 --cols 256 --dataflow ws --type bf16
"${bench}" --fidelity fast --rows 32 --cols 32 --dataflow ws --type int8
echo "== pe fidelity: ResNet-50 until a ${budget} s budget is spent =="
"${bench}" --fidelity pe --rows 32 --cols 32 --dataflow ws --type int8 --budget-s "${budget}"
"${bench}" --fidelity pe --rows 32 --cols 32 --dataflow os --type int8 --budget-s "${budget}"
"${bench}" --fidelity pe --rows 128 --cols 128 --dataflow ws --type int8 --budget-s "${budget}"
