// Fusion: batch norms folded into the preceding conv / dense, activations fused into the epilogue
// of the layer that feeds them.
#include "compiler/passes/fusion.hpp"

#include <algorithm>
#include <cmath>

#include "compiler/ir/op_table.hpp"
#include "compiler/passes/move_folding.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

int readers_of(const Graph& g, const std::string& tensor) {
  int n = 0;
  for (const auto& l : g.layers)
    n += static_cast<int>(std::count(l.inputs.begin(), l.inputs.end(), tensor));
  n += static_cast<int>(std::count(g.outputs.begin(), g.outputs.end(), tensor));
  return n;
}

Layer* producer_of(Graph& g, const std::string& tensor) {
  for (auto& l : g.layers) {
    if (l.output == tensor) return &l;
  }
  return nullptr;
}

// y = gamma (x - mean) / sqrt(var + eps) + beta folded into the weights and bias of the producer.
void fold_batch_norm(Layer& conv, const Layer& bn) {
  const int n = conv.filters;
  std::vector<float> factor(n);
  for (int j = 0; j < n; ++j) {
    factor[j] = bn.gamma[j] / std::sqrt(bn.variance[j] + bn.epsilon);
    conv.bias[j] = (conv.bias[j] - bn.mean[j]) * factor[j] + bn.beta[j];
  }
  scale_weight_columns(conv, factor);
  conv.use_bias = true;
}

}  // namespace

void optimize_graph(Graph& g) {
  fold_moves(g);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    const bool bn = l.kind == OpKind::kBatchNorm;
    const bool act = l.kind == OpKind::kActivation;
    if (!bn && !act) continue;
    Layer* p = producer_of(g, l.inputs[0]);
    if (p == nullptr || p->activation != Activation::kNone || readers_of(g, l.inputs[0]) != 1) {
      NPUSIM_CHECK(!bn, "batch norm {} cannot be folded (finalize_graph checks this)", l.name);
      continue;
    }
    if (bn) {
      NPUSIM_CHECK(p->has_weights(), "batch norm {} follows {}", l.name, p->name);
      fold_batch_norm(*p, l);
    } else {
      if (!op_info(p->kind).fuses_activation || p->fixed_output_scale > 0.0f) continue;
      p->activation = l.activation;
      p->clip_min = l.clip_min;
      p->clip_max = l.clip_max;
      p->fixed_output_scale = l.fixed_output_scale;
    }
    p->fused.push_back(l.name);
    p->output = l.output;
    p->out_shape = l.out_shape;
    g.layers.erase(g.layers.begin() + static_cast<long>(i));
    --i;
  }
}

}  // namespace npusim
