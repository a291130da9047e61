// Runs one network on one preset in both fidelities and checks that they agree: total cycles,
// every layer's cycles, and every saved tensor (outputs and intermediates) byte for byte; plus
// the functional check (int8 bit-exact against the reference, bf16 every layer within its bound).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "run_npusim.hpp"

// Runs `args` (a fast-fidelity run whose stats.json is `fast`) again with --fidelity pe: the same
// cycles and the same largest error against the reference.
inline void expect_pe_run_agrees(const std::string& args, const nlohmann::json& fast,
                                 const std::string& tag) {
  const std::filesystem::path dir = fresh_dir("pe-run-" + tag);
  const CommandResult pe = run_npusim(args + " --fidelity pe --out " + dir.string());
  ASSERT_EQ(pe.exit_code, 0) << pe.err;
  const nlohmann::json stats = nlohmann::json::parse(slurp(dir / "stats.json"));
  EXPECT_EQ(stats["total_cycles"], fast["total_cycles"]);
  EXPECT_EQ(stats["functional_check"]["max_abs_error"], fast["functional_check"]["max_abs_error"]);
  std::filesystem::remove_all(dir);
}

inline void expect_fidelities_agree(const std::string& hw, const std::string& network,
                                    const std::string& dtype) {
  namespace fs = std::filesystem;
  using nlohmann::json;
  const std::string tag = hw + "-" + network + "-" + dtype;
  const fs::path fast_dir = fresh_dir("fast-" + tag), pe_dir = fresh_dir("pe-" + tag);
  const std::string args = "run --hw " + hw + " --workload " + network + " --dtype " + dtype;
  for (const auto& [dir, fidelity] : {std::pair{fast_dir, "fast"}, std::pair{pe_dir, "pe"}}) {
    const CommandResult r =
        run_npusim(args + " --fidelity " + fidelity + " --out " + dir.string() +
                   " --save-outputs " + (dir / "values").string() + " --save-intermediates");
    ASSERT_EQ(r.exit_code, 0) << fidelity << ": " << r.err << r.out;
  }
  const json fast = json::parse(slurp(fast_dir / "stats.json"));
  const json pe = json::parse(slurp(pe_dir / "stats.json"));
  EXPECT_EQ(pe["fidelity"], "pe");
  EXPECT_EQ(fast["total_cycles"], pe["total_cycles"]);
  ASSERT_EQ(fast["layers"].size(), pe["layers"].size());
  for (size_t i = 0; i < fast["layers"].size(); ++i) {
    EXPECT_EQ(fast["layers"][i]["cycles"], pe["layers"][i]["cycles"]) << "layer " << i;
  }
  EXPECT_TRUE(fast["functional_check"]["within_tolerance"].get<bool>());
  if (dtype == "int8") {
    EXPECT_TRUE(fast["functional_check"]["bit_exact"].get<bool>());
  }
  int tensors = 0;
  for (const auto& entry : fs::directory_iterator(fast_dir / "values")) {
    const fs::path other = pe_dir / "values" / entry.path().filename();
    ASSERT_TRUE(fs::exists(other)) << other;
    EXPECT_EQ(slurp(entry.path()), slurp(other)) << entry.path().filename() << " differs";
    ++tensors;
  }
  // Every layer's output tensor was saved and compared.
  EXPECT_EQ(tensors, fast["functional_check"]["tensors"].get<int>());
  fs::remove_all(fast_dir);
  fs::remove_all(pe_dir);
}
