#!/usr/bin/env bash
# Speed of npusim serve against issue 24's target: a 1000-request trace on gpt2-small in under 10
# minutes of CPU. Writes the trace with scripts/make_request_trace.py (1000 requests at 20 per
# second, prompts lognormal around 200 tokens, outputs around 100, at most 500; seed 0), replays
# it timing only on tpu-v4-like-core and prints the report, the CPU seconds and the peak RSS.
# Not part of the test suite: the time depends on the machine.
#
# Usage: bench/serve_speed.sh [REQUESTS]   (default 1000); NPUSIM=path overrides build/sim/npusim
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
requests="${1:-1000}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
/usr/bin/python3 "${repo}/scripts/make_request_trace.py" "${work}/trace.csv" --requests "${requests}" \
  --rate 20 --prompt lognormal:200:0.6 --output lognormal:100:0.6 --max-tokens 500 --seed 0
/usr/bin/time -f "%U %S %M" -o "${work}/time" "${npusim}" serve --hw tpu-v4-like-core \
  --workload gpt2-small --trace "${work}/trace.csv" --out "${work}/out"
read -r user sys rss_kb < "${work}/time"
cpu=$(awk "BEGIN { print ${user} + ${sys} }")
verdict=$(awk "BEGIN { print (${cpu} < 600) ? \"PASS\" : \"FAIL\" }")
echo "serve, gpt2-small, ${requests} requests: ${cpu} s CPU (${user} user + ${sys} system), peak ${rss_kb} KiB (target < 600 s CPU for 1000) ${verdict}"
