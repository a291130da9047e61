#include "npusim/training_program.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <variant>

#include "arch/activation.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

template <typename T>
bool same_bytes(const DramSegment& s, const std::vector<T>& v) {
  return s.bytes.size() == v.size() * sizeof(T) &&
         (v.empty() || std::memcmp(s.bytes.data(), v.data(), s.bytes.size()) == 0);
}

template <typename T>
void store(DramSegment& s, const std::vector<T>& v) {
  NPUSIM_CHECK(s.bytes.size() == v.size() * sizeof(T), "training: a segment of {} bytes for {}",
               s.bytes.size(), v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(s.bytes.data(), v.data(), s.bytes.size());
}

std::vector<uint16_t> bf16_values(const std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = float_to_bf16_bits(v[i]);
  return b;
}

}  // namespace

std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, bool transposed) {
  std::vector<uint16_t> w(size_t(p.in) * size_t(p.out));
  for (int r = 0; r < p.in; ++r) {
    for (int o = 0; o < p.out; ++o) {
      const uint16_t bits = float_to_bf16_bits(p.weight[p.index(r, o)]);
      w[transposed ? size_t(o) * p.in + r : size_t(r) * p.out + o] = bits;
    }
  }
  return w;
}

TrainingProgram::TrainingProgram(Compiled compiled, std::vector<WeightUse> uses,
                                 const Parameters& initial, const std::string& constants_layer)
    : c_(std::move(compiled)) {
  const Graph& g = c_.graph;
  const Program& prog = c_.program;
  NPUSIM_CHECK(prog.layers.size() == g.layers.size(), "training: {} layer records for {} layers",
               prog.layers.size(), g.layers.size());
  // The memory plan (compiler/lowering/memory_plan.cpp) gives every device layer with weights a
  // weights and a bias segment, in layer order, before anything else.
  size_t segment = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    NPUSIM_CHECK(!l.on_host && l.kind != OpKind::kEmbedding && l.kind != OpKind::kLayerNorm,
                 "training: layer {} has parameters a training program does not write", l.name);
    if (!l.has_weights()) continue;
    const auto use = std::find_if(uses.begin(), uses.end(),
                                  [&](const WeightUse& u) { return u.layer == l.name; });
    NPUSIM_CHECK(use != uses.end(), "training: layer {} has weights but no parameter", l.name);
    NPUSIM_CHECK(segment + 1 < prog.dram_init.size(), "training: no segments for layer {}", l.name);
    slots_.push_back({i, segment, segment + 1, *use});
    segment += 2;
  }
  NPUSIM_CHECK(slots_.size() == uses.size(), "training: {} layers with weights for {} uses",
               slots_.size(), uses.size());
  if (!constants_layer.empty()) {
    has_constants_ = true;
    for (constants_layer_ = 0; constants_layer_ < g.layers.size(); ++constants_layer_) {
      if (g.layers[constants_layer_].name == constants_layer) break;
    }
    NPUSIM_CHECK(constants_layer_ < g.layers.size(), "training: no layer {}", constants_layer);
    // Its first load reads the start of its constants block.
    const LayerRecord& rec = prog.layers[constants_layer_];
    std::optional<uint64_t> addr;
    for (uint32_t k = rec.first_instruction; k < rec.end_instruction && !addr; ++k) {
      const Instruction& in = prog.instructions[k];
      if (in.unit == UnitKind::kDmaLoad) addr = std::get<DmaOp>(in.op).dram_addr;
    }
    NPUSIM_CHECK(addr.has_value(), "training: layer {} loads nothing", constants_layer);
    for (constants_segment_ = 0; constants_segment_ < prog.dram_init.size(); ++constants_segment_) {
      if (prog.dram_init[constants_segment_].addr == *addr) break;
    }
    NPUSIM_CHECK(constants_segment_ < prog.dram_init.size() && constants_segment_ >= segment,
                 "training: no constants segment at {} for layer {}", *addr, constants_layer);
    const Layer& l = g.layers[constants_layer_];
    NPUSIM_CHECK(same_bytes(prog.dram_init[constants_segment_], bf16_values(l.move_constants)),
                 "training: layer {}: its constants segment does not hold its constants",
                 constants_layer);
  }
  for (const Slot& s : slots_) {
    const Layer& l = g.layers[s.layer];
    const LayerParameters& p = initial.at(s.use.parameter);
    NPUSIM_CHECK(l.bf16_weights == bf16_weight_matrix(p, s.use.transposed) &&
                     same_bytes(prog.dram_init[s.weights_segment], l.bf16_weights) &&
                     same_bytes(prog.dram_init[s.bias_segment], l.bias),
                 "training: layer {}: the program's segments {} and {} do not hold the weights "
                 "of {}",
                 l.name, s.weights_segment, s.bias_segment, s.use.parameter);
  }
}

void TrainingProgram::write_parameters(const Parameters& p) {
  for (const Slot& s : slots_) {
    Layer& l = c_.graph.layers[s.layer];
    const LayerParameters& lp = p.at(s.use.parameter);
    l.bf16_weights = bf16_weight_matrix(lp, s.use.transposed);
    store(c_.program.dram_init[s.weights_segment], l.bf16_weights);
    if (!s.use.transposed) l.bias = lp.bias;  // an input gradient has no bias
    store(c_.program.dram_init[s.bias_segment], l.bias);
  }
}

void TrainingProgram::write_constants(const std::vector<float>& values) {
  NPUSIM_CHECK(has_constants_, "training: the program has no constants layer");
  Layer& l = c_.graph.layers[constants_layer_];
  NPUSIM_CHECK(values.size() == l.move_constants.size(), "training: {} constants for {}",
               values.size(), l.move_constants.size());
  l.move_constants = values;
  store(c_.program.dram_init[constants_segment_], bf16_values(values));
}

}  // namespace npusim
