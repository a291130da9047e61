// The stats registry: nesting, tables, live counters, and refusing what would corrupt stats.json.
#include <gtest/gtest.h>

#include "support/error.hpp"
#include "support/stats.hpp"

namespace npusim::stats {
namespace {

TEST(StatsRegistry, NestsPathsAndReadsCountersWhenFormatted) {
  Registry reg;
  uint64_t bursts = 1;
  reg.counter("dma.bursts", "count", "bursts", bursts);
  reg.value("dma.name", "", "a name", "q0");
  reg.derived("total", "cycles", "derived", [&bursts] { return bursts * 10; });
  bursts = 7;  // counters are read when formatted, not when registered
  const nlohmann::json j = reg.to_json();
  EXPECT_EQ(j["dma"]["bursts"], 7);
  EXPECT_EQ(j["dma"]["name"], "q0");
  EXPECT_EQ(j["total"], 70);
  EXPECT_EQ(reg.descriptors().size(), 3u);
  EXPECT_EQ(reg.descriptors()[0].path, "dma.bursts");
}

TEST(StatsRegistry, TablesAreArraysOfRows) {
  Registry reg;
  reg.column("layers", 3, "index", "count", "row", [](size_t i) { return i; });
  reg.column("layers", 3, "twice", "count", "2 x row", [](size_t i) { return 2 * i; });
  const nlohmann::json j = reg.to_json();
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][2]["twice"], 4);
  EXPECT_EQ(flatten_paths(j), (std::vector<std::string>{"layers[].index", "layers[].twice"}));
  EXPECT_NE(reg.markdown().find("| `layers[].twice` | count | 2 x row |"), std::string::npos);
}

TEST(StatsRegistry, IncludePrefixesAnotherRegistry) {
  Registry inner, outer;
  inner.value("read_bursts", "count", "reads", 5);
  outer.include("memory", inner);
  EXPECT_EQ(outer.to_json()["memory"]["read_bursts"], 5);
  EXPECT_EQ(outer.descriptors()[0].path, "memory.read_bursts");
}

TEST(StatsRegistry, RefusesDuplicatesOverlapsUndocumentedAndRaggedTables) {
  Registry reg;
  reg.value("a.b", "", "x", 1);
  EXPECT_THROW(reg.value("a.b", "", "again", 2), InternalError);
  EXPECT_THROW(reg.value("a", "", "parent of a.b", 2), InternalError);
  EXPECT_THROW(reg.value("a.b.c", "", "child of a.b", 2), InternalError);
  reg.value("a.bc", "", "a sibling that a.b is a prefix of", 3);
  reg.value("ab", "", "not a parent either", 5);
  EXPECT_THROW(reg.value("a.bc.d", "", "child of a.bc", 2), InternalError);
  EXPECT_THROW(reg.value("c", "", "", 2), InternalError);
  reg.column("t", 2, "x", "", "x", [](size_t) { return 0; });
  EXPECT_THROW(reg.column("t", 3, "y", "", "y", [](size_t) { return 0; }), InternalError);
}

TEST(StatsRegistry, FlattenTreatsNamedPathsAsLeaves) {
  const nlohmann::json j = {{"m", {{"config", {{"deep", 1}}}, {"n", {1, 2}}}}};
  EXPECT_EQ(flatten_paths(j, {"m.config"}), (std::vector<std::string>{"m.config", "m.n"}));
}

}  // namespace
}  // namespace npusim::stats
