// Same input, same bytes: a run repeated gives a stats.json equal but for its `host` figures, and a
// report.txt, trace.json, report.html and the VCD identical byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

struct Case {
  const char* name;
  const char* args;
};

class Reproducible : public testing::TestWithParam<Case> {};

TEST_P(Reproducible, TwoRunsWriteTheSameBytes) {
  const Case c = GetParam();
  std::filesystem::path dirs[2];
  for (int i = 0; i < 2; ++i) {
    dirs[i] = fresh_dir(std::string("repro-") + c.name + "-" + std::to_string(i));
    const std::string d = dirs[i].string();
    CommandResult r = run_npusim(std::string("run ") + c.args + " --out " + d + " --trace " + d +
                                 " --html " + d + "/report.html --vcd " + d + "/signals.vcd");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  json stats[2];
  for (int i = 0; i < 2; ++i) {
    stats[i] = json::parse(slurp(dirs[i] / "stats.json"));
    // The host's figures are there, and they are the only ones that may differ.
    ASSERT_TRUE(stats[i].contains("host")) << "stats.json has no host section";
    EXPECT_GT(stats[i]["host"]["wall_seconds"].get<double>(), 0.0);
    EXPECT_GT(stats[i]["host"]["peak_memory_bytes"].get<uint64_t>(), 0u);
    stats[i].erase("host");
  }
  EXPECT_EQ(stats[0], stats[1]) << "stats.json without host differs between two runs";
  for (const char* file :
       {"report.txt", "trace.json", "report.html", "config.resolved.json", "signals.vcd"}) {
    const std::string a = slurp(dirs[0] / file), b = slurp(dirs[1] / file);
    EXPECT_FALSE(a.empty()) << file << " is empty";
    EXPECT_TRUE(a == b) << file << " differs between two runs of the same input";
  }
  // Two runs in the same second would match even with SystemC's date in the VCD header: check that
  // the `$date` section is blank.
  const std::string vcd = slurp(dirs[0] / "signals.vcd");
  const size_t date = vcd.find("$date"), end = vcd.find("$end", date);
  ASSERT_EQ(date, 0u) << "the VCD does not start with its $date section";
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(vcd.substr(5, end - 5).find_first_not_of(" \n"), std::string::npos)
      << "the VCD header carries a date: " << vcd.substr(0, end);
  // No host figure leaks into the files that must stay the same.
  EXPECT_EQ(slurp(dirs[0] / "report.txt").find("wall"), std::string::npos);
  for (const auto& d : dirs) std::filesystem::remove_all(d);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, Reproducible,
    testing::Values(Case{"mnist_int8", "--hw tpu-v1 --workload mnist-cnn"},
                    Case{"mnist_bf16_hbm_batch2",
                         "--hw tpu-v1-hbm --workload mnist-cnn --dtype bf16 --batch 2"}),
    [](const testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

}  // namespace
