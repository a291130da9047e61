// The host CPU of a heterogeneous system end to end (docs/heterogeneous.md): a layer pinned to the
// host adds exactly its link transfers and host time, computed here from the hardware's host
// parameters; values stay bit-exact with a softmax or a pool on the host and with a layer that
// falls back because the accelerator cannot run it; bad `host` sections and --host-ops names exit
// with 2; stats.json, the resolved config and the trace show the host.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "run_npusim.hpp"

namespace {

using nlohmann::json;

// The host of the tests: slow enough that its figures are large and round at 1000 MHz (1 ns per
// cycle), on the simple memory model.
constexpr double kClockMhz = 1000, kGflops = 0.01, kMemoryGbps = 0.02, kLinkGbps = 0.005,
                 kLatencyNs = 300;

std::filesystem::path hw_file(const std::string& name, const std::string& host,
                              const std::string& extra = "") {
  const auto path = fresh_dir(name + ".json");
  std::ofstream(path) << R"({"schema_version": 1, "name": ")" << name
                      << R"(", "clock_mhz": 1000, "matrix_unit": {"rows": 16, "cols": 16},
    "memory": {"model": "simple", "bandwidth_gbps": 100, "latency_ns": 50})"
                      << extra << (host.empty() ? "" : R"(, "host": )" + host) << "}";
  return path;
}

std::string test_host() {
  const json host{{"gflops", kGflops},
                  {"memory_gbps", kMemoryGbps},
                  {"link", {{"bandwidth_gbps", kLinkGbps}, {"latency_ns", kLatencyNs}}}};
  return host.dump();
}

struct HostRun {
  CommandResult result;
  json stats;
  std::filesystem::path dir;
};

HostRun run(const std::string& args, const std::string& name) {
  HostRun r;
  r.dir = fresh_dir("host-" + name);
  r.result = run_npusim(args + " --out " + r.dir.string());
  if (r.result.exit_code == 0) r.stats = json::parse(slurp(r.dir / "stats.json"));
  return r;
}

const json& layer(const json& stats, const std::string& name) {
  for (const auto& l : stats["layers"]) {
    if (l["name"] == name) return l;
  }
  ADD_FAILURE() << "no layer " << name;
  static const json none;
  return none;
}

// Cycles of one crossing and of one computation by the timing rule of models/host_unit.hpp.
uint64_t link_cycles(uint64_t bytes) {
  return uint64_t(std::ceil((kLatencyNs + bytes / kLinkGbps) * kClockMhz * 1e-3 - 1e-9));
}
uint64_t compute_cycles(uint64_t flops, uint64_t bytes) {
  const double ns = std::max(flops / kGflops, bytes / kMemoryGbps);
  return uint64_t(std::ceil(ns * kClockMhz * 1e-3 - 1e-9));
}

