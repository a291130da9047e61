// Shape rules, one per family of ops; compiler/ir/op_table.cpp points each op at its rule and
// finalize_graph (compiler/ir/shape_inference.hpp) applies it.
#pragma once

#include <functional>
#include <string>

#include "compiler/ir/graph.hpp"

namespace npusim {

// Reports an impossible shape for the layer and returns false.
using ShapeFail = std::function<bool(const std::string& message)>;
// Sets layer.out_shape from layer.in_shapes (all present) and its attributes; may resolve
// attributes that depend on the input (same padding, a global pool's window). False after
// reporting through `fail` when the shape is impossible.
using ShapeRule = bool (*)(Layer& layer, const ShapeFail& fail);

bool infer_window(Layer& l, const ShapeFail& fail);  // conv, max / average pool
bool infer_dense(Layer& l, const ShapeFail& fail);
bool infer_matmul(Layer& l, const ShapeFail& fail);
bool infer_same_shape_binary(Layer& l, const ShapeFail& fail);  // add, mul
bool infer_concat(Layer& l, const ShapeFail& fail);
bool infer_reshape(Layer& l, const ShapeFail& fail);
bool infer_same_as_input(Layer& l, const ShapeFail& fail);
bool infer_move(Layer& l, const ShapeFail& fail);
bool infer_embedding(Layer& l, const ShapeFail& fail);

}  // namespace npusim
