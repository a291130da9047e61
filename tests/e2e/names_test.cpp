// Names are bytes (issue 21 item 6, docs/reliability.md "Names are bytes"): a model whose names are
// not UTF-8, or hold control characters, runs and every output is written with the names escaped;
// and a run whose output cannot be written keeps the others (sim/output_attempts.hpp).
//
// names_not_utf8.onnx: a Conv + Relu whose node, tensor and graph names end in the bytes FF FE
// (written by python3-onnx with the names "...QQ", the bytes then replaced in the file; protobuf
// does not check a string field's UTF-8 when it reads). Before the fix `npusim run` simulated it,
// then the stats writer threw (exit 1, "internal error: [json.exception.type_error.316] invalid
// UTF-8 byte") and stats.json was never written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_npusim.hpp"

namespace {

namespace fs = std::filesystem;
const std::string kData = NPUSIM_E2E_DATA;

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

TEST(Names, NotUtf8OnnxRunsWithNamesEscapedInEveryOutput) {
  const auto dir = fresh_dir("names-not-utf8");
  CommandResult r =
      run_npusim("run --hw edge --workload " + kData + "/names_not_utf8.onnx --format csv --out " +
                 dir.string() + " --trace " + (dir / "trace").string() + " --html " +
                 (dir / "report.html").string() + " --vcd " + (dir / "waves.vcd").string() +
                 " --save-outputs " + (dir / "outputs").string() + " --save-intermediates");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json stats = read_json(dir / "stats.json");
  EXPECT_EQ(stats["layers"][0]["name"], "conv\\xFF\\xFE");
  EXPECT_TRUE(stats["functional_check"]["bit_exact"].get<bool>());
  // The trace is valid JSON with the escaped layer name.
  const nlohmann::json trace = read_json(dir / "trace" / "trace.json");
  EXPECT_NE(trace.dump().find("conv\\\\xFF\\\\xFE"), std::string::npos);
  EXPECT_NE(slurp(dir / "report.txt").find("conv\\xFF\\xFE"), std::string::npos);
  EXPECT_NE(r.out.find("\nconv\\xFF\\xFE,"), std::string::npos) << r.out;  // the CSV on stdout
  EXPECT_NE(slurp(dir / "layers.csv").find("\nconv\\xFF\\xFE,"), std::string::npos);
  EXPECT_NE(slurp(dir / "report.html").find("conv\\\\xFF\\\\xFE"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "waves.vcd"));
  // The output "out\xFF\xFE": bytes other than letters, digits, '.', '-', '_' become '_'.
  EXPECT_TRUE(fs::exists(dir / "outputs" / "out__.npy"));
  fs::remove_all(dir);
}

TEST(Names, ControlCharactersStayOnTheirLine) {
  const auto dir = fresh_dir("names-control");
  CommandResult r =
      run_npusim("run --hw edge --workload " + kData + "/names_control_chars.json --layers --out " +
                 dir.string() + " --save-outputs " + (dir / "outputs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string report = slurp(dir / "report.txt");
  EXPECT_EQ(report.rfind("npusim: names\\x0A\\x00\\x1B[31m on edge", 0), 0u) << report;
  EXPECT_NE(report.find("\n  conv\\x0A1,\"x\" "), std::string::npos) << report;
  for (char c : report) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << int(c);
  // stats.json keeps the names as they are (JSON escapes control characters itself).
  const nlohmann::json stats = read_json(dir / "stats.json");
  EXPECT_EQ(stats["workload"], std::string("names\n\0\x1b[31m", 12));
  // Two outputs, "a/b" and "a_b", would both be a_b.npy: neither overwrites the other.
  EXPECT_TRUE(fs::exists(dir / "outputs" / "a_b.npy"));
  EXPECT_TRUE(fs::exists(dir / "outputs" / "a_b~2.npy"));
  EXPECT_NE(r.err.find("--save-outputs: a_b~2.npy <- a/b"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// A JSON graph cannot hold bytes outside UTF-8: the JSON reader refuses them, naming the place.
TEST(Names, NotUtf8JsonGraphIsRefused) {
  const auto dir = fresh_dir("names-json");
  fs::create_directories(dir);
  std::string text = slurp(kData + "/names_control_chars.json");
  text.replace(text.find("fc "), 3, "fc\xFF");
  std::ofstream(dir / "g.json", std::ios::binary) << text;
  CommandResult r = run_npusim("run --hw edge --workload " + (dir / "g.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((dir / "g.json").string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("malformed JSON"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// One output that cannot be written (report.txt is a directory here) costs that file only: the
// others are written, the failure is named, and the exit code is 2.
TEST(Names, AnOutputThatCannotBeWrittenKeepsTheOthers) {
  const auto dir = fresh_dir("writer-failure");
  fs::create_directories(dir / "report.txt" / "occupied");
  CommandResult r =
      run_npusim("run --hw edge --workload mnist-cnn --out " + dir.string() + " --trace " +
                 (dir / "trace").string() + " --save-outputs " + (dir / "outputs").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("npusim: error: " + (dir / "report.txt").string() + ": not written: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("could not be written, every other output was"), std::string::npos);
  EXPECT_NE(r.out.find("total cycles"), std::string::npos);  // the report on stdout
  EXPECT_EQ(read_json(dir / "stats.json")["workload"], "mnist-cnn");
  EXPECT_TRUE(fs::exists(dir / "config.resolved.json"));
  EXPECT_TRUE(fs::exists(dir / "trace" / "trace.json"));
  EXPECT_TRUE(fs::exists(dir / "outputs" / "probs.npy"));
  fs::remove_all(dir);
}

}  // namespace
