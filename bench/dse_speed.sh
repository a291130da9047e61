#!/usr/bin/env bash
# Speed of the sweep driver (scripts/dse.py) against issue 11's figures: a 100-point mnist-cnn
# sweep in under a minute on 2 cores, a 1000-point resnet50 timing-only sweep in under 10 minutes,
# and the driver's own overhead per point. Not part of the test suite: wall time depends on the
# machine and its load.
#
# Usage: bench/dse_speed.sh [RESNET_POINTS]   (default 40; 1000 runs the whole resnet50 sweep)
#   NPUSIM=path/to/npusim overrides build/sim/npusim; JOBS (default 2) sets --jobs. dse.py runs
#   the points in worker processes through the Python module when the build has it (build/python);
#   DSE_FLAGS=--cli measures one npusim process per point instead.
# Prints:
#   1. the 100-point mnist-cnn sweep (configs/sweeps/mnist_cnn_100.json): wall seconds;
#   2. the driver's overhead per point: the same 100 runs with --jobs 1, minus the same npusim
#      commands run one after the other by a bare loop (hardware files written beforehand);
#   3. the first RESNET_POINTS points of configs/sweeps/resnet50_lhs_1000.json, timing only
#      (--values off) when this npusim has it, else with values: wall seconds, and the wall time
#      of 1000 points extrapolated from them.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
jobs="${JOBS:-2}"
resnet_points="${1:-40}"
py=/usr/bin/python3
if [[ ! -x "${npusim}" ]]; then
  echo "dse_speed.sh: ${npusim} not found; build the npusim target or set NPUSIM" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
export NPUSIM="${npusim}"
now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
status=0

t0=$(now)
"${py}" "${repo}/scripts/dse.py" "${repo}/configs/sweeps/mnist_cnn_100.json" --out "${work}/mnist" \
  --jobs "${jobs}" --no-progress 2>"${work}/mnist.log"
t1=$(now)
mnist_s=$(calc "${t1} - ${t0}")
verdict=$(calc "(${mnist_s} < 60)")
printf "mnist-cnn, 100 points, --jobs %s: %.1f s wall (target < 60 s) %s\n" "${jobs}" "${mnist_s}" \
  "$([[ ${verdict} == 1 ]] && echo PASS || echo FAIL)"
[[ ${verdict} == 1 ]] || status=1

# Overhead: driver with one job against a bare loop over the same commands.
t0=$(now)
"${py}" "${repo}/scripts/dse.py" "${repo}/configs/sweeps/mnist_cnn_100.json" --out "${work}/seq" \
  --jobs 1 --no-progress 2>"${work}/seq.log"
t1=$(now)
driver_s=$(calc "${t1} - ${t0}")
t0=$(now)
for d in "${work}"/seq/runs/*/; do
  "${npusim}" run --hw "${d}hw.json" --workload mnist-cnn --out "${work}/bare" >/dev/null 2>&1 || true
done
t1=$(now)
bare_s=$(calc "${t1} - ${t0}")
printf "driver overhead per point: %.1f ms (100 runs with --jobs 1: %.2f s through dse.py, %.2f s as a bare loop of npusim)\n" \
  "$(calc "(${driver_s} - ${bare_s}) * 10")" "${driver_s}" "${bare_s}"

values=on
values_flag=()
if "${npusim}" run --help | grep -- "--values" >/dev/null; then  # not -q: npusim must not die of SIGPIPE under pipefail
  values=off; values_flag=(--values off); fi
t0=$(now)
"${py}" "${repo}/scripts/dse.py" "${repo}/configs/sweeps/resnet50_lhs_1000.json" --out "${work}/resnet" \
  --jobs "${jobs}" --limit "${resnet_points}" "${values_flag[@]}" --no-progress ${DSE_FLAGS:-} \
  2>"${work}/resnet.log"
t1=$(now)
resnet_s=$(calc "${t1} - ${t0}")
per1000=$(calc "${resnet_s} * 1000 / ${resnet_points}")
verdict=$(calc "(${per1000} < 600)")
printf "resnet50, %s points, values %s, --jobs %s: %.1f s wall; 1000 points: %.0f s%s (targets: issue 11 < 600 s, issue 26 < 60 s) %s\n" \
  "${resnet_points}" "${values}" "${jobs}" "${resnet_s}" "${per1000}" \
  "$([[ ${resnet_points} == 1000 ]] && echo "" || echo " extrapolated")" \
  "$([[ ${verdict} == 1 ]] && echo PASS || echo FAIL)"
[[ ${verdict} == 1 ]] || status=1
grep "results.csv" "${work}/mnist.log" "${work}/resnet.log" | sed 's/^.*dse.py: /  /'
exit ${status}
