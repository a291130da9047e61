#!/usr/bin/env bash
# The README's second command (and CI's): install, build, run the whole test suite.
#   1. a Release build and every test (ctest);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build of the simulator's own suites, run
#      again under it but for those labelled "slow" (whole zoo networks, already run in step 1).
# NPUSIM_SKIP_SANITIZERS=1 skips step 2 (for a quick local run).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${NPUSIM_JOBS:-$(nproc)}"
"$root/scripts/setup.sh"

echo "== Release build and tests"
"$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" -j"$jobs" --output-on-failure --timeout 900 --no-tests=error

if [ "${NPUSIM_SKIP_SANITIZERS:-0}" != "1" ]; then
  # The simulator's own C++ under the sanitizers: the CLI end to end, the cores, the systolic and
  # DRAM models, the memory system and the .npy reader. (The SCALE-Sim and ONNX suites exercise
  # format readers whose code paths the CLI tests cover too; they run in step 1.)
  echo "== ASan + UBSan build and tests"
  suites=(npusim npusim_core_tests npusim_e2e_tests npusim_systolic_tests npusim_dram_tests
          npusim_memsys_tests npusim_npy_tests)
  NPUSIM_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" "$root/build-asan" -DNPUSIM_SANITIZE=ON \
    --target "${suites[@]}"
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" -j"$jobs" --output-on-failure --timeout 1800 \
    --no-tests=error -LE slow -E "NOT_BUILT"
fi
