#!/usr/bin/env bash
# Speed of a whole npusim run (compile, simulate timing AND values, reference check, reports),
# against issue 5's figures: ResNet-50, batch 1, int8, tpu-v1 preset, fast fidelity, in under
# 10 s of wall time (the aim is 2 s) and under 2 GiB of peak memory. A second line runs the
# register-level pe fidelity on mnist-cnn under the same limits; a third runs ResNet-50 on the
# tpu-v1-hbm preset (HBM2 through the command-level DRAM model). Not part of the test suite:
# wall time depends on the machine and its load.
#
# Usage: bench/resnet50_speed.sh   (NPUSIM=path/to/npusim overrides the repository's build/sim/npusim)
# Prints, per run: wall seconds (and CPU seconds, the fairer figure on a shared machine), peak RSS
# (MiB), simulated cycles, simulated cycles per wall second, MACs per wall second, whether the
# outputs matched the reference, and PASS/FAIL. Exits 1 if any run fails a limit, does not match
# its reference or does not finish.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
if [[ ! -x "${npusim}" ]]; then
  echo "resnet50_speed.sh: ${npusim} not found; build the npusim target or set NPUSIM" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "resnet50_speed.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2
  exit 2
fi

limit_wall_s=10
aim_wall_s=2
limit_rss_mib=2048
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
status=0

# bench_run LABEL ARGS...: runs `npusim run ARGS --out DIR` and prints one line of figures.
bench_run() {
  local label="$1"
  shift
  local out="${work}/${label}"
  if ! /usr/bin/time -v -o "${out}.time" "${npusim}" run "$@" --out "${out}" \
      >"${out}.stdout" 2>"${out}.stderr"; then
    echo "${label}: FAIL: npusim exited with an error:" >&2
    tail -n 20 "${out}.stderr" >&2
    status=1
    return
  fi
  python3 - "${label}" "${out}.time" "${out}/stats.json" "${limit_wall_s}" "${aim_wall_s}" \
      "${limit_rss_mib}" <<'EOF' || status=1
import json, re, sys
label, time_file, stats_file = sys.argv[1:4]
limit_wall, aim_wall, limit_rss = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
text = open(time_file).read()
clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
wall = 0.0
for part in clock.split(":"):
    wall = wall * 60 + float(part)
rss_mib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
cpu = sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", text).group(1))
          for kind in ("User", "System"))
stats = json.load(open(stats_file))
cycles, macs = stats["total_cycles"], stats["macs"]
bit_exact = stats.get("functional_check", {}).get("bit_exact")
ok = wall < limit_wall and rss_mib < limit_rss and bit_exact is not False
verdict = "PASS" if ok else "FAIL"
note = "" if wall < aim_wall else f" (aim {aim_wall:g} s)"
values = {True: "outputs bit-exact", False: "OUTPUTS DIFFER from the reference",
          None: "outputs not checked"}[bit_exact]
memory = stats.get("memory", {})
dram = ""
if memory.get("model") == "dram":
    dram = (f"{memory['memory_cycles']} {memory['preset']} memory cycles "
            f"({memory['memory_cycles'] / wall:.3g}/s, {memory['read_bursts'] + memory['write_bursts']} "
            f"bursts), ")
print(f"{label}: wall {wall:.2f} s (cpu {cpu:.2f} s), peak RSS {rss_mib:.0f} MiB, "
      f"{cycles} simulated cycles, {cycles / wall:.3g} cycles/s, {dram}{macs / wall:.3g} MACs/s, "
      f"{values}: {verdict} (limits < {limit_wall:g} s{note}, < {limit_rss:g} MiB)")
sys.exit(0 if ok else 1)
EOF
}

bench_run resnet50-fast --hw tpu-v1 --workload resnet50
# The same network on one HBM2 stack (8 channels of the command-level DRAM model).
bench_run resnet50-hbm2 --hw tpu-v1-hbm --workload resnet50
bench_run mnist-cnn-pe --hw tpu-v1 --workload mnist-cnn --fidelity pe
exit "${status}"
