// The host section of a hardware description (docs/heterogeneous.md): defaults, the PCIe
// bandwidth from generation and lanes, every bad value named by its JSON pointer, the resolved
// description round trip, and the host units' timing rule.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/hw_config.hpp"
#include "models/host_unit.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

std::vector<std::string> errors_of(const std::string& host) {
  try {
    parse_hw_config(parse_json_text(R"({"schema_version": 1, "host": )" + host + "}", "hw.json"),
                    "hw.json");
  } catch (const UserErrors& e) {
    return e.messages();
  }
  return {};
}

HwConfig with_host(const std::string& host) {
  return parse_hw_config(json::parse(R"({"schema_version": 1, "host": )" + host + "}"), "hw.json");
}

TEST(HostConfig, AbsentMeansNoHost) {
  EXPECT_FALSE(parse_hw_config(json::parse(R"({"schema_version": 1})"), "hw.json").host);
  EXPECT_FALSE(to_json(load_hw_config("edge")).contains("host"));
}

TEST(HostConfig, EmptySectionTakesTheDocumentedDefaults) {
  const HwConfig c = with_host("{}");
  ASSERT_TRUE(c.host);
  EXPECT_EQ(c.host->gflops, 1300.0);
  EXPECT_EQ(c.host->memory_gbps, 51.0);
  EXPECT_EQ(c.host->link.kind, HostLinkKind::kPcie);
  EXPECT_EQ(c.host->link.pcie_generation, 3);
  EXPECT_EQ(c.host->link.pcie_lanes, 16);
  EXPECT_EQ(c.host->link.latency_ns, 1000.0);
  // PCIe 3.0: 8 GT/s per lane, 128b/130b: 16 lanes carry 8e9 * 16 * 128 / 130 / 8 bytes per s.
  EXPECT_NEAR(c.host->link.bandwidth_gbps, 15.7538, 1e-4);
}

TEST(HostConfig, PcieBandwidthDoublesPerGenerationAndScalesWithLanes) {
  EXPECT_NEAR(pcie_lane_gbps(3), 8.0 * 128 / 130 / 8, 1e-12);
  EXPECT_NEAR(pcie_lane_gbps(4), 2 * pcie_lane_gbps(3), 1e-12);
  EXPECT_NEAR(pcie_lane_gbps(5), 4 * pcie_lane_gbps(3), 1e-12);
  const HwConfig c = with_host(R"({"link": {"pcie": {"generation": 5, "lanes": 4}}})");
  EXPECT_NEAR(c.host->link.bandwidth_gbps, 4 * 32.0 * 128 / 130 / 8, 1e-9);
}

TEST(HostConfig, StatedBandwidthAndResolvedRoundTrip) {
  const HwConfig c = with_host(
      R"({"gflops": 200, "memory_gbps": 30, "link": {"bandwidth_gbps": 12.5, "latency_ns": 700}})");
  EXPECT_EQ(c.host->link.kind, HostLinkKind::kBandwidth);
  EXPECT_EQ(c.host->link.bandwidth_gbps, 12.5);
  for (const HwConfig& h : {c, with_host(R"({"link": {"pcie": {"generation": 4, "lanes": 8}}})")}) {
    const json resolved = to_json(h);
    EXPECT_EQ(to_json(parse_hw_config(resolved, "resolved")), resolved);
  }
  EXPECT_EQ(to_json(c)["host"]["link"]["latency_ns"], 700.0);
}

TEST(HostConfig, BadValuesNamedByPointer) {
  EXPECT_EQ(
      errors_of(R"({"gflops": 0, "cpu": 1, "link": {"pcie": {"generation": 2, "lanes": 32}}})"),
      (std::vector<std::string>{
          "hw.json: /host/gflops: expected a number in [0.001, 1000000000], got 0",
          "hw.json: /host/link/pcie/generation: expected an integer in [3, 5], got 2",
          "hw.json: /host/link/pcie/lanes: expected an integer in [1, 16], got 32",
          "hw.json: /host/cpu: unknown key \"cpu\" (known keys here: gflops, link, "
          "memory_gbps)",
      }));
  EXPECT_EQ(errors_of(R"({"link": {"pcie": {}, "bandwidth_gbps": 8}})"),
            (std::vector<std::string>{
                "hw.json: /host/link/bandwidth_gbps: expected either pcie or bandwidth_gbps, not "
                "both (pcie sets the bandwidth)",
            }));
  EXPECT_EQ(errors_of(R"({"link": {"latency_ns": -1, "bandwidth_gbps": 0}})"),
            (std::vector<std::string>{
                "hw.json: /host/link/latency_ns: expected a number in [0, 1000000000], got -1",
                "hw.json: /host/link/bandwidth_gbps: expected a number in [0.001, 1000000], got 0",
            }));
  EXPECT_FALSE(errors_of("3").empty());
}

// The timing rule: a crossing takes latency + bytes / bandwidth, a computation
// max(flops / GFLOP/s, bytes / GB/s), rounded up to whole cycles (GB/s = bytes per ns).
TEST(HostConfig, HostUnitCyclesFollowTheCostModel) {
  HostConfig h;
  h.gflops = 2.0;
  h.memory_gbps = 4.0;
  h.link.bandwidth_gbps = 8.0;
  h.link.latency_ns = 500.0;
  const double mhz = 1000.0;  // 1 ns per cycle
  // 4000 bytes over the link: 500 + 4000 / 8 = 1000 ns.
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kToHost, 4000, 0, {}}, h, mhz), 1000u);
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kToDevice, 4001, 0, {}}, h, mhz), 1001u);  // 1000.125
  // Compute bound: 10000 flops / 2 = 5000 ns against 400 bytes / 4 = 100 ns.
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kCompute, 400, 10000, {}}, h, mhz), 5000u);
  // Memory bound: 40000 bytes / 4 = 10000 ns against 100 flops / 2 = 50 ns.
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kCompute, 40000, 100, {}}, h, mhz), 10000u);
  // At 700 MHz: 1000 ns is 700 cycles exactly, 1000.125 ns rounds up to 701.
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kToHost, 4000, 0, {}}, h, 700.0), 700u);
  EXPECT_EQ(host_cycles(HostOp{HostPhase::kToHost, 4001, 0, {}}, h, 700.0), 701u);
}

}  // namespace
}  // namespace npusim
