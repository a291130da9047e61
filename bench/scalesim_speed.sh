#!/usr/bin/env bash
# Speed of `npusim scalesim` (SCALE-Sim compatible mode) on SCALE-Sim's shipped topologies:
# simulated cycles per wall second and wall time per network, per config.
#
# Usage: bench/scalesim_speed.sh            (from the repository root)
#   NPUSIM=path/to/npusim          the npusim binary (default: build/sim/npusim, then
#                                  build-scalesim/sim/npusim); if none exists, the stand-alone
#                                  driver SCALESIM_RUN (default
#                                  build-scalesim/compat/scalesim/npusim_scalesim_run) is used.
#   BENCH_LARGE=1                  also run GNMT (about 10^9 cycles on the small arrays).
# SCALE-Sim v2 itself simulates about 10^3 - 10^4 cycles per wall second on these layers.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=()
for candidate in "${NPUSIM:-}" build/sim/npusim build-scalesim/sim/npusim; do
  # An npusim built before the scalesim subcommand was wired in does not count.
  if [[ -n "${candidate}" && -x "${candidate}" ]] &&
     "${candidate}" scalesim --help >/dev/null 2>&1; then
    cmd=("${candidate}" scalesim)
    break
  fi
done
if [[ ${#cmd[@]} -eq 0 ]]; then
  run="${SCALESIM_RUN:-build-scalesim/compat/scalesim/npusim_scalesim_run}"
  if [[ ! -x "${run}" ]]; then
    echo "scalesim_speed.sh: no npusim binary found; build the npusim (or npusim_scalesim_run)" \
         "target first, or set NPUSIM" >&2
    exit 2
  fi
  cmd=("${run}")
fi

out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT
w=workloads/scalesim
conv=(alexnet resnet18 resnet50 yolo_tiny transformer_short)
gemm=(transformer_partial gpt2 ncf)
if [[ "${BENCH_LARGE:-0}" == 1 ]]; then gemm+=(gnmt); fi

echo "command: ${cmd[*]}"
printf '%-12s %-20s %6s %14s %10s %16s\n' config topology layers cycles wall_s cycles_per_s
for cfg in google eyeriss scale; do
  for topo in "${conv[@]}" "${gemm[@]}"; do
    kind=conv
    [[ " ${gemm[*]} " == *" ${topo} "* ]] && kind=gemm
    start=$(date +%s.%N)
    line=$("${cmd[@]}" -q -c "${w}/configs/${cfg}.cfg" -t "${w}/${topo}.csv" -i "${kind}" \
           -p "${out}" | tail -1)
    end=$(date +%s.%N)
    # "npusim scalesim: N layers, C cycles, simulated in S s; reports in DIR"
    layers=$(sed -E 's/.*: ([0-9]+) layers.*/\1/' <<<"${line}")
    cycles=$(sed -E 's/.* ([0-9]+) cycles.*/\1/' <<<"${line}")
    awk -v c="${cfg}" -v t="${topo}" -v l="${layers}" -v n="${cycles}" -v s="${start}" \
        -v e="${end}" 'BEGIN { w = e - s; printf "%-12s %-20s %6d %14s %10.3f %16.3e\n",
                              c, t, l, n, w, n / w }'
  done
done
