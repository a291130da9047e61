// `npusim membench` as a user runs it: the JSON report's keys (those of stats.json's `memory`
// section), and bad flags, presets and traces as exit code 2 with a message naming the flag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_npusim.hpp"

namespace {

TEST(MembenchCli, PrintsTheAgreedJsonKeys) {
  const CommandResult r =
      run_npusim("membench --memory hbm2 --channels 2 --pattern mix-2r1w --requests 3000 --seed 7");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& m = j["memory"];  // the keys of stats.json's "memory" (docs/stats.md)
  for (const char* key :
       {"bandwidth_gbps", "peak_bandwidth_gbps", "avg_read_latency_cycles",
        "p50_read_latency_cycles", "p99_read_latency_cycles", "row_hit_rate", "act_commands",
        "ref_commands", "energy_pj_per_bit", "memory_cycles", "config"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(j["pattern"], "mix-2r1w");
  EXPECT_EQ(j["memory_file"], "configs/memory/hbm2.json");
  EXPECT_EQ(j["requests"], 3000);
  EXPECT_EQ(m["preset"], "hbm2");
  EXPECT_EQ(m["read_bursts"].get<int>() + m["write_bursts"].get<int>(), 3000);
  EXPECT_EQ(m["peak_bandwidth_gbps"], 64.0);
  EXPECT_GT(m["bandwidth_gbps"].get<double>(), 0.0);
  EXPECT_LE(m["bandwidth_gbps"].get<double>(), 64.0);
  EXPECT_LE(m["p50_read_latency_cycles"].get<double>(), m["p99_read_latency_cycles"].get<double>());
  EXPECT_EQ(m["config"]["organization"]["channels"], 2);
  EXPECT_TRUE(j["host"].contains("requests_per_cpu_second"));
}

// Flags that change the model reach it: a closed page policy opens a row for every burst, no
// refresh issues no REF.
TEST(MembenchCli, PolicyFlagsReachTheModel) {
  const CommandResult r = run_npusim(
      "membench --memory hbm2 --pattern seq-read --requests 4000 --page-policy closed "
      "--no-refresh --mapping rorabgbachco");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json m = nlohmann::json::parse(r.out)["memory"];
  EXPECT_EQ(m["act_commands"], 4000);
  EXPECT_EQ(m["ref_commands"], 0);
  EXPECT_EQ(m["config"]["controller"]["page_policy"], "closed");
}

TEST(MembenchCli, BadInputIsExitCodeTwoNamingTheFlag) {
  const std::pair<const char*, const char*> cases[] = {
      {"--memory hbm2 --pattern zigzag", "--pattern: expected seq-read"},
      {"--memory nosuchpreset --pattern seq-read",
       "--memory 'nosuchpreset': no such file and no such preset (presets: "},
      {"--memory hbm2 --pattern seq-read --channels 3",
       "--channels: expected a power of two, got 3"},
      {"--memory hbm2 --pattern seq-read --requests x", "--requests"},
      {"--memory hbm2 --pattern seq-read --requests 0", "--requests: expected an integer in [1, "},
      {"--memory hbm2 --pattern seq-read --seed -1", "--seed: expected an integer in [0, "},
      {"--memory hbm2 --trace /nonexistent/trace.txt", "/nonexistent/trace.txt"},
      {"--memory hbm2 --trace t.txt --pattern seq-read", "--trace: give either"},
      {"--pattern seq-read", "--memory"},
      {"--memory hbm2 --pattern seq-read --bogus", "bogus"},
      {"--memory hbm2 --pattern seq-read --page-policy half", "--page-policy: expected open"},
      {"--memory hbm2 --pattern seq-read --mapping zz", "--mapping: "},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = run_npusim(std::string("membench ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

TEST(MembenchCli, HelpListsTheFlags) {
  const CommandResult r = run_npusim("membench --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--memory", "--channels", "--pattern", "--trace", "--requests", "--seed",
                           "--mapping", "--page-policy", "--no-refresh", "hbm2"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