TEST(Host, PinnedSoftmaxAddsExactlyItsLinkAndHostTime) {
  const auto hw = hw_file("host-a", test_host());
  const HostRun r =
      run("run --hw " + hw.string() + " --workload mnist-cnn --host-ops softmax", "a");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& probs = layer(r.stats, "probs");
  const json& fc2 = layer(r.stats, "fc2");
  ASSERT_TRUE(probs["on_host"].get<bool>());
  EXPECT_FALSE(fc2["on_host"].get<bool>());
  // Softmax over mnist-cnn's 10 classes, batch 1: 10 int8 bytes cross each way; the host counts
  // 5 operations per element (50) and reads and writes 20 bytes.
  const uint64_t link = link_cycles(10), compute = compute_cycles(50, 20);
  EXPECT_EQ(link, 2300u);     // 300 ns + 10 B / 0.005 GB/s
  EXPECT_EQ(compute, 5000u);  // 50 / 0.01 GFLOP/s, above 20 B / 0.02 GB/s
  EXPECT_EQ(probs["link_bytes"].get<uint64_t>(), 20u);
  EXPECT_EQ(probs["host_cycles"].get<uint64_t>(), compute);
  EXPECT_EQ(probs["link_cycles"].get<uint64_t>(), 2 * link);
  // The host's three steps follow each other from the cycle fc2's output is stored: nothing else
  // runs after them, so the run is longer by exactly those.
  EXPECT_EQ(probs["start_cycle"].get<uint64_t>(), fc2["end_cycle"].get<uint64_t>());
  EXPECT_EQ(probs["cycles"].get<uint64_t>(), 2 * link + compute);
  EXPECT_EQ(r.stats["total_cycles"].get<uint64_t>(),
            fc2["end_cycle"].get<uint64_t>() + 2 * link + compute);
  // The host's cycles are no core's: core 0 is busy only until fc2 is done.
  EXPECT_LE(r.stats["cores"][0]["busy_cycles"].get<uint64_t>(), fc2["end_cycle"].get<uint64_t>());
  EXPECT_EQ(r.stats["host_cpu"]["flops"].get<uint64_t>(), 50u);
  EXPECT_EQ(r.stats["host_cpu"]["layers"].get<uint64_t>(), 1u);
  EXPECT_EQ(r.stats["host_cpu"]["busy_cycles"].get<uint64_t>(), compute);
  EXPECT_EQ(r.stats["link"]["to_host_bytes"].get<uint64_t>(), 10u);
  EXPECT_EQ(r.stats["link"]["to_device_bytes"].get<uint64_t>(), 10u);
  EXPECT_EQ(r.stats["link"]["to_host_busy_cycles"].get<uint64_t>(), link);
  EXPECT_TRUE(r.stats["functional_check"]["bit_exact"].get<bool>());
  // The resolved description shows the host as given.
  const json resolved = json::parse(slurp(r.dir / "config.resolved.json"));
  EXPECT_EQ(resolved["host"]["link"]["bandwidth_gbps"].get<double>(), kLinkGbps);
  std::filesystem::remove_all(r.dir);

  // Timing only: the same cycles without computing a value.
  const HostRun t =
      run("run --hw " + hw.string() + " --workload mnist-cnn --host-ops softmax" + " --values off",
          "a-timing");
  ASSERT_EQ(t.result.exit_code, 0) << t.result.err;
  EXPECT_EQ(t.stats["total_cycles"], r.stats["total_cycles"]);
  std::filesystem::remove_all(t.dir);
  std::filesystem::remove(hw);
}

TEST(Host, PoolOnTheHostStaysBitExactAndUnfused) {
  const auto hw = hw_file("host-b", test_host());
  for (const std::string pin : {"pool1", "maxpool"}) {
    const HostRun r =
        run("run --hw " + hw.string() + " --workload mnist-cnn --host-ops " + pin, pin);
    ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
    const json& pool = layer(r.stats, "pool1");
    EXPECT_TRUE(pool["on_host"].get<bool>()) << pin;
    EXPECT_EQ(layer(r.stats, "conv1")["fused"], "") << pin;  // the pool is not in conv1's epilogue
    EXPECT_FALSE(layer(r.stats, "conv1")["on_host"].get<bool>());
    // 26 x 26 x 32 int8 in, 13 x 13 x 32 out.
    EXPECT_EQ(pool["link_bytes"].get<uint64_t>(), 26u * 26 * 32 + 13 * 13 * 32);
    EXPECT_TRUE(r.stats["functional_check"]["bit_exact"].get<bool>()) << pin;
    EXPECT_EQ(r.stats["functional_check"]["mismatches"].get<uint64_t>(), 0u);
    std::filesystem::remove_all(r.dir);
  }
  std::filesystem::remove(hw);
}

// A softmax row of 2048 values needs 4 x 2048 bytes of unified buffer to stream (two input and
// two output blocks); a 4 KiB buffer cannot hold it, so the vector unit cannot run the layer.
TEST(Host, LayerTheAcceleratorCannotRunFallsBackToTheHost) {
  const std::string small = R"(, "buffers": {"unified_buffer": {"capacity_bytes": 4096}})";
  const std::string workload = std::string(NPUSIM_E2E_DATA) + "/wide_softmax.json";
  const auto no_host = hw_file("host-c0", "", small);
  const HostRun without = run("run --hw " + no_host.string() + " --workload " + workload, "c0");
  EXPECT_EQ(without.result.exit_code, 2);
  EXPECT_NE(without.result.err.find("layer 'probs' does not fit"), std::string::npos)
      << without.result.err;

  const auto with = hw_file("host-c1", test_host(), small);
  const HostRun r = run("run --hw " + with.string() + " --workload " + workload, "c1");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& probs = layer(r.stats, "probs");
  EXPECT_TRUE(probs["on_host"].get<bool>());
  EXPECT_NE(probs["tiling"].get<std::string>().find("fallback"), std::string::npos);
  EXPECT_FALSE(layer(r.stats, "proj")["on_host"].get<bool>());
  // Batch 2 of 2048 int8 values each way; 5 operations per element.
  EXPECT_EQ(probs["link_bytes"].get<uint64_t>(), 2u * 2 * 2048);
  EXPECT_EQ(probs["host_cycles"].get<uint64_t>(), compute_cycles(5 * 4096, 2 * 4096));
  EXPECT_TRUE(r.stats["functional_check"]["bit_exact"].get<bool>());
  for (const auto& d : {without.dir, r.dir}) std::filesystem::remove_all(d);
  for (const auto& f : {no_host, with}) std::filesystem::remove(f);
}

