#!/usr/bin/env bash
# Configures and builds npusim. Usage: scripts/build.sh [build-dir] [cmake args...] [--target T...]
# The default build directory is ./build, Release, with tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
jobs="${NPUSIM_JOBS:-$(nproc)}"
# ccache keys relative to the checkout, so any clone on this machine reuses earlier compilations.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# Arguments before "--target" go to the configure step, the targets (if any) to the build.
configure=() targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--target" ]; then shift; targets=("$@"); break; fi
  configure+=("$1"); shift
done
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${NPUSIM_BUILD_TYPE:-Release}" "${configure[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$build" -j"$jobs" --target "${targets[@]}"
else
  cmake --build "$build" -j"$jobs"
fi
