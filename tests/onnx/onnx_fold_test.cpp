// The constant evaluator (compiler/frontend/onnx/onnx_fold.hpp): each case's expected values are
// what numpy / torch give for the same expression (written out by hand in the comment).
#include "compiler/frontend/onnx/onnx_fold.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_operators.hpp"

namespace npusim::onnx_frontend {
namespace {

Constant floats(std::vector<int64_t> dims, std::vector<float> v) {
  Constant c;
  c.dims = std::move(dims);
  c.values = std::move(v);
  return c;
}

Constant ints(std::vector<int64_t> dims, std::vector<int64_t> v) {
  Constant c;
  c.dims = std::move(dims);
  c.ints = std::move(v);
  c.is_int = true;
  return c;
}

onnx::NodeProto node(const std::string& op, int inputs, int outputs = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (int k = 0; k < inputs; ++k) n.add_input("in" + std::to_string(k));
  for (int k = 0; k < outputs; ++k) n.add_output("out" + std::to_string(k));
  return n;
}

void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

Constant fold(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  const ConstantFolder* f = find_constant_folder(n.op_type());
  EXPECT_NE(f, nullptr) << n.op_type();
  std::vector<Constant> out;
  const std::string problem = f->fold(n, 17, in, out);
  EXPECT_EQ(problem, "");
  return out.empty() ? Constant{} : out[0];
}

// torch.arange(0, 7, 2) = [0, 2, 4, 6]; np.arange(1.0, 2.0, 0.25) = [1, 1.25, 1.5, 1.75].
TEST(OnnxFold, Range) {
  const Constant a = ints({}, {0}), b = ints({}, {7}), c = ints({}, {2});
  const Constant r = fold(node("Range", 3), {&a, &b, &c});
  EXPECT_TRUE(r.is_int);
  EXPECT_EQ(r.dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(r.ints, (std::vector<int64_t>{0, 2, 4, 6}));
  const Constant fa = floats({}, {1}), fb = floats({}, {2}), fc = floats({}, {0.25f});
  EXPECT_EQ(fold(node("Range", 3), {&fa, &fb, &fc}).values,
            (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
}

// torch.tril(torch.ones(3, 3)) (Trilu upper=0) and torch.triu(x, diagonal=1).
TEST(OnnxFold, TriluCausalMask) {
  const Constant ones = floats({3, 3}, std::vector<float>(9, 1.0f));
  auto lower = node("Trilu", 1);
  set_int(lower, "upper", 0);
  EXPECT_EQ(fold(lower, {&ones}).values, (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  const Constant k = ints({}, {1});
  EXPECT_EQ(fold(node("Trilu", 2), {&ones, &k}).values,
            (std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
}

// np.where(mask == 0, -1e4, x) with mask [2, 1] broadcast against x [1, 3].
TEST(OnnxFold, EqualWhereBroadcast) {
  const Constant mask = ints({2, 1}, {0, 1}), zero = ints({}, {0});
  const Constant is_zero = fold(node("Equal", 2), {&mask, &zero});
  EXPECT_EQ(is_zero.ints, (std::vector<int64_t>{1, 0}));
  const Constant fill = floats({}, {-1e4f}), x = floats({1, 3}, {1, 2, 3});
  const Constant y = fold(node("Where", 3), {&is_zero, &fill, &x});
  EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y.values, (std::vector<float>{-1e4f, -1e4f, -1e4f, 1, 2, 3}));
}

// torch.outer(arange(3), [1, 10]) through Einsum "i,j->ij"; then np.cos of it.
TEST(OnnxFold, EinsumOuterAndCos) {
  auto n = node("Einsum", 2);
  auto* a = n.add_attribute();
  a->set_name("equation");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("i,j->ij");
  const Constant t = floats({3}, {0, 1, 2}), f = floats({2}, {1, 10});
  const Constant o = fold(n, {&t, &f});
  EXPECT_EQ(o.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(o.values, (std::vector<float>{0, 0, 1, 10, 2, 20}));
  const Constant c = fold(node("Cos", 1), {&o});
  EXPECT_FLOAT_EQ(c.values[3], std::cos(10.0f));
}

// np.broadcast_to([[1], [2]], (2, 3)); np.tile([1, 2], 2); ConstantOfShape([2, 2]) of int 7.
TEST(OnnxFold, ExpandTileConstantOfShape) {
  const Constant x = ints({2, 1}, {1, 2}), shape = ints({2}, {2, 3});
  EXPECT_EQ(fold(node("Expand", 2), {&x, &shape}).ints, (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
  const Constant v = ints({2}, {1, 2}), reps = ints({1}, {2});
  EXPECT_EQ(fold(node("Tile", 2), {&v, &reps}).ints, (std::vector<int64_t>{1, 2, 1, 2}));
  auto n = node("ConstantOfShape", 1);
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto_DataType_INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(7);
  const Constant dims = ints({2}, {2, 2});
  const Constant filled = fold(n, {&dims});
  EXPECT_TRUE(filled.is_int);
  EXPECT_EQ(filled.ints, (std::vector<int64_t>{7, 7, 7, 7}));
}

// Cast float -> BOOL -> FLOAT; integer Div truncates (ONNX), Mod follows the divisor's sign.
TEST(OnnxFold, CastDivMod) {
  auto to_bool = node("Cast", 1);
  set_int(to_bool, "to", onnx::TensorProto_DataType_BOOL);
  const Constant x = floats({3}, {0.0f, -2.5f, 0.5f});
  EXPECT_EQ(fold(to_bool, {&x}).ints, (std::vector<int64_t>{0, 1, 1}));
  const Constant a = ints({2}, {7, -7}), b = ints({}, {2});
  EXPECT_EQ(fold(node("Div", 2), {&a, &b}).ints, (std::vector<int64_t>{3, -3}));
  EXPECT_EQ(fold(node("Mod", 2), {&a, &b}).ints, (std::vector<int64_t>{1, 1}));
}

// x.pow(2).mean(-1, keepdim=True) of [[1, 2], [3, 4]] = [[2.5], [12.5]].
TEST(OnnxFold, ReduceMeanKeepdims) {
  const Constant x = floats({2, 2}, {1, 2, 3, 4}), two = floats({}, {2});
  const Constant sq = fold(node("Pow", 2), {&x, &two});
  auto n = node("ReduceMean", 1);
  auto* a = n.add_attribute();
  a->set_name("axes");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(-1);
  const Constant m = fold(n, {&sq});
  EXPECT_EQ(m.dims, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(m.values, (std::vector<float>{2.5f, 12.5f}));
}

// swin's attention mask: data[idx] = updates (ScatterND).
TEST(OnnxFold, ScatterND) {
  const Constant data = floats({4}, {0, 0, 0, 0}), idx = ints({2, 1}, {3, 1}),
                 upd = floats({2}, {5, 6});
  EXPECT_EQ(fold(node("ScatterND", 3), {&data, &idx, &upd}).values,
            (std::vector<float>{0, 6, 0, 5}));
}

TEST(OnnxFold, ProblemsAreMessages) {
  const ConstantFolder* f = find_constant_folder("Add");
  std::vector<Constant> out;
  const Constant a = floats({2}, {1, 2}), b = floats({3}, {1, 2, 3});
  EXPECT_EQ(f->fold(node("Add", 2), 17, {&a, &b}, out), "shapes [2] and [3] do not broadcast");
  EXPECT_EQ(find_constant_folder("TopK"), nullptr);
}

}  // namespace
}  // namespace npusim::onnx_frontend
