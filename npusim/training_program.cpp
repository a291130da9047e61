#include "npusim/training_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
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

// A layer norm's fp32 gamma then beta, as the memory plan stores them.
std::vector<float> norm_parameters(const LayerParameters& p) {
  std::vector<float> v(p.weight);
  v.insert(v.end(), p.bias.begin(), p.bias.end());
  return v;
}

// The bf16 weights a use of `p` reads: [in][out] (or its transpose, or a flipped kernel), or
// diag(gamma) [n][n].
std::vector<uint16_t> use_weights(const LayerParameters& p, const WeightUse& use) {
  if (!use.diagonal) return bf16_weight_matrix(p, use);
  const size_t n = p.weight.size();
  std::vector<uint16_t> w(n * n, float_to_bf16_bits(0.0f));
  for (size_t i = 0; i < n; ++i) w[i * n + i] = float_to_bf16_bits(p.weight[i]);
  return w;
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

std::vector<uint16_t> bf16_weight_matrix(const LayerParameters& p, const WeightUse& use) {
  if (!use.flipped) return bf16_weight_matrix(p, use.transposed);
  NPUSIM_CHECK(p.conv && !use.transposed, "training: {} reads a flipped kernel of {}", use.layer,
               use.parameter);
  // Row (ki, kj, o), column ci: the forward kernel at (kh - 1 - ki, kw - 1 - kj, ci), column o.
  std::vector<uint16_t> w(size_t(p.in) * size_t(p.out));
  for (int ki = 0; ki < p.kh; ++ki) {
    for (int kj = 0; kj < p.kw; ++kj) {
      for (int o = 0; o < p.out; ++o) {
        for (int ci = 0; ci < p.cin; ++ci) {
          const int r = ((p.kh - 1 - ki) * p.kw + (p.kw - 1 - kj)) * p.cin + ci;
          w[((size_t(ki) * p.kw + kj) * p.out + o) * p.cin + ci] =
              float_to_bf16_bits(p.weight[p.index(r, o)]);
        }
      }
    }
  }
  return w;
}

std::vector<ParameterSlot> parameter_slots(const Compiled& c, const std::vector<WeightUse>& uses) {
  const Graph& g = c.graph;
  const Program& prog = c.program;
  // Records after the graph's layers are the all-reduce's (compiler/lowering/ring_allreduce.hpp).
  NPUSIM_CHECK(prog.layers.size() >= g.layers.size(), "training: {} layer records for {} layers",
               prog.layers.size(), g.layers.size());
  // The memory plan (compiler/lowering/memory_plan.cpp) gives every device layer with weights a
  // weights and a bias segment, and every layer norm one of its gamma and beta, in layer order,
  // before anything else. Layers whose weights are constants (a backward rule's sums, a layer
  // norm's recomputation) keep theirs.
  std::vector<ParameterSlot> slots;
  size_t segment = 0, parameter_uses = 0;
  for (const WeightUse& u : uses) parameter_uses += u.parameter.empty() ? 0 : 1;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    NPUSIM_CHECK(!l.on_host && l.kind != OpKind::kEmbedding,
                 "training: layer {} has parameters a training program does not write", l.name);
    if (!l.has_weights() && l.kind != OpKind::kLayerNorm) continue;
    const auto use = std::find_if(uses.begin(), uses.end(),
                                  [&](const WeightUse& u) { return u.layer == l.name; });
    const bool norm = l.kind == OpKind::kLayerNorm;
    NPUSIM_CHECK(use != uses.end() || norm, "training: layer {} has weights but no parameter",
                 l.name);
    NPUSIM_CHECK(segment + (norm ? 0 : 1) < prog.dram_init.size(),
                 "training: no segments for layer {}", l.name);
    if (use != uses.end() && !use->parameter.empty()) {
      slots.push_back({i, segment, norm ? segment : segment + 1, *use, norm});
    }
    segment += norm ? 1 : 2;
  }
  NPUSIM_CHECK(slots.size() == parameter_uses, "training: {} layers with weights for {} uses",
               slots.size(), parameter_uses);
  return slots;
}

