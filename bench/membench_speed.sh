#!/usr/bin/env bash
# Speed of the DRAM model: simulated memory cycles and requests per second of CPU time and of
# wall time for a few membench patterns, next to DRAMsim3's and Ramulator 2's speeds measured
# the same way (DRAM_REFERENCE.md section 5).
#
# Usage: bench/membench_speed.sh [requests]           (default 2000000; idle patterns use 1/10)
#   NPUSIM=path/to/npusim   run "$NPUSIM membench ..." (default: build/sim/npusim)
#   MEMORY=hbm2             preset to measure
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requests="${1:-2000000}"
memory="${MEMORY:-hbm2}"

run=("${NPUSIM:-$root/build/sim/npusim}" membench)
if [[ ! -x "${run[0]}" ]]; then
  echo "membench_speed: ${run[0]} not found; build npusim or set NPUSIM" >&2
  exit 2
fi
echo "# ${run[*]}  --memory $memory   ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
printf '%-18s %3s %9s %12s %8s %14s %14s %14s %14s %9s\n' pattern ch requests sim_cycles cpu_s \
  "Mcycles/cpu_s" "Mreq/cpu_s" "Mcycles/wall_s" "Mreq/wall_s" "GB/s"
for channels in 1 8; do
  for pattern in seq-read random-read seq-mix-2r1w idle-random-read; do
    n="$requests"
    [[ "$pattern" == idle-* ]] && n=$((requests / 10))
    "${run[@]}" --memory "$memory" --channels "$channels" --pattern "$pattern" --requests "$n" |
      python3 -c '
import json, sys
d = json.load(sys.stdin)
m, h = d["memory"], d["host"]
print("%-18s %3d %9d %12d %8.3f %14.2f %14.2f %14.2f %14.2f %9.2f" % (
    d["pattern"], m["channels"], d["requests"], m["memory_cycles"], h["cpu_seconds"],
    h["memory_cycles_per_cpu_second"] / 1e6, h["requests_per_cpu_second"] / 1e6,
    h["memory_cycles_per_second"] / 1e6, h["requests_per_second"] / 1e6, m["bandwidth_gbps"]))'
  done
done
cat <<'REF'

# Reference simulators, HBM2, measured as CPU time (DRAM_REFERENCE.md section 5):
#   simulator, setup                         M DRAM cycles / CPU s    M requests / CPU s
#   DRAMsim3, 1 channel, saturating          0.62 (random) - 0.95     0.08 (random) - 0.37 (seq)
#   DRAMsim3, 1 channel, idle                5.5 - 6.2                0.03
#   DRAMsim3, 8 channels, saturating         0.10 (random) - 0.34     0.09 - 0.43
#   Ramulator 2.1, 1 channel, saturating     0.38 - 0.70              0.12 - 0.50
#   Ramulator 2.1, 1 channel, idle           13.3 - 13.6              0.07
#   Ramulator 2.1, 8 channels, saturating    0.06 - 0.09              0.15 - 0.51
REF
