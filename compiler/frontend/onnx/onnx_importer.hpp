// The state of one ONNX import (compiler/frontend/onnx_import.hpp): the model, the constants and
// run-time values seen so far, the IR graph being built and the problems found. The operator
// translators (onnx_operators.hpp lists them) are its import_* members, one file per family.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_layout.hpp"
#include "compiler/frontend/onnx/onnx_movement.hpp"
#include "compiler/frontend/onnx/onnx_tensor.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/ir/shape_inference.hpp"

namespace npusim::onnx_frontend {

constexpr int kMinOpset = 11;
constexpr int kMaxOpset = 20;

class OnnxImporter {
 public:
  // `whole_tensor`: docs/onnx.md "Rank mapping" (always on for a rank-1 input).
  // The unrolled LSTM / GRU nodes are appended to `model` while importing and removed at the end.
  OnnxImporter(onnx::ModelProto& model, const std::string& path, std::optional<int> batch,
               bool whole_tensor)
      : model_(model),
        g_(model.graph()),
        nodes_(*model.mutable_graph()),
        path_(path),
        batch_override_(batch),
        diag_(path),
        whole_tensor_(whole_tensor) {}

  Graph run();
  // After a failed batched run: some operator needed the batch axis (batch_axis_needed).
  bool needs_whole_tensor() const { return needs_whole_tensor_; }

  // The translators of the operator table (onnx_operators.cpp), one file per family.
  void import_conv(int i);
  void import_conv_transpose(int i);  // onnx_conv_transpose.cpp
  void import_pool(int i, OpKind kind);
  void import_global_pool(int i, OpKind kind);
  enum class Reduce { kMean, kSum, kMax };
  void import_reduce(int i, Reduce kind);  // onnx_reduce.cpp
  void import_pad(int i);                  // onnx_movement.cpp
  void import_gemm(int i);
  void import_matmul(int i);
  void import_transpose(int i);  // onnx_movement.cpp
  void import_binary(int i, OpKind kind);
  void import_sub_div(int i, char op);  // '-' or '/'
  void import_sub_tensors(int i);
  void import_matmul_constant(int i, const Value& a, const Constant& b);
  void import_activation(int i, Activation act);
  void import_gelu(int i);
  void import_erf(int i);
  void import_clip(int i);
  void import_hard_sigmoid(int i);
  void import_pow(int i);
  void import_neg(int i);
  void import_where(int i);
  void import_expand(int i);
  void import_softmax(int i);
  // RMSNorm as exporters write it (onnx_rewrites.cpp): x * 1 / sqrt(mean(x^2 over the last axis)
  // + epsilon), times a constant weight when one follows.
  struct RmsNormPattern {
    std::string x, scale;  // scale: the weight's constant, empty if none
    float epsilon = 0.0f;
  };
  void import_layer_norm(int i);
  void import_rms_norm(int i, const RmsNormPattern& p);
  void add_norm(int i, const Value* x, const Constant* scale, const Constant* bias, int64_t axis,
                float epsilon, bool rms);
  void import_batch_norm(int i);
  void import_concat(int i);
  void import_flatten(int i);
  void import_reshape(int i);
  void import_squeeze(int i, bool unsqueeze);
  void import_identity(int i);
  void import_constant_node(int i);
  // Data movement (onnx_movement.cpp, onnx_movement_ops.cpp).
  void import_slice(int i);
  void import_gather(int i);
  void import_resize(int i);
  void import_split(int i);
  void import_shape(int i);
  void import_cast(int i);
  void import_recurrent(int i);  // LSTM, GRU (onnx_recurrent.cpp)
  void import_tile(int i);       // onnx_index_ops.cpp
  void import_gather_elements(int i);
  void import_gather_nd(int i);
  void import_einsum(int i);  // onnx_einsum.cpp

 private:
  using Node = onnx::NodeProto;

  std::string where(int i) const;
  void fail(int i, const std::string& message);
  void check_opset();
  void read_initializers();
  void read_input();
  void count_consumers();
  void check_token_ids(const std::string& name, const std::string& where, const std::string& type);
  void import_token_ids_reshape(int i);
  void import_embedding(int i);  // onnx_movement_ops.cpp
  void find_gelu_patterns();
  void find_rms_norm_patterns();
  void import_node(int i);
  // Evaluates a node whose inputs are all constants (onnx_fold.hpp); false when it is not one.
  bool fold_node(int i);
  void finish_outputs();

