#!/usr/bin/env bash
# The llama-7b-like serving figures of docs/serving.md ("llama-7b-like on tpu-v4-like"): writes the
# trace with scripts/make_request_trace.py, replays it timing only on tpu-v4-like (bf16, the bulk
# memory fidelity) and prints the report, the CPU seconds and the peak RSS.
#   short: 60 requests at 4 per second, prompts lognormal around 96 tokens, outputs around 48
#          (both at most 128), seed 0; decode simulated up to batch 8 (about 4.5 minutes of CPU).
#   long:  40 requests at 1.5 per second, prompts lognormal around 320 tokens (sigma 0.35, at most
#          512), outputs around 32, seed 1; programs on a grid of 128 tokens, decode simulated up
#          to batch 4.
# Not part of the test suite: minutes of CPU. Run it niced on a shared machine.
#
# Usage: bench/serve_llama7b.sh [short|long] [OUT]   NPUSIM=path overrides build/sim/npusim
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
which="${1:-short}"
out="${2:-$(mktemp -d)}"
mkdir -p "${out}"
case "${which}" in
  short)
    trace=(--requests 60 --rate 4 --prompt lognormal:96:0.5 --output lognormal:48:0.5
           --max-tokens 128 --seed 0)
    serve=(--max-simulated-batch 8) ;;
  long)
    trace=(--requests 40 --rate 1.5 --prompt lognormal:320:0.35 --output lognormal:32:0.5
           --max-tokens 512 --seed 1)
    serve=(--grid-tokens 128 --max-simulated-batch 4) ;;
  *) echo "usage: $0 [short|long] [OUT]" >&2; exit 2 ;;
esac
/usr/bin/python3 "${repo}/scripts/make_request_trace.py" "${out}/trace.csv" "${trace[@]}"
/usr/bin/time -f "%U %S %M" -o "${out}/time" "${npusim}" serve --hw tpu-v4-like \
  --workload llama-7b-like --trace "${out}/trace.csv" --memory-fidelity bulk "${serve[@]}" \
  --slo-ttft 0.5 --slo-tpot 0.05 --out "${out}/serve"
cat "${out}/serve/report.txt"
read -r user sys rss_kb < "${out}/time"
cpu=$(awk "BEGIN { print ${user} + ${sys} }")
echo "serve, llama-7b-like on tpu-v4-like (${which}): ${cpu} s CPU (${user} user + ${sys} system), peak ${rss_kb} KiB; results in ${out}"