TrainingProgram::TrainingProgram(Compiled compiled, std::vector<WeightUse> uses,
                                 const Parameters& initial, const std::string& constants_layer)
    : c_(std::move(compiled)), slots_(parameter_slots(c_, uses)), uses_(std::move(uses)) {
  const Graph& g = c_.graph;
  const Program& prog = c_.program;
  // The parameters' segments come first (parameter_slots).
  size_t segment = 0;
  for (const Layer& l : g.layers) {
    if (l.has_weights() || l.kind == OpKind::kLayerNorm) {
      segment += l.kind == OpKind::kLayerNorm ? 1 : 2;
    }
  }
  if (!constants_layer.empty()) {
    has_constants_ = true;
    for (constants_layer_ = 0; constants_layer_ < g.layers.size(); ++constants_layer_) {
      if (g.layers[constants_layer_].name == constants_layer) break;
    }
    NPUSIM_CHECK(constants_layer_ < g.layers.size(), "training: no layer {}", constants_layer);
    // Each core's first load of the layer reads the start of that core's constants block (a
    // data-parallel step has one block per core, docs/training.md).
    const LayerRecord& rec = prog.layers[constants_layer_];
    std::vector<std::optional<uint64_t>> addr(size_t(std::max(1, prog.cores)));
    for (uint32_t k = rec.first_instruction; k < rec.end_instruction; ++k) {
      const Instruction& in = prog.instructions[k];
      NPUSIM_CHECK(size_t(in.core) < addr.size(), "training: instruction {} on core {} of {}", k,
                   in.core, addr.size());
      if (in.unit == UnitKind::kDmaLoad && !addr[size_t(in.core)])
        addr[size_t(in.core)] = std::get<DmaOp>(in.op).dram_addr;
    }
    const Layer& l = g.layers[constants_layer_];
    for (const auto& a : addr) {
      NPUSIM_CHECK(a.has_value(), "training: layer {} loads nothing on a core", constants_layer);
      size_t seg = 0;
      while (seg < prog.dram_init.size() && prog.dram_init[seg].addr != *a) ++seg;
      NPUSIM_CHECK(seg < prog.dram_init.size() && seg >= segment,
                   "training: no constants segment at {} for layer {}", *a, constants_layer);
      constants_segments_.push_back(seg);
    }
    // The lowering built every core's block from image 0's constants.
    const size_t per_core = l.move_constants.size() / constants_segments_.size();
    NPUSIM_CHECK(per_core * constants_segments_.size() == l.move_constants.size(),
                 "training: layer {}: {} constants over {} cores", constants_layer,
                 l.move_constants.size(), constants_segments_.size());
    const std::vector<float> first(l.move_constants.begin(),
                                   l.move_constants.begin() + std::ptrdiff_t(per_core));
    for (size_t seg : constants_segments_) {
      NPUSIM_CHECK(same_bytes(prog.dram_init[seg], bf16_values(first)),
                   "training: layer {}: its constants segment does not hold its constants",
                   constants_layer);
    }
  }
  for (const Slot& s : slots_) {
    const Layer& l = g.layers[s.layer];
    const LayerParameters& p = initial.at(s.use.parameter);
    if (s.norm) {
      NPUSIM_CHECK(l.gamma == p.weight && l.beta == p.bias &&
                       same_bytes(prog.dram_init[s.weights_segment], norm_parameters(p)),
                   "training: layer norm {}: the program's segment {} does not hold its gamma and "
                   "beta",
                   l.name, s.weights_segment);
      continue;
    }
    NPUSIM_CHECK(l.bf16_weights == use_weights(p, s.use) &&
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
    if (s.norm) {
      l.gamma = lp.weight;
      l.beta = lp.bias;
      store(c_.program.dram_init[s.weights_segment], norm_parameters(lp));
      continue;
    }
    l.bf16_weights = use_weights(lp, s.use);
    store(c_.program.dram_init[s.weights_segment], l.bf16_weights);
    // An input gradient and a layer norm's dy x gamma have no bias.
    if (!s.use.transposed && !s.use.diagonal && !s.use.flipped) l.bias = lp.bias;
    store(c_.program.dram_init[s.bias_segment], l.bias);
  }
}

void TrainingProgram::write_constants(const std::vector<float>& values) {
  NPUSIM_CHECK(has_constants_, "training: the program has no constants layer");
  Layer& l = c_.graph.layers[constants_layer_];
  NPUSIM_CHECK(values.size() == l.move_constants.size(), "training: {} constants for {}",
               values.size(), l.move_constants.size());
  l.move_constants = values;
  const size_t per_core = values.size() / constants_segments_.size();
  for (size_t c = 0; c < constants_segments_.size(); ++c) {
    const auto from = values.begin() + std::ptrdiff_t(c * per_core);
    store(c_.program.dram_init[constants_segments_[c]],
          bf16_values(std::vector<float>(from, from + std::ptrdiff_t(per_core))));
  }
}

namespace {

const TensorPlacement& output_named(const Program& p, const std::string& name) {
  const auto it = std::find_if(p.outputs.begin(), p.outputs.end(),
                               [&](const TensorPlacement& t) { return t.name == name; });
  NPUSIM_CHECK(it != p.outputs.end(), "training: {} is no output of the program", name);
  return *it;
}

// The fp32 master of a matrix parameter as the chip keeps it: [in][out], the forward weights'
// layout.
std::vector<float> master_rows(const LayerParameters& p) {
  std::vector<float> w(size_t(p.in) * size_t(p.out));
  for (int r = 0; r < p.in; ++r) {
    for (int o = 0; o < p.out; ++o)
      w[size_t(r) * size_t(p.out) + size_t(o)] = p.weight[p.index(r, o)];
  }
  return w;
}

}  // namespace

std::vector<OptimizerParameter> optimizer_parameters(
    const Compiled& c, const std::vector<WeightUse>& uses,
    const std::vector<ParameterGradient>& gradients, const std::string& suffix,
    const Graph& forward) {
  const std::vector<ParameterSlot> slots = parameter_slots(c, uses);
  const Program& prog = c.program;
  std::vector<OptimizerParameter> out;
  for (const ParameterGradient& g : gradients) {
    OptimizerParameter q;
    q.name = g.layer;
    const TensorPlacement& t = output_named(prog, g.tensor + suffix);
    NPUSIM_CHECK(t.buffer == BufferId::kDram && t.element_bytes == 2 &&
                     (t.parts.empty() || t.parts.size() == 1),
                 "training: gradient {} is not one bf16 tensor off chip", t.name);
    q.gradient_addr = t.parts.empty() ? t.dram_addr : t.parts[0].dram_addr;
    q.in = g.in;
    q.out = g.out;
    q.has_bias = g.has_bias;
    q.outputs_first = g.outputs_first;
    const auto fl = std::find_if(forward.layers.begin(), forward.layers.end(),
                                 [&](const Layer& l) { return l.name == g.layer; });
    NPUSIM_CHECK(fl != forward.layers.end(), "training: no forward layer {}", g.layer);
    const Layer* f = &*fl;
    q.norm = f->kind == OpKind::kLayerNorm;
    if (f->kind == OpKind::kConv) {
      q.cin = f->input_channels_per_group();
      q.taps = f->kernel[1] * f->kernel[2];
    }
    bool forward_use = false;
    for (const ParameterSlot& s : slots) {
      if (s.use.parameter != g.layer) continue;
      const uint64_t w = prog.dram_init[s.weights_segment].addr;
      if (s.norm || (!s.use.transposed && !s.use.flipped && !s.use.diagonal)) {
        NPUSIM_CHECK(!forward_use, "training: parameter {} has two forward uses", g.layer);
        forward_use = true;
        q.weights_addr = w;
        if (q.has_bias && !s.norm) q.bias_addr = prog.dram_init[s.bias_segment].addr;
      } else if (s.use.transposed) {
        q.transposed.push_back(w);
      } else if (s.use.flipped) {
        q.flipped.push_back(w);
      } else {
        q.diagonal.push_back(w);
      }
    }
    NPUSIM_CHECK(forward_use, "training: parameter {} has no forward use", g.layer);
    out.push_back(std::move(q));
  }
  return out;
}

void TrainingProgram::add_chip_optimizer(const HwConfig& hw,
                                         const std::vector<ParameterGradient>& gradients,
                                         const std::string& suffix, const Graph& forward,
                                         const OptimizerConstants& k, const Parameters& initial) {
  optimized_ = optimizer_parameters(c_, uses_, gradients, suffix, forward);
  Program& prog = c_.program;
  plan_ = append_optimizer_update(prog, hw, optimized_, k, true);
  for (size_t i = 0; i < optimized_.size(); ++i) {
    if (optimized_[i].norm) continue;
    // The master's segment is the parameter's first new one.
    store(prog.dram_init[plan_.new_segments[i].at(0)], master_rows(initial.at(optimized_[i].name)));
  }
  first_optimizer_output_ = prog.outputs.size();
  for (size_t i = 0; i < plan_.written.size(); ++i) {
    TensorPlacement t;
    t.name = fmt::format("optimizer.written{}", i);
    t.dram_addr = plan_.written[i].addr;
    t.dims = {int(plan_.written[i].bytes)};
    t.element_bytes = 1;
    t.first_layer = t.last_layer = int(prog.layers.size()) - 1;
    prog.outputs.push_back(std::move(t));
  }
  chip_ = true;
}

void TrainingProgram::write_optimizer_scalars(float c1, float c2) {
  NPUSIM_CHECK(chip_, "training: the program has no optimizer on the chip");
  store(c_.program.dram_init[plan_.scalars_segment], std::vector<float>{c1, c2});
}

std::string TrainingProgram::finish_chip_step(const std::vector<std::vector<uint8_t>>& outputs,
                                              const Parameters& host) {
  NPUSIM_CHECK(chip_ && outputs.size() == first_optimizer_output_ + plan_.written.size(),
               "training: {} outputs of a program with {}", outputs.size(),
               first_optimizer_output_ + plan_.written.size());
  std::map<uint64_t, const std::vector<uint8_t>*> written;
  for (size_t i = 0; i < plan_.written.size(); ++i) {
    written[plan_.written[i].addr] = &outputs[first_optimizer_output_ + i];
  }
  auto bytes_at = [&](uint64_t addr) -> const std::vector<uint8_t>& {
    const auto it = written.find(addr);
    NPUSIM_CHECK(it != written.end(), "training: the optimizer wrote nothing at {:#x}", addr);
    return *it->second;
  };
  std::string first;
  auto compare = [&](const std::string& what, const std::vector<uint8_t>& chip, const auto& want,
                     size_t element_bytes) {
    if (!first.empty()) return;
    NPUSIM_CHECK(chip.size() == want.size() * element_bytes, "training: {}: {} bytes for {}", what,
                 chip.size(), want.size() * element_bytes);
    if (std::memcmp(chip.data(), want.data(), chip.size()) == 0) return;
    size_t e = 0;
    while (std::memcmp(chip.data() + e * element_bytes,
                       reinterpret_cast<const uint8_t*>(want.data()) + e * element_bytes,
                       element_bytes) == 0)
      ++e;
    first = fmt::format(
        "FUNCTIONAL MISMATCH in the optimizer's update on the chip: {} differs from the host's "
        "fp32 "
        "update at element {}. This is a bug in npusim.",
        what, e);
  };
  for (size_t i = 0; i < optimized_.size(); ++i) {
    const OptimizerParameter& q = optimized_[i];
    const LayerParameters& p = host.at(q.name);
    if (q.norm) {
      compare(q.name + "'s gamma and beta", bytes_at(q.weights_addr), norm_parameters(p), 4);
    } else {
      compare(q.name + "'s fp32 master weights", bytes_at(plan_.master_addr[i]), master_rows(p), 4);
      if (q.has_bias) compare(q.name + "'s bias", bytes_at(q.bias_addr), p.bias, 4);
    }
  }
  for (const Slot& s : slots_) {
    if (s.norm) continue;
    const uint64_t addr = c_.program.dram_init[s.weights_segment].addr;
    compare(
        fmt::format("the bf16 weights of {} ({})", c_.graph.layers[s.layer].name, s.use.parameter),
        bytes_at(addr), use_weights(host.at(s.use.parameter), s.use), 2);
  }
  // Carry the update's memory into the next run: each region is a whole segment.
  for (const OptimizerRegion& r : plan_.written) {
    auto seg = std::find_if(c_.program.dram_init.begin(), c_.program.dram_init.end(),
                            [&](const DramSegment& s) { return s.addr == r.addr; });
    NPUSIM_CHECK(seg != c_.program.dram_init.end() && seg->bytes.size() == r.bytes,
                 "training: the optimizer's region at {:#x} is no segment", r.addr);
    seg->bytes = bytes_at(r.addr);
  }
  return first;
}

}  // namespace npusim
