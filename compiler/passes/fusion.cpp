// Fusion: batch norms folded into the preceding conv / dense, activations fused into the epilogue
// of the layer that feeds them; after quantization, residual adds and pools fused into the
// epilogue of the conv / dense / matmul that produces their operand.
#include "compiler/passes/fusion.hpp"

#include <algorithm>
#include <cmath>

#include "compiler/ir/op_table.hpp"
#include "compiler/passes/move_folding.hpp"
#include "compiler/passes/parameters.hpp"
#include "compiler/passes/tensor_index.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

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

bool has_pool_stage(const Layer& l) {
  return std::any_of(l.epilogue.begin(), l.epilogue.end(), [](const Layer& s) {
    return s.kind == OpKind::kMaxPool || s.kind == OpKind::kAvgPool;
  });
}

// A pool that tiles the conv output with whole windows, so each block of whole window rows pools
// on its own.
bool pool_tiles_exactly(const Layer& pool) {
  const TensorShape& in = pool.in_shapes[0];
  const bool no_pad =
      std::all_of(pool.pads_begin.begin(), pool.pads_begin.end(), [](int p) { return p == 0; }) &&
      std::all_of(pool.pads_end.begin(), pool.pads_end.end(), [](int p) { return p == 0; });
  return in.rank() == 3 && !pool.global_pool && no_pad && pool.kernel[0] == 1 &&
         pool.strides[0] == 1 && pool.kernel[1] == pool.strides[1] &&
         pool.kernel[2] == pool.strides[2] && in.h() % pool.strides[1] == 0 &&
         in.w() % pool.strides[2] == 0;
}

// The operands (0 or 1) of `stage` whose producer could take it into its epilogue, the later
// producer first.
std::vector<int> fusable_operands(const Graph& g, const TensorIndex& index, const Layer& stage) {
  std::vector<std::pair<int, int>> candidates;  // (producer index, operand)
  const bool add = stage.kind == OpKind::kAdd;
  if (add && (stage.in_shapes[0] != stage.in_shapes[1] || stage.inputs[0] == stage.inputs[1])) {
    return {};
  }
  // An operand with per-row scales (row_scales.hpp) needs a ratio per row, which the matrix
  // unit's epilogue does not have: such an add stays a vector-unit layer.
  if (add && (!stage.in_row_scales.empty() || !stage.out_row_scales.empty())) return {};
  if (!add && !pool_tiles_exactly(stage)) return {};
  for (int j = 0; j < (add ? 2 : 1); ++j) {
    const int p = index.producer(stage.inputs[j]);
    if (p < 0 || index.uses(stage.inputs[j]) != 1) continue;
    const Layer& host = g.layers[p];
    if (op_info(host.kind).lowering != OpLowering::kMatrix || has_pool_stage(host)) continue;
    if (!add && host.kind != OpKind::kConv) continue;
    candidates.push_back({p, j});
  }
  std::sort(candidates.rbegin(), candidates.rend());
  std::vector<int> operands;
  for (const auto& c : candidates) operands.push_back(c.second);
  return operands;
}

}  // namespace

void fuse_epilogues(Graph& g, const std::function<bool(const Layer&)>& fits) {
  NPUSIM_CHECK(g.quantized, "graph {}: epilogues fuse after quantization", g.name);
  TensorIndex index(g);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const OpKind kind = g.layers[i].kind;
    if (kind != OpKind::kAdd && kind != OpKind::kMaxPool && kind != OpKind::kAvgPool) continue;
    for (int j : fusable_operands(g, index, g.layers[i])) {
      Layer& stage_layer = g.layers[i];
      const int h = index.producer(stage_layer.inputs[j]);
      Layer& host = g.layers[size_t(h)];
      const size_t inputs_before = host.inputs.size();
      index.forget_reads(stage_layer, int(i));
      index.forget_reads(host, h);
      if (kind == OpKind::kAdd) {
        host.inputs.push_back(stage_layer.inputs[1 - j]);
        host.in_shapes.push_back(stage_layer.in_shapes[1 - j]);
        host.in_scales.push_back(stage_layer.in_scales[1 - j]);
        stage_layer.chain_operand = j;
        stage_layer.residual_input = static_cast<int>(inputs_before);
      }
      host.epilogue.push_back(std::move(stage_layer));
      if (!fits(host)) {  // undo: the stage stays a layer of its own
        stage_layer = std::move(host.epilogue.back());
        host.epilogue.pop_back();
        host.inputs.resize(inputs_before);
        host.in_shapes.resize(inputs_before);
        host.in_scales.resize(inputs_before);
        stage_layer.residual_input = -1;
        index.enter_reads(host, h);
        index.enter_reads(stage_layer, int(i));
        continue;
      }
      const Layer& stage = host.epilogue.back();
      host.fused.push_back(stage.name);
      host.fused.insert(host.fused.end(), stage.fused.begin(), stage.fused.end());
      index.drop_producer(host.output);
      host.output = stage.output;
      // The fused layer runs where the stage ran: every input of either is ready there. The
      // host's place is erased once all stages are fused (TensorIndex::erase_removed).
      g.layers[i] = std::move(host);
      index.enter_reads(g.layers[i], int(i));
      index.mark_removed(h);
      break;
    }
  }
  index.erase_removed(g);
}

void optimize_graph(Graph& g) {
  fold_moves(g);
  TensorIndex index(g);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    Layer& l = g.layers[i];
    const bool bn = l.kind == OpKind::kBatchNorm;
    const bool act = l.kind == OpKind::kActivation;
    if (!bn && !act) continue;
    const int pi = index.producer(l.inputs[0]);
    Layer* p = pi < 0 ? nullptr : &g.layers[size_t(pi)];
    if (p == nullptr || p->activation != Activation::kNone || index.uses(l.inputs[0]) != 1) {
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
    index.drop_producer(p->output);
    p->output = l.output;
    p->out_shape = l.out_shape;
    index.remove(l, int(i));
    index.set_producer(p->output, pi);
  }
  index.erase_removed(g);
}

}  // namespace npusim
