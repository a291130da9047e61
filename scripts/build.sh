#!/usr/bin/env bash
# Configures and builds npusim. Usage: scripts/build.sh [build-dir] [extra cmake args...]
# The default build directory is ./build, Release, with tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
jobs="${NPUSIM_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${NPUSIM_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build "$build" -j"$jobs"
