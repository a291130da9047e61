#!/usr/bin/env bash
# Cost of trace writing (docs/traces.md): ResNet-50, batch 1, int8, tpu-v1, fast fidelity, run
# without trace output and with `--trace DIR` (default detail: instructions), best of N runs each
# (CPU seconds, user + system: the fairer figure on a shared machine; wall seconds beside it).
# The issue's limit: tracing adds under 20 % of the run's time. Also prints, for information, the
# cost of --html and of --vcd. Not part of the test suite: times depend on the machine and its load.
#
# Usage: bench/trace_overhead.sh [runs]   (default 3; NPUSIM=path overrides build/sim/npusim)
# Exits 1 if the --trace overhead is 20 % or more.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
runs="${1:-3}"
if [[ ! -x "${npusim}" ]]; then
  echo "trace_overhead.sh: ${npusim} not found; build the npusim target or set NPUSIM" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "trace_overhead.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# best_of LABEL ARGS...: prints "cpu wall" of the fastest (by CPU) of $runs runs.
best_of() {
  local best_cpu="" best_wall=""
  for _ in $(seq "${runs}"); do
    rm -rf "${work}/out"
    /usr/bin/time -f "%U %S %e" -o "${work}/time" "${npusim}" run --hw tpu-v1 \
      --workload resnet50 "$@" >/dev/null
    read -r user sys wall <"${work}/time"
    cpu=$(awk -v u="${user}" -v s="${sys}" 'BEGIN { printf "%.2f", u + s }')
    if [[ -z "${best_cpu}" ]] || awk -v a="${cpu}" -v b="${best_cpu}" 'BEGIN { exit !(a < b) }'; then
      best_cpu="${cpu}" best_wall="${wall}"
    fi
  done
  echo "${best_cpu} ${best_wall}"
}

read -r off_cpu off_wall < <(best_of)
read -r on_cpu on_wall < <(best_of --trace "${work}/out")
size=$(stat -c %s "${work}/out/trace.json")
read -r html_cpu html_wall < <(best_of --html "${work}/out/report.html")
read -r vcd_cpu vcd_wall < <(best_of --vcd "${work}/out/waves.vcd")
vcd_size=$(stat -c %s "${work}/out/waves.vcd")

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f", 100 * (a - b) / b }'; }
printf "resnet50 on tpu-v1, best of %s runs (CPU s / wall s)\n" "${runs}"
printf "  no trace output     %6s / %6s\n" "${off_cpu}" "${off_wall}"
printf "  --trace DIR         %6s / %6s   %s %% CPU, trace.json %s bytes\n" "${on_cpu}" "${on_wall}" \
  "$(pct "${on_cpu}" "${off_cpu}")" "${size}"
printf "  --html FILE         %6s / %6s   %s %% CPU\n" "${html_cpu}" "${html_wall}" \
  "$(pct "${html_cpu}" "${off_cpu}")"
printf "  --vcd FILE          %6s / %6s   %s %% CPU, waves.vcd %s bytes\n" "${vcd_cpu}" "${vcd_wall}" \
  "$(pct "${vcd_cpu}" "${off_cpu}")" "${vcd_size}"
if awk -v a="${on_cpu}" -v b="${off_cpu}" 'BEGIN { exit !(a >= 1.2 * b) }'; then
  echo "FAIL: --trace adds 20 % or more"
  exit 1
fi
echo "PASS: --trace adds under 20 %"
