// One `npusim run` whose stats, report and every saved tensor (--save-outputs with
// --save-intermediates) a test compares: the multi-core tests check that a split over cores gives
// every tensor of one core.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "run_npusim.hpp"

struct SavedRun {
  nlohmann::json stats;
  std::map<std::string, std::string> tensors;  // every layer's saved tensor, by file name
  std::string report;
};

// Runs `npusim run <args>` into a fresh directory named after `name`, reads what it wrote and
// removes the directory (a failed run is a test failure and an empty result).
inline SavedRun run_saving_tensors(const std::string& args, const std::string& name) {
  const auto dir = fresh_dir(name);
  const auto saved = dir / "tensors";
  CommandResult r = run_npusim("run " + args + " --out " + dir.string() + " --save-outputs " +
                               saved.string() + " --save-intermediates");
  SavedRun out;
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  if (r.exit_code == 0) {
    out.stats = nlohmann::json::parse(slurp(dir / "stats.json"));
    out.report = slurp(dir / "report.txt");
    for (const auto& e : std::filesystem::directory_iterator(saved)) {
      out.tensors[e.path().filename().string()] = slurp(e.path());
    }
  }
  std::filesystem::remove_all(dir);
  return out;
}
