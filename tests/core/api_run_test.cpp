// The library API (npusim/npusim.hpp) runs several designs in one process: each run elaborates in
// a SystemC context of its own, so a run after others, after a failed run, or in another thread
// gives the stats it gives alone (under the sanitizer build, without leaks).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "npusim/npusim.hpp"

namespace {

npusim::RunOptions options(int rows, bool values = true) {
  npusim::RunOptions o;
  o.hw_description = npusim::resolved_hardware("tpu-v1");
  (*o.hw_description)["matrix_unit"]["rows"] = rows;
  (*o.hw_description)["matrix_unit"]["cols"] = rows;
  o.workload = "mnist-cnn";
  o.values = values;
  return o;
}

// stats.json less the host's figures (wall time, memory), the only ones that vary.
nlohmann::json design_stats(const npusim::RunResult& r) {
  nlohmann::json s = r.stats;
  s.erase("host");
  return s;
}

TEST(ApiRun, RunsInOneProcessAreIndependent) {
  const nlohmann::json a = design_stats(npusim::run(options(32)));
  const nlohmann::json b = design_stats(npusim::run(options(128)));
  EXPECT_NE(a["total_cycles"], b["total_cycles"]);
  EXPECT_TRUE(a["functional_check"]["bit_exact"].get<bool>());
  npusim::RunOptions bad = options(32);
  bad.batch = 0;
  EXPECT_THROW(npusim::run(bad), npusim::InputError);
  EXPECT_EQ(design_stats(npusim::run(options(32))), a);
  EXPECT_EQ(design_stats(npusim::run(options(128))), b);
  EXPECT_EQ(design_stats(npusim::run(options(32, false)))["total_cycles"], a["total_cycles"]);
  // Timing-only runs reuse nothing of the one before (their storage is fresh zero pages each
  // time, support/zeroed_bytes.hpp): the same figures every time.
  const nlohmann::json timing = design_stats(npusim::run(options(64, false)));
  EXPECT_TRUE(design_stats(npusim::run(options(64)))["functional_check"]["bit_exact"].get<bool>());
  EXPECT_EQ(design_stats(npusim::run(options(64, false))), timing);
}

TEST(ApiRun, RunsInThreadsTakeTurnsAndAgreeWithRunsAlone) {
  const nlohmann::json alone = design_stats(npusim::run(options(64)));
  std::vector<nlohmann::json> got(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] { got[i] = design_stats(npusim::run(options(64))); });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : got) EXPECT_EQ(s, alone);
}

TEST(ApiRun, BadInputIsAnInputErrorWithTheLocatedMessage) {
  npusim::RunOptions o = options(32);
  (*o.hw_description)["matrix_unit"]["rows"] = -1;
  o.hw = "chip.json";
  try {
    npusim::run(o);
    FAIL() << "no error";
  } catch (const npusim::InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("chip.json: /matrix_unit/rows", 0), 0u) << e.what();
  }
  o = options(32);
  o.fidelity = "rtl";
  EXPECT_THROW(npusim::run(o), npusim::InputError);
}

}  // namespace
