#!/usr/bin/env bash
# The README's first command: install, build a Release binary, run the default simulation
# (the MNIST CNN on the TPU v1 preset) and print its summary. Results land in out/quickstart/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build"
"$root/build/sim/npusim" run --hw tpu-v1 --workload mnist-cnn --layers --out "$root/out/quickstart"
echo "results: $root/out/quickstart/{stats.json,report.txt,config.resolved.json}"