  // Operand access: an activation, a constant, or an error (returns null and records it).
  const Value* activation(int i, int input_index);
  const Constant* constant(int i, int input_index, const std::string& role);
  const Constant* optional_constant(int i, int input_index, const std::string& role);
  bool is_constant(const std::string& name) const { return constants_.count(name) != 0; }
  bool is_activation(const std::string& name) const { return values_.count(name) != 0; }

  Layer& add_layer(int i, OpKind kind, std::vector<std::string> inputs, const std::string& output);
  void set_value(const std::string& name, Value v);
  // The node passes its input on under a new name: its own read is not a read of the IR tensor.
  void alias(int i, const Value& v);
  // Readers of an IR tensor: nodes and graph outputs reading any ONNX name that refers to it.
  int ir_readers(const std::string& ir_name);
  // Outputs beyond the first must be unused (e.g. MaxPool's indices).
  bool extra_outputs_unused(int i);
  // An operator must work along the batch axis of a batched value: reports `message` and asks
  // import_onnx to retry in whole-tensor mode (docs/onnx.md "Rank mapping").
  void batch_axis_needed(int i, const std::string& message);

  // onnx_forms.cpp: the batched (batch 1, feature maps channels last) and whole forms of a value
  // in the whole-tensor mode (docs/onnx.md "Rank mapping").
  bool choose_form(int i);
  bool elementwise_in_depth(int i, const std::vector<std::string>& operands);
  // `batch_in_depth_allowed`: a batch above 1 becomes Value::batch_in_depth (Conv, the pools).
  bool to_batched_form(int i, const std::string& name, bool batch_in_depth_allowed);
  void to_depth_form(int i, const std::string& name);
  void add_move_between(const Value& from, const Value& to, const std::string& name,
                        const std::string& where);
  void to_whole_form(int i, const std::string& name);
  void add_free_reshape(const std::string& source, const std::string& out,
                        const std::vector<int>& dims, const std::string& where);
  std::string fresh_name(const std::string& base);
  // x in ONNX order: a channels-first map through a layout move, made once; other values as
  // they are (a flattened map keeps its IR order: readers permute their weights instead).
  const Value* in_onnx_order(int i, const Value* x);
  // onnx_recurrent.cpp: a constant named after `base`; a node appended after the model's own and
  // imported now (its output named `output`, or after `base`; `axis` for Concat); its output.
  std::string add_constant(const std::string& base, Constant c);
  std::string add_ints(const std::string& base, const std::vector<int64_t>& v);
  std::string emit_node(const std::string& base, const std::string& op,
                        const std::vector<std::string>& inputs, std::string output = "",
                        int64_t axis = 0, const std::vector<onnx::AttributeProto>& attributes = {});

