#!/usr/bin/env bash
# CPU time and peak memory of the LLM speed target (issue 22 item 6): llama-7b-like on tpu-v4-like,
# a 16-token prompt and 1 new token, timing only. Target: < 30 s of CPU and < 2 GiB peak RSS.
# Prints the load first: CPU seconds (user + system) are what to compare on a shared machine.
# Not part of the test suite.
#
# Usage: bench/llm_speed.sh [extra generate flags...]   NPUSIM=path overrides build/sim/npusim.
# Exits 1 if the run fails or misses a target.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npusim="${NPUSIM:-${repo}/build/sim/npusim}"
if [[ ! -x "${npusim}" ]]; then
  echo "llm_speed.sh: ${npusim} not found; build the npusim target or set NPUSIM" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "llm_speed.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2
  exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
echo "load: $(uptime | sed 's/.*load average/load average/')"
if ! /usr/bin/time -f "%U %S %M" -o "${work}/time" "${npusim}" generate --hw tpu-v4-like \
    --workload llama-7b-like --prompt-tokens 16 --new-tokens 1 --values off --out "${work}/out" \
    "$@" >"${work}/stdout" 2>"${work}/stderr"; then
  echo "llm_speed.sh: npusim generate failed:" >&2
  tail -n 20 "${work}/stderr" >&2
  exit 1
fi
read -r user sys rss_kb <"${work}/time"
/usr/bin/python3 - "${user}" "${sys}" "${rss_kb}" "${work}/out/stats.json" <<'PY'
import json, sys
user, system, rss_kb = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
stats = json.load(open(sys.argv[4]))
gen = stats.get("generation", {})
cpu, gib = user + system, rss_kb / 2**20
ok = cpu < 30 and gib < 2
print(f"llama-7b-like, tpu-v4-like, 16 + 1 tokens, values off: {cpu:.1f} s CPU ({user:.1f} user + "
      f"{system:.1f} system), peak {gib:.2f} GiB (targets < 30 s, < 2 GiB) {'PASS' if ok else 'FAIL'}")
for key in ("prefill_cycles", "decode_cycles"):
    if key in gen:
        print(f"  generation.{key}: {gen[key]}")
sys.exit(0 if ok else 1)
PY
