// The ONNX operator table (compiler/frontend/onnx/onnx_operators.hpp) is the one list of what the
// importer translates: the error for an unknown operator prints it, and docs/onnx.md documents
// every entry in its operator table.
#include "compiler/frontend/onnx/onnx_operators.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace npusim::onnx_frontend {
namespace {

TEST(OnnxOperators, SupportedListIsTheTableInOrder) {
  EXPECT_EQ(onnx_supported_operators(),
            "Conv, Gemm, MatMul, Add, Mul, Relu, Clip, Sigmoid, Tanh, HardSwish, HardSigmoid, "
            "Sqrt, Reciprocal, Pow (constant exponent), Neg, Where (constant condition), Expand, "
            "Gelu, Erf, "
            "Softmax, LayerNormalization, BatchNormalization, MaxPool, AveragePool, "
            "GlobalAveragePool, GlobalMaxPool, ReduceMean, ReduceSum, ReduceMax, Concat, Flatten, "
            "Reshape, Squeeze, Unsqueeze, Pad, Transpose, Identity, Dropout, Constant, Sub, Div, "
            "Slice, Gather (constant indices or token ids), Resize (nearest, linear, cubic), "
            "Split, Shape, Cast, ConvTranspose, LSTM, GRU, Tile (constant repeats), GatherElements "
            "(constant indices), GatherND (constant indices), Einsum (matrix products)");
  std::set<std::string> seen;
  for (const auto& t : onnx_translators()) {
    EXPECT_TRUE(seen.insert(t.op_type).second) << t.op_type << " is listed twice";
    EXPECT_EQ(find_onnx_translator(t.op_type), &t);
  }
  EXPECT_EQ(find_onnx_translator("TopK"), nullptr);
}

TEST(OnnxOperators, DocsDescribeEveryOperator) {
  std::ifstream in(std::string(NPUSIM_SOURCE_DIR) + "/docs/onnx.md");
  ASSERT_TRUE(in) << "docs/onnx.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto begin = doc.find("## Operators");
  ASSERT_NE(begin, std::string::npos);
  const std::string section = doc.substr(begin, doc.find("\n## ", begin + 1) - begin);
  for (const auto& t : onnx_translators()) {
    EXPECT_NE(section.find(std::string("`") + t.op_type), std::string::npos)
        << "docs/onnx.md's operator table does not mention " << t.op_type;
  }
}

}  // namespace
}  // namespace npusim::onnx_frontend