  // Helpers of the translators.
  // Folds x + c / x * c into the Conv / Gemm / MatMul producing x when c is a scalar or one
  // value per channel; false (nothing done) otherwise.
  bool fold_constant(int i, const Value& x, const Constant& c, OpKind kind);
  // `output`: the IR / ONNX name of the result (default: the node's first output).
  void import_dense(int i, const Value& a, const Constant& b, bool trans_b, float alpha,
                    const Constant* c, float beta, const std::string& output = "");
  void reshape_value(int i, const Value& x, const std::vector<int64_t>& per_sample);
  void reduce_rows(int i, const Value& x, std::vector<int64_t> axes, bool given, Reduce kind);
  bool read_axes(int i, int input_from_opset, std::vector<int64_t>& axes, bool& given);
  // Operands 0 .. count-1 (all when count < 0) of a data-movement node; false after reporting.
  bool move_operands(int i, std::vector<MoveOperand>& ops, int count = -1);
  void per_sample_constants(int i, std::vector<MoveOperand>& ops);
  // The node's output `out` as the map `spec` over `ops`: a constant when every operand is one,
  // otherwise a move layer (a free reshape when the map keeps the IR's element order).
  void emit_move(int i, const std::string& out, const char* op, const std::vector<MoveOperand>& ops,
                 const MoveSpec& spec);
  void import_concat_move(int i);
  // onnx_conv_pool.cpp: a pool of feature map x with the window attributes of `n` as `out`;
  // a 1-D pool ([N, C, L]) through a feature map of height 1.
  void pool_window(int i, const Node& n, const Value& x, OpKind kind, const std::string& out);
  void import_pool_1d(int i, OpKind kind, const Value& x);
  const Value* as_feature_map(int i, const Value* x);
  // onnx_compose.cpp: x with its axes in the order `perm` (per-sample axes) as `out`; null after
  // reporting.
  const Value* permute_value(int i, const Value& x, const std::vector<int64_t>& perm,
                             const std::string& out);
  // `operation` on the IR's last axis of a value (sets the value `name`); along_axis applies it
  // to axis `axis` of x (a per-sample axis), moving that axis there and back when needed.
  using AxisOperation = std::function<void(const Value& v, size_t at, const std::string& name)>;
  void along_axis(int i, const Value& x, size_t axis, const std::string& out,
                  const AxisOperation& operation);
  // A dense layer (weights [x.dims[axis], units], no bias) / a softmax along one axis of x.
  void dense_along_axis(int i, const Value& x, size_t axis, std::vector<float> weights,
                        int64_t units, const std::string& out);
  void softmax_along_axis(int i, const Value& x, size_t axis, const std::string& out);
  // LayerNormalization's Mean / InvStdDev outputs when used (onnx_normalization.cpp): `rows` is
  // the IR tensor [.., inner] the normalization of x over its axes from `a` on reads.
  void layer_norm_statistics(int i, const Value& x, size_t a, const std::string& rows,
                             int64_t inner, float epsilon);
  // Resize linear / cubic to `dims` with `scale` (both with the batch axis when x is batched).
  void resize_interpolated(int i, const Value& x, const std::vector<int64_t>& dims,
                           const std::vector<double>& scale);
  void matmul_per_index(int i, const Value& a, const Constant& b);
  void reshape_move(int i, const MoveOperand& x, const std::vector<int64_t>& per_sample);
  // A move layer named `name` that holds value v in the layout `channels_first` (graph outputs).
  void add_relayout(const Value& v, bool channels_first, const std::string& name,
                    const std::string& where);
  // onnx_affine.cpp: c broadcast (numpy rules) to x's per-sample ONNX shape, in ONNX order;
  // returns an error message, empty when fine (a constant that differs along the batch axis
  // asks for the whole-tensor mode, as batch_axis_needed).
  std::string broadcast_to(const Value& x, const Constant& c, std::vector<float>& out);
  // y = x * scale + shift per element (ONNX order, one sample) as a depthwise 1x1 conv.
  // `output`: the result's name (default: the node's first output).
  void import_affine(int i, const Value& x, std::vector<float> scale, std::vector<float> shift,
                     const std::string& output = "");
  // onnx_elementwise.cpp: numpy broadcasting of two run-time operands.
  int broadcast_operand(int i, const Value& a, const Value& b);
  std::string expand_value(int i, int k, const Value& to, std::string name = "");
  void import_binary_constant(int i, const Value& x, const Constant& c, bool constant_first,
                              char op);

  const onnx::ModelProto& model_;
  const onnx::GraphProto& g_;
  onnx::GraphProto& nodes_;  // g_, to append unrolled nodes to
  std::string path_;
  std::optional<int> batch_override_;
  GraphDiagnostics diag_;
  Graph graph_;
  std::vector<std::string> where_of_layer_;
  std::set<std::string> layer_names_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, Value> values_;
  // The token ids under the names they go by: the graph input and the outputs of Reshapes that
  // keep its shape (Hugging Face's GPT-2 views the ids as [-1, sequence] before the lookup).
  std::set<std::string> token_id_names_;
  std::set<std::string> poisoned_;  // outputs of nodes that failed: their consumers stay quiet
  std::map<std::string, int> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<int> skipped_nodes_;
  std::map<int, std::string> gelu_input_at_;   // last node of a GELU pattern -> its input x
  std::map<int, RmsNormPattern> rms_norm_at_;  // last node of an RMSNorm pattern
  int64_t file_batch_ = 0;
  int opset_ = kMaxOpset;
  bool whole_tensor_ = false;
  bool needs_whole_tensor_ = false;
  bool node_batched_ = false;   // whole-tensor mode: the form of the current node's results
  bool node_in_depth_ = false;  // and whether they are Value::batch_in_depth
};

}  // namespace npusim::onnx_frontend
