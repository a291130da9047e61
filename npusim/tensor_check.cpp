#include "npusim/tensor_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "compiler/reference/reference.hpp"
#include "compiler/reference/reference_bf16.hpp"
#include "compiler/reference/reference_bf16_layer.hpp"
#include "npusim/tensor_io.hpp"
#include "support/error.hpp"

namespace npusim {

TensorF bf16_input(const Graph& graph, const std::vector<uint8_t>& input) {
  if (!graph.input_ids) return decode_tensor(input, 2, 1.0f);
  std::vector<int32_t> ids(input.size() / 4);
  std::memcpy(ids.data(), input.data(), ids.size() * 4);
  return TensorF(ids.begin(), ids.end());
}

namespace {

void fail(const std::string& layer, FunctionalCheck& c) {
  if (c.first_mismatch.empty()) c.first_mismatch = layer;
  c.within_tolerance = false;
}

std::vector<float> decode_bf16(const uint8_t* bytes, uint64_t elements) {
  return decode_tensor(std::vector<uint8_t>(bytes, bytes + elements * 2), 2, 1.0f);
}

// int8: every tensor bit for bit against the whole-graph reference (errors in int8 steps).
void check_int8(const Graph& graph, const std::vector<uint8_t>& input,
                const SimulatedBytes& simulated, const std::map<std::string, Tensor8>* given,
                FunctionalCheck& c) {
  std::map<std::string, Tensor8> computed;
  if (given == nullptr) computed = run_reference(graph, Tensor8(input.begin(), input.end()));
  const std::map<std::string, Tensor8>& ref = given != nullptr ? *given : computed;
  for (const Layer& l : graph.layers) {
    const uint8_t* sim = simulated(l.output);
    if (sim == nullptr) continue;
    const Tensor8& r = ref.at(l.output);
    const uint64_t before = c.mismatches;
    for (uint64_t i = 0; i < r.size(); ++i) {
      const int err = std::abs(int(static_cast<int8_t>(sim[i])) - int(r[i]));
      c.max_abs_error = std::max(c.max_abs_error, double(err));
      c.mismatches += err != 0;
    }
    c.compared += r.size();
    c.tensors += 1;
    if (c.mismatches != before) fail(l.name, c);
  }
  c.bound_exceeded = c.mismatches;
}

// bf16, information: every kept tensor against the whole-graph reference, errors relative to the
// tensor's largest reference magnitude (they compound through the network).
void compare_whole_graph_bf16(const Graph& graph, const std::vector<uint8_t>& input,
                              const SimulatedBytes& simulated, FunctionalCheck& c) {
  const std::map<std::string, TensorF> ref = run_reference_bf16(graph, bf16_input(graph, input));
  for (const Layer& l : graph.layers) {
    const uint8_t* bytes = simulated(l.output);
    if (bytes == nullptr) continue;
    const TensorF& r = ref.at(l.output);
    const std::vector<float> sim = decode_bf16(bytes, r.size());
    double range = 0.0, worst = 0.0;
    for (uint64_t i = 0; i < r.size(); ++i) {
      range = std::max(range, std::fabs(double(r[i])));
      worst = std::max(worst, std::fabs(double(sim[i]) - double(r[i])));
      c.mismatches += sim[i] != r[i];
    }
    c.max_abs_error = std::max(c.max_abs_error, worst);
    c.max_relative_error = std::max(c.max_relative_error, range > 0.0 ? worst / range : worst);
  }
}

// bf16, the verdict: each layer against the reference applied to the simulated inputs of that
// layer. An input the run did not keep comes from the reference with its propagated bound.
void check_layers_bf16(const Graph& graph, const std::vector<uint8_t>& input,
                       const SimulatedBytes& simulated, FunctionalCheck& c) {
  struct Kept {
    TensorF value;
    std::vector<float> bound;  // empty: exact (the simulation's own values)
  };
  std::map<std::string, size_t> last_use;
  for (size_t i = 0; i < graph.layers.size(); ++i)
    for (const auto& name : graph.layers[i].inputs) last_use[name] = i;
  std::map<std::string, Kept> tensors;
  tensors[graph.input_name].value = bf16_input(graph, input);
  for (size_t li = 0; li < graph.layers.size(); ++li) {
    const Layer& l = graph.layers[li];
    std::vector<Bf16Operand> operands;
    for (const auto& name : l.inputs) {
      const Kept& k = tensors.at(name);
      operands.push_back({&k.value, k.bound.empty() ? nullptr : &k.bound});
    }
    Bf16LayerResult r = reference_bf16_layer(l, graph.batch, operands);
    const uint8_t* bytes = simulated(l.output);
    Kept out;
    if (bytes == nullptr) {
      out.bound.resize(r.bound.size());
      for (size_t i = 0; i < r.bound.size(); ++i)
        out.bound[i] = bf16_propagated_bound(r.value[i], r.bound[i]);
      out.value = std::move(r.value);
    } else {
      out.value = decode_bf16(bytes, r.value.size());
      uint64_t exceeded = 0;
      for (size_t i = 0; i < r.value.size(); ++i) {
        const double diff = std::fabs(double(out.value[i]) - double(r.value[i]));
        const double allowed = bf16_allowed_difference(r.value[i], out.value[i], r.bound[i]);
        if (allowed > 0.0) c.max_bound_ratio = std::max(c.max_bound_ratio, diff / allowed);
        // Equal values are within any bound, infinities included (float's lowest, a masked
        // score, rounds to bf16's -inf; inf - inf would be NaN).
        exceeded += out.value[i] != r.value[i] && !(diff <= allowed);
      }
      c.bound_exceeded += exceeded;
      c.compared += r.value.size();
      c.tensors += 1;
      if (exceeded > 0) fail(l.name, c);
    }
    if (last_use.count(l.output)) tensors[l.output] = std::move(out);
    for (const auto& name : l.inputs)
      if (last_use.at(name) == li) tensors.erase(name);
  }
}

}  // namespace

void check_tensors(const Graph& graph, const std::vector<uint8_t>& input,
                   const SimulatedBytes& simulated, FunctionalCheck& c,
                   const std::map<std::string, Tensor8>* reference) {
  c = FunctionalCheck{};
  c.checked = true;
  c.within_tolerance = true;
  if (graph.dtype == DataType::kInt8) {
    check_int8(graph, input, simulated, reference, c);
  } else {
    compare_whole_graph_bf16(graph, input, simulated, c);
    check_layers_bf16(graph, input, simulated, c);
  }
  c.bit_exact = c.mismatches == 0 && c.within_tolerance;
}

}  // namespace npusim
