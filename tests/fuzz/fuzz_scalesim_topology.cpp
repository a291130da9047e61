// Fuzz target: the SCALE-Sim topology readers (conv and GEMM CSVs). The first byte picks the kind.
#include "compat/scalesim/scalesim_topology.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto kind =
      (data[0] & 1) ? npusim::scalesim::TopologyKind::kGemm : npusim::scalesim::TopologyKind::kConv;
  npusim::fuzz::expect_user_error_or_success([&] {
    (void)npusim::scalesim::parse_topology(npusim::fuzz::as_text(data + 1, size - 1), "fuzz.csv",
                                           kind);
  });
  return 0;
}
