#include "sim/reference.hpp"

#include <algorithm>

#include "arch/quant.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

std::vector<int8_t> conv2d(const Layer& l, int batch, const std::vector<int8_t>& x) {
  const TensorShape in = l.in_shape, out = l.out_shape;
  const bool dense = l.kind == OpKind::kDense;
  const int kh = dense ? 1 : l.kernel_h, kw = dense ? 1 : l.kernel_w;
  const int cin = dense ? static_cast<int>(in.elements()) : in.c;
  const int n = l.filters;
  std::vector<int8_t> y(static_cast<size_t>(batch) * out.elements());
  std::vector<int32_t> acc(n);
  for (int b = 0; b < batch; ++b) {
    for (int oy = 0; oy < out.h; ++oy) {
      for (int ox = 0; ox < out.w; ++ox) {
        std::copy(l.bias.begin(), l.bias.end(), acc.begin());
        for (int fy = 0; fy < kh; ++fy) {
          const int iy = oy * l.stride_h - l.pad_top + fy * l.dilation_h;
          if (!dense && (iy < 0 || iy >= in.h)) continue;
          for (int fx = 0; fx < kw; ++fx) {
            const int ix = ox * l.stride_w - l.pad_left + fx * l.dilation_w;
            if (!dense && (ix < 0 || ix >= in.w)) continue;
            const int8_t* px =
                dense ? &x[size_t(b) * cin]
                      : &x[((size_t(b) * in.h + iy) * in.w + ix) * in.c];
            const int8_t* w = &l.weights[(size_t(fy) * kw + fx) * cin * n];
            for (int c = 0; c < cin; ++c) {
              const int32_t v = px[c];
              const int8_t* wr = w + size_t(c) * n;
              for (int j = 0; j < n; ++j) acc[j] += v * wr[j];
            }
          }
        }
        int8_t* o = &y[((size_t(b) * out.h + oy) * out.w + ox) * n];
        for (int j = 0; j < n; ++j) o[j] = requantize(acc[j], l.requant, l.relu);
      }
    }
  }
  return y;
}

std::vector<int8_t> maxpool(const Layer& l, int batch, const std::vector<int8_t>& x) {
  const TensorShape in = l.in_shape, out = l.out_shape;
  std::vector<int8_t> y(static_cast<size_t>(batch) * out.elements(), INT8_MIN);
  for (int b = 0; b < batch; ++b)
    for (int oy = 0; oy < out.h; ++oy)
      for (int ox = 0; ox < out.w; ++ox)
        for (int fy = 0; fy < l.kernel_h; ++fy)
          for (int fx = 0; fx < l.kernel_w; ++fx) {
            const int iy = oy * l.stride_h - l.pad_top + fy;
            const int ix = ox * l.stride_w - l.pad_left + fx;
            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
            for (int c = 0; c < in.c; ++c) {
              int8_t& o = y[((size_t(b) * out.h + oy) * out.w + ox) * in.c + c];
              o = std::max(o, x[((size_t(b) * in.h + iy) * in.w + ix) * in.c + c]);
            }
          }
  return y;
}

}  // namespace

std::map<std::string, std::vector<int8_t>> run_reference(const Graph& graph,
                                                         const std::vector<int8_t>& input) {
  NPUSIM_CHECK(input.size() == graph.input_shape.elements() * graph.batch,
               "reference input has {} bytes, expected {}", input.size(),
               graph.input_shape.elements() * graph.batch);
  std::map<std::string, std::vector<int8_t>> tensors{{graph.input_name, input}};
  for (const auto& l : graph.layers) {
    const auto& x = tensors.at(l.input);
    std::vector<int8_t> y;
    switch (l.kind) {
      case OpKind::kConv2d:
      case OpKind::kDense: y = conv2d(l, graph.batch, x); break;
      case OpKind::kMaxPool: y = maxpool(l, graph.batch, x); break;
      case OpKind::kRelu:
        y = x;
        for (auto& v : y) v = std::max<int8_t>(v, 0);
        break;
      case OpKind::kFlatten: y = x; break;
      case OpKind::kSoftmax: {
        const int n = static_cast<int>(l.in_shape.elements());
        y.resize(x.size());
        for (int b = 0; b < graph.batch; ++b) {
          softmax_int8(&x[size_t(b) * n], &y[size_t(b) * n], n, l.in_scale);
        }
        break;
      }
    }
    tensors[l.output] = std::move(y);
  }
  return tensors;
}

}  // namespace npusim
