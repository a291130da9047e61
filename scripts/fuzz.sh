#!/usr/bin/env bash
# Fuzzes every input reader and the whole run path with libFuzzer (docs/fuzzing.md): a clang-14
# build with ASan + UBSan of the fuzz targets (tests/fuzz) in build-fuzz, then each target replays
# its corpus and fuzzes for NPUSIM_FUZZ_SECONDS (default 60) seconds, one after the other.
# New inputs go to build-fuzz/tests/fuzz/work/<target>/, crashes to build-fuzz/tests/fuzz/crash-*.
# Outside the test command (scripts/test.sh replays the corpora in its GCC builds): the clang build
# of the whole simulator takes minutes of a 2-core machine.
#   scripts/fuzz.sh [TARGET ...]     targets by short name (hw_config onnx run ...); default all
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${NPUSIM_FUZZ_SECONDS:-60}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=(hw_config graph_json onnx npy scalesim_cfg scalesim_topology run)
fi
targets=()
for n in "${names[@]}"; do
  if [ ! -f "$root/tests/fuzz/fuzz_$n.cpp" ]; then
    echo "fuzz.sh: no fuzz target '$n' (tests/fuzz/fuzz_$n.cpp)" >&2
    exit 2
  fi
  targets+=("npusim_fuzz_$n")
done
NPUSIM_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" "$root/build-fuzz" -DNPUSIM_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=clang++-14 -DNPUSIM_FUZZ_SECONDS="$seconds" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" --target "${targets[@]}"
regex="^fuzz[.]($(IFS='|'; echo "${names[*]}"))([.]corpus)?$"
# One target at a time: each fuzzes on one core for its seconds.
ASAN_OPTIONS=detect_leaks=1 \
  LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0" \
  ctest --test-dir "$root/build-fuzz" -j1 --output-on-failure --no-tests=error -L fuzz -R "$regex"
