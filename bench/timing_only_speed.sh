#!/usr/bin/env bash
# CPU time and peak memory of timing-only runs (--values off), the cost a sweep or an LLM decode
# step pays per point (issue 22 item 6, issue 26 item 4; docs/performance.md "Timing-only runs:
# speed and memory"):
#   dense-stack  bench/workloads/dense_stack_8x4096.json (eight dense layers 4096 -> 11008 -> 4096,
#                batch 1, bf16: 722 MB of weights) on tpu-v4-like-core: a memory-bound weight
#                stream through the HBM command-level DRAM model. Target: peak RSS well under
#                500 MiB, i.e. nothing in proportion to the weights;
#   resnet50     resnet50 int8 on tpu-v1 (the sweep's network) and on tpu-v1-hbm (HBM2 DRAM model).
# Not part of the test suite: times depend on the machine and its load (printed first).
#
# Usage: bench/timing_only_speed.sh [REPEAT]   (default 3: the best CPU time of REPEAT runs is
#   printed, the usual way to take a shared machine's noise out; peak RSS is the largest)
#   NPUSIM=path/to/npusim overrides the repository's build/sim/npusim.
# Exits 1 if a run fails or the dense stack's peak RSS is 500 MiB or more.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
repeat="${1:-3}"
if [[ ! -x "${npusim}" ]]; then
  echo "timing_only_speed.sh: ${npusim} not found; build the npusim target or set NPUSIM" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "timing_only_speed.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
status=0
echo "load: $(uptime | sed 's/.*load average/load average/')"

# bench_run LABEL RSS_LIMIT_MIB ARGS...: runs `npusim run ARGS --values off` REPEAT times.
bench_run() {
  local label="$1" limit="$2"
  shift 2
  local i
  for ((i = 0; i < repeat; ++i)); do
    local out="${work}/${label}.${i}"
    if ! /usr/bin/time -v -o "${out}.time" "${npusim}" run "$@" --values off --out "${out}" \
        >"${out}.stdout" 2>"${out}.stderr"; then
      echo "${label}: FAIL: npusim exited with an error:" >&2
      tail -n 20 "${out}.stderr" >&2
      status=1
      return
    fi
  done
  /usr/bin/python3 - "${label}" "${limit}" "${work}" "${repeat}" <<'EOF' || status=1
import json, re, sys
label, limit, work, repeat = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
cpus, rss = [], []
for i in range(repeat):
    text = open(f"{work}/{label}.{i}.time").read()
    cpus.append(sum(float(re.search(rf"{k} time \(seconds\): (\S+)", text).group(1))
                    for k in ("User", "System")))
    rss.append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024)
stats = json.load(open(f"{work}/{label}.0/stats.json"))
memory = stats.get("memory", {})
extra = ""
if memory.get("model") == "dram":
    extra = f", {memory['read_bursts'] + memory['write_bursts']} DRAM bursts"
params = stats.get("dram", {}).get("parameter_bytes")
if params is not None:
    extra += f", {params / 1e6:.0f} MB of parameters"
ok = limit <= 0 or max(rss) < limit
verdict = "" if limit <= 0 else (" PASS" if ok else " FAIL") + f" (peak RSS < {limit:g} MiB)"
print(f"{label}: cpu {min(cpus):.2f} s (best of {repeat}), peak RSS {max(rss):.0f} MiB, "
      f"{stats['total_cycles']} cycles{extra}{verdict}")
sys.exit(0 if ok else 1)
EOF
}

bench_run dense-stack 500 --hw tpu-v4-like-core \
  --workload "${repo}/bench/workloads/dense_stack_8x4096.json" --dtype bf16
bench_run resnet50-tpu-v1 0 --hw tpu-v1 --workload resnet50
bench_run resnet50-tpu-v1-hbm 0 --hw tpu-v1-hbm --workload resnet50
exit "${status}"
