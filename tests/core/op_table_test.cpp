// The operator table (compiler/ir/op_table.hpp) has one row per OpKind, in order, and what the
// rest of the compiler reads from it agrees with the layers it builds.
#include "compiler/ir/op_table.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/frontend/json_graph.hpp"
#include "support/error.hpp"

namespace npusim {
namespace {

TEST(OpTable, OneRowPerKindInOrder) {
  std::set<std::string> names;
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpInfo& row = op_table()[i];
    EXPECT_EQ(static_cast<size_t>(row.kind), i) << row.name;
    EXPECT_EQ(&op_info(row.kind), &row);
    EXPECT_EQ(std::string(to_string(row.kind)), row.name);
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_NE(row.infer_shape, nullptr) << row.name;
    EXPECT_GE(row.min_inputs, 1) << row.name;
    EXPECT_TRUE(row.max_inputs == 0 || row.max_inputs == row.min_inputs) << row.name;
    // Weights go with the matrix unit; only the matrix lowering runs on it.
    if (row.has_weights) {
      EXPECT_EQ(row.unit, OpUnit::kMatrix) << row.name;
    }
    EXPECT_EQ(row.unit == OpUnit::kMatrix, row.lowering == OpLowering::kMatrix) << row.name;
    EXPECT_EQ(row.unit == OpUnit::kNone,
              row.lowering == OpLowering::kFree || row.lowering == OpLowering::kFolded)
        << row.name;
  }
  EXPECT_EQ(op_table().size(), static_cast<size_t>(OpKind::kEmbedding) + 1);
}

// The JSON reader takes each op's arity from the table: two inputs for add, two or more for
// concat, the previous layer's output by default for one-input ops.
TEST(OpTable, JsonArityComesFromTheTable) {
  auto parse = [](const std::string& layers) {
    return parse_workload(nlohmann::json::parse(R"({"schema_version": 1, "input": {"shape": [4]},
                                                    "layers": )" +
                                                layers + "}"),
                          "net.json");
  };
  try {
    parse(R"([{"op": "add", "inputs": ["input"]}, {"op": "concat", "inputs": ["input"]}])");
    FAIL() << "expected errors";
  } catch (const UserErrors& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("net.json: /layers/0/inputs: expected a list of 2 tensor names"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("net.json: /layers/1/inputs: expected a list of 2 or more tensor names"),
              std::string::npos)
        << text;
  }
  const Graph g = parse(R"([{"op": "relu"}, {"op": "mul", "inputs": ["input", "layer0"]}])");
  EXPECT_EQ(g.layers[0].inputs, std::vector<std::string>{"input"});
  EXPECT_EQ(g.layers[1].out_shape, make_shape({4}));
}

}  // namespace
}  // namespace npusim
