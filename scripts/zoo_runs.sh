#!/usr/bin/env bash
# Runs every zoo network on every hardware preset in int8 and bf16 and keeps each run's stats.json
# and output values, for comparing two versions of npusim (scripts/compare_runs.py).
# Usage: scripts/zoo_runs.sh OUT_DIR [npusim binary] [extra run flags...]
#   ZOO_PRESETS="a b", ZOO_NETWORKS="x y": only those presets / networks (default: all of each)
# With "--values off" among the flags the runs are timing only and keep no output values (stats
# only).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: zoo_runs.sh OUT_DIR [npusim] [flags...]}"
bin="${2:-$root/build/sim/npusim}"
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$out"
presets=${ZOO_PRESETS:-$("$bin" presets | awk '/^[a-z]/ {print $1}')}
save=(--save-outputs)
args=" $* "
if [[ "$args" == *" --values off "* || "$args" == *" --values=off "* ]]; then save=(); fi
networks=${ZOO_NETWORKS:-$("$bin" zoo | awk '{print $1}')}
for hw in $presets; do
  for net in $networks; do
    for dtype in int8 bf16; do
      dir="$out/$hw/$net/$dtype"
      mkdir -p "$dir"
      status=0
      "$bin" run --hw "$hw" --workload "$net" --dtype "$dtype" --out "$dir" \
          ${save[@]+"${save[@]}"} ${save[@]+"$dir/values"} "$@" > "$dir/stdout.txt" \
          2> "$dir/stderr.txt" || status=$?
      if [ "$status" -ne 0 ]; then
        echo "zoo_runs: $hw $net $dtype exited $status (see $dir/stderr.txt)"
      fi
    done
  done
done
echo "zoo_runs: results in $out"
