// Layout between ONNX and the IR: ONNX tensors are channels first (NCHW / NCDHW), the IR is
// channels last. A Value is an ONNX run-time tensor as the importer tracks it: its ONNX shape and
// the IR tensor holding it.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace npusim::onnx_frontend {

// An activation (run-time) tensor. `dims` are in ONNX order without the batch dimension.
struct Value {
  std::string ir_name;             // the IR tensor holding it
  std::vector<int64_t> dims;       // per sample, ONNX order
  bool channels_first = false;     // dims are [C, (D,) H, W]; the IR tensor is [(D,) H, W, C]
  std::vector<int64_t> flat_from;  // set when this is a flattened channels-first map [C,(D,)H,W]
                                   // with C > 1 and H*W > 1: the IR holds (D,)H,W,C order
  int layer = -1;                  // producing IR layer; -1 for the graph input
  // docs/onnx.md "Rank mapping": batched, ONNX axis 0 is the batch and `dims` are the rest; whole
  // tensor (false), `dims` are the whole ONNX shape and the batch is 1.
  bool batched = true;
  // Whole-tensor mode with a batch B above 1: the ONNX feature map (B, C, S...) held as a batched
  // map one spatial axis deeper, `dims` [C, B, S...] channels first (the IR's [B, S..., C]), which
  // Conv and the pools read with a window of 1 along B (docs/onnx.md "Rank mapping").
  bool batch_in_depth = false;
};

// The ONNX rank of v: its dims plus the batch axis when batched.
int64_t onnx_rank(const Value& v);
// The sample axis (index into `dims`) of ONNX axis `onnx_axis` of v (negative: from the end);
// -1 for the batch axis of a batched value, -2 when out of range.
int sample_axis(const Value& v, int64_t onnx_axis);

// The IR shape of a value: channels move last.
std::vector<int> ir_dims(const Value& v);
// For a flattened channels-first map [C, S...]: the ONNX flat index of each IR flat index.
// The IR flattens (S..., C), ONNX flattens (C, S...).
std::vector<int64_t> onnx_index_of_ir_index(const std::vector<int64_t>& chw);
std::vector<float> permuted(const std::vector<float>& values, const std::vector<int64_t>& map);

// Spatial attributes shared by Conv and the pools. `kernel` and `dilation` are per spatial axis.
struct Window {
  std::vector<int64_t> strides, pads_begin, pads_end, out;
};

// Pads, strides and output size of a Conv or pool window; returns an error message, empty when
// fine.
std::string resolve_window(const onnx::NodeProto& n, const std::vector<int64_t>& in,
                           const std::vector<int64_t>& kernel, const std::vector<int64_t>& dilation,
                           Window& w);
// Writes per-spatial-axis values into the IR's (depth, height, width) triple.
std::array<int, 3> triple(const std::vector<int64_t>& v, int fill);
bool spatial_input(const Value& x);
std::string spatial_input_problem(const Value& x);
// A flatten to [N, elements] of the value x, as a Flatten or a Reshape.
void flatten_value(const Value& x, Value& v);
// Normalises `axes` against `rank` (with the batch); the batch axis 0 may not be among them.
std::string normalize_axes(std::vector<int64_t>& axes, int64_t rank);

}  // namespace npusim::onnx_frontend
