// The bf16 check (npusim/tensor_check.hpp, compiler/reference/reference_bf16_layer.hpp): a
// simulation that sums in another fp32 order passes layer by layer, one that keeps its partial sums
// in bf16 or moves a value by one bf16 step where the arithmetic is the same fails, and a tensor
// the run did not keep is bridged by its propagated bound.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "arch/activation.hpp"
#include "compiler/frontend/json_graph.hpp"
#include "compiler/passes/fusion.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/quantize.hpp"
#include "compiler/reference/reference_bf16_layer.hpp"
#include "compiler/reference/reference_loops.hpp"
#include "npusim/tensor_check.hpp"
#include "npusim/tensor_io.hpp"
#include "support/json_reader.hpp"

namespace npusim {
namespace {

// A conv with 576 products per output, pooling, a dense layer with 1152, an add and a softmax.
Graph network() {
  Graph g = parse_workload(json::parse(R"({"schema_version": 1, "input": {"shape": [6, 6, 64]},
    "layers": [{"name": "conv", "op": "conv2d", "filters": 32, "kernel": [3, 3],
                "padding": "same", "activation": "relu"},
               {"name": "pool", "op": "avgpool", "pool": [2, 2], "strides": [2, 2]},
               {"name": "flat", "op": "flatten"},
               {"name": "fc", "op": "dense", "units": 64, "activation": "gelu"},
               {"name": "fc2", "op": "dense", "units": 64},
               {"name": "sum", "op": "add", "inputs": ["fc", "fc2"]},
               {"name": "probs", "op": "softmax"}]})"),
                           "test");
  g.batch = 2;
  g.dtype = DataType::kBf16;
  materialize_parameters(g, 5);
  optimize_graph(g);
  prepare_bf16(g);
  return g;
}

std::vector<uint8_t> bytes_of(const TensorF& t) {
  std::vector<uint8_t> b(t.size() * 2);
  for (size_t i = 0; i < t.size(); ++i) {
    const uint16_t v = float_to_bf16_bits(t[i]);
    b[2 * i] = uint8_t(v & 0xff);
    b[2 * i + 1] = uint8_t(v >> 8);
  }
  return b;
}

// A stand-in for the simulator: matrix layers sum their products with `sum`, every other layer
// runs the reference's operations; each layer reads the previous layers' results.
using Sum = std::function<float(const std::vector<float>& products)>;

std::map<std::string, std::vector<uint8_t>> simulate(const Graph& g,
                                                     const std::vector<uint8_t>& input,
                                                     const Sum& sum) {
  std::map<std::string, TensorF> t{{g.input_name, decode_tensor(input, 2, 1.0f)}};
  std::map<std::string, std::vector<uint8_t>> out;
  for (const Layer& l : g.layers) {
    std::vector<const TensorF*> in;
    for (const auto& name : l.inputs) in.push_back(&t.at(name));
    TensorF y;
    if (l.kind == OpKind::kDense) {
      const int K = l.in_shapes[0].last(), N = l.out_shape.last();
      const TensorF& a = *in[0];
      const uint64_t rows = a.size() / K;
      y.resize(rows * N);
      for (uint64_t r = 0; r < rows; ++r)
        for (int n = 0; n < N; ++n) {
          std::vector<float> p(K);
          for (int k = 0; k < K; ++k)
            p[k] = a[r * K + k] * bf16_bits_to_float(l.bf16_weights[size_t(k) * N + n]);
          y[r * N + n] = round_to_bf16(
              apply_activation(l.activation, sum(p) + l.bias[n], l.clip_min, l.clip_max));
        }
    } else {
      y = reference_bf16_op(l, g.batch, in);
    }
    out[l.output] = bytes_of(y);
    t[l.output] = std::move(y);
  }
  return out;
}

// fp32, last product first.
float reverse(const std::vector<float>& p) {
  float s = 0.0f;
  for (size_t i = p.size(); i-- > 0;) s += p[i];
  return s;
}

FunctionalCheck check(const Graph& g, const std::vector<uint8_t>& input,
                      const std::map<std::string, std::vector<uint8_t>>& sim,
                      const std::string& missing = "") {
  FunctionalCheck c;
  check_tensors(
      g, input,
      [&](const std::string& name) -> const uint8_t* {
        return name == missing ? nullptr : sim.at(name).data();
      },
      c);
  return c;
}

// fp32 sums in reverse order, and the exact sum rounded once: both correct, both pass.
TEST(Bf16Check, AnyFp32SummationOrderPasses) {
  const Graph g = network();
  const std::vector<uint8_t> input = random_input(g, 9).bytes;
  const Sum exact = [](const std::vector<float>& p) {
    double s = 0.0;
    for (float x : p) s += x;
    return float(s);
  };
  for (const Sum& sum : {Sum(reverse), exact}) {
    const FunctionalCheck c = check(g, input, simulate(g, input, sum));
    EXPECT_TRUE(c.within_tolerance) << c.first_mismatch;
    EXPECT_EQ(c.bound_exceeded, 0u);
    EXPECT_EQ(c.tensors, g.layers.size());
    EXPECT_LE(c.max_bound_ratio, 1.0);
  }
}

// An accumulator that keeps its partial sums in bf16 (rounded after every 16 products) is a bug
// the check names, from the first layer it happens in.
TEST(Bf16Check, PartialSumsInBf16Fail) {
  const Graph g = network();
  const std::vector<uint8_t> input = random_input(g, 9).bytes;
  const Sum bf16_partials = [](const std::vector<float>& p) {
    float s = 0.0f;
    for (size_t i = 0; i < p.size(); ++i) {
      s += p[i];
      if (i % 16 == 15) s = round_to_bf16(s);
    }
    return s;
  };
  const FunctionalCheck c = check(g, input, simulate(g, input, bf16_partials));
  EXPECT_FALSE(c.within_tolerance);
  EXPECT_GT(c.bound_exceeded, 0u);
  EXPECT_EQ(c.first_mismatch, "fc");
}

// Softmax, pooling, add: the same operations as the reference, so one bf16 step is a mismatch.
TEST(Bf16Check, OneStepOffWhereTheArithmeticIsTheSameFails) {
  const Graph g = network();
  const std::vector<uint8_t> input = random_input(g, 9).bytes;
  for (const char* layer : {"pool", "sum", "probs"}) {
    auto sim = simulate(g, input, reverse);
    sim.at(layer)[6] ^= 1;  // the last mantissa bit of value 3
    const FunctionalCheck c = check(g, input, sim);
    // That value, and what the next layer made of the right one (it reads the wrong one).
    EXPECT_GE(c.bound_exceeded, 1u) << layer;
    EXPECT_EQ(c.first_mismatch, layer);
  }
}

// A tensor the run did not keep (a fused intermediate) comes from the reference with its bound;
// the layers after it still pass, and still catch a wrong value.
TEST(Bf16Check, ATensorNotKeptIsBridgedByItsBound) {
  const Graph g = network();
  const std::vector<uint8_t> input = random_input(g, 9).bytes;
  auto sim = simulate(g, input, reverse);
  for (const char* missing : {"conv", "pool", "fc", "sum"}) {
    const FunctionalCheck c = check(g, input, sim, missing);
    EXPECT_TRUE(c.within_tolerance) << missing << ": " << c.first_mismatch;
    EXPECT_EQ(c.tensors, g.layers.size() - 1);
  }
  // fc2 reads fc, bridged by its bound: ten steps off is still wrong.
  TensorF fc2 = decode_tensor(sim.at("fc2"), 2, 1.0f);
  fc2[0] = fc2[0] * (1.0f + 10 * 0x1p-7f) + 0.25f;
  sim.at("fc2") = bytes_of(fc2);
  const FunctionalCheck c = check(g, input, sim, "fc");
  EXPECT_EQ(c.first_mismatch, "fc2");
}

}  // namespace
}  // namespace npusim