// The accelerator's work that does not need a host layer's result runs while the host computes:
// host_overlap.json's conv reads only the input, so its matrix work does not wait for the softmax
// on the host; only the residual add fused into its epilogue needs the softmax's output.
TEST(Host, AcceleratorWorkOverlapsTheHost) {
  const auto hw = hw_file("host-g", test_host());
  const HostRun r = run("run --hw " + hw.string() + " --workload " + NPUSIM_E2E_DATA +
                            "/host_overlap.json --host-ops probs",
                        "g");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& probs = layer(r.stats, "probs");
  const json& conv = layer(r.stats, "conv");
  ASSERT_TRUE(probs["on_host"].get<bool>());
  EXPECT_EQ(conv["fused"], "sum");
  // 16 x 16 rows of 8 channels: 2048 bytes each way, 5 operations per element.
  EXPECT_EQ(probs["cycles"].get<uint64_t>(),
            2 * link_cycles(2048) + compute_cycles(5 * 2048, 2 * 2048));
  EXPECT_LT(conv["start_cycle"].get<uint64_t>(), probs["end_cycle"].get<uint64_t>());
  // Serialized, the conv's matrix work would follow the host's: the run would last at least
  // probs' end + the matrix units' busy cycles. It ends sooner.
  EXPECT_LT(r.stats["total_cycles"].get<uint64_t>(),
            probs["end_cycle"].get<uint64_t>() + conv["mxu_busy_cycles"].get<uint64_t>());
  EXPECT_TRUE(r.stats["functional_check"]["bit_exact"].get<bool>());
  std::filesystem::remove_all(r.dir);
  std::filesystem::remove(hw);
}

TEST(Host, TraceHasAProcessForTheHost) {
  const auto hw = hw_file("host-d", test_host());
  const auto dir = fresh_dir("host-trace");
  const CommandResult r =
      run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --host-ops softmax --trace " +
                 dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json trace = json::parse(slurp(dir / "trace.json"));
  int host_pid = -1;
  std::set<std::string> threads;
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "process_name" && e["args"]["name"] == "host") host_pid = e["pid"];
  }
  ASSERT_GE(host_pid, 0);
  int slices = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["pid"] != host_pid) continue;
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e.value("ph", "") == "X") ++slices;
  }
  EXPECT_EQ(threads, (std::set<std::string>{"host_cpu", "link_to_host", "link_to_device"}));
  EXPECT_EQ(slices, 3);  // TO_HOST, HOST_OP, TO_DEVICE of the softmax
  std::filesystem::remove_all(dir);
  std::filesystem::remove(hw);
}

TEST(Host, BadHostSectionAndHostOpsExitWithTwo) {
  const auto bad = hw_file("host-e", R"({"link": {"pcie": {"generation": 3, "lanes": 32}}})");
  CommandResult r = run_npusim("run --hw " + bad.string() + " --workload mnist-cnn");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/host/link/pcie/lanes: expected an integer in [1, 16], got 32"),
            std::string::npos)
      << r.err;

  const auto hw = hw_file("host-f", test_host());
  r = run_npusim("compile --hw " + hw.string() + " --workload mnist-cnn --host-ops nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--host-ops nosuch: no layer of 'mnist-cnn' is named so"), std::string::npos)
      << r.err;
  r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --host-ops softmax,");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--host-ops 'softmax,': an empty name"), std::string::npos) << r.err;
  r = run_npusim("run --hw " + hw.string() + " --workload mnist-cnn --host-ops flatten");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("runs no instructions"), std::string::npos) << r.err;
  r = run_npusim("run --hw tpu-v1-hbm --workload mnist-cnn --host-ops softmax");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("describes no host"), std::string::npos) << r.err;
  std::filesystem::remove(bad);
  std::filesystem::remove(hw);
}

}  // namespace
