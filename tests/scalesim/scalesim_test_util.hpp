// Helpers shared by the SCALE-Sim compatibility tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compat/scalesim/scalesim_config.hpp"

namespace npusim::scalesim::testing {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("npusim_scalesim_" + tag + "_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline Config make_config(Dataflow dataflow, int64_t rows, int64_t cols, int64_t sram_kb,
                          BandwidthMode mode = BandwidthMode::kCalc, int64_t bandwidth = 10) {
  Config c;
  c.run_name = "test";
  c.array_rows = rows;
  c.array_cols = cols;
  c.ifmap_sram_kb = c.filter_sram_kb = c.ofmap_sram_kb = sram_kb;
  c.dataflow = dataflow;
  c.bandwidth_mode = mode;
  c.user_bandwidth_words = bandwidth;
  return c;
}

// "a, b, c," -> {"a", "b", "c"}
inline std::vector<std::string> csv_items(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    out.push_back(item.substr(b));
  }
  return out;
}

}  // namespace npusim::scalesim::testing
