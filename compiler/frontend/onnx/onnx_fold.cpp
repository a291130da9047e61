// Constant folding at import: the evaluators of onnx_fold.hpp. Values are computed in double
// (exact for the integers of shape arithmetic, |x| < 2^53) and stored back as float or int64.
#include "compiler/frontend/onnx/onnx_fold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "compiler/frontend/onnx/onnx_operators.hpp"

namespace npusim::onnx_frontend {
namespace {

struct Tensor {
  std::vector<int64_t> dims;
  std::vector<double> v;
  bool is_int = false;
  int64_t size() const { return product(dims); }
};

Tensor from_constant(const Constant& c) {
  Tensor t;
  t.dims = c.dims;
  t.is_int = c.is_int;
  if (c.is_int) {
    t.v.assign(c.ints.begin(), c.ints.end());
  } else {
    t.v.assign(c.values.begin(), c.values.end());
  }
  return t;
}

int64_t to_int64(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (x <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

Constant to_constant(const Tensor& t) {
  Constant c;
  c.dims = t.dims;
  c.is_int = t.is_int;
  for (double x : t.v) {
    if (t.is_int) {
      c.ints.push_back(to_int64(x));
    } else {
      c.values.push_back(static_cast<float>(x));
    }
  }
  return c;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// numpy broadcasting of several shapes; an error message, empty when fine.
std::string broadcast_dims(const std::vector<const Tensor*>& ts, std::vector<int64_t>& out) {
  size_t rank = 0;
  for (const Tensor* t : ts) rank = std::max(rank, t->dims.size());
  out.assign(rank, 1);
  for (const Tensor* t : ts) {
    const size_t off = rank - t->dims.size();
    for (size_t k = 0; k < t->dims.size(); ++k) {
      const int64_t d = t->dims[k];
      if (d == out[off + k] || d == 1) continue;
      if (out[off + k] != 1) {
        std::vector<std::string> shapes;
        for (const Tensor* u : ts) shapes.push_back(dims_text(u->dims));
        return fmt::format("shapes {} do not broadcast", fmt::join(shapes, " and "));
      }
      out[off + k] = d;
    }
  }
  return "";
}

// For each element of `out_dims`, the flat index of the element of `t` it reads (broadcast).
std::vector<int64_t> broadcast_index(const Tensor& t, const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size(), off = rank - t.dims.size();
  std::vector<int64_t> in_stride(rank, 0);
  const auto s = strides_of(t.dims);
  for (size_t k = 0; k < t.dims.size(); ++k) in_stride[off + k] = t.dims[k] == 1 ? 0 : s[k];
  const int64_t n = product(out_dims);
  std::vector<int64_t> index(static_cast<size_t>(n));
  std::vector<int64_t> pos(rank, 0);
  int64_t flat = 0;
  for (int64_t e = 0; e < n; ++e) {
    index[size_t(e)] = flat;
    for (size_t k = rank; k-- > 0;) {
      ++pos[k];
      flat += in_stride[k];
      if (pos[k] < out_dims[k]) break;
      flat -= in_stride[k] * pos[k];
      pos[k] = 0;
    }
  }
  return index;
}

using Elementwise = std::function<double(const std::vector<double>&)>;

// An elementwise operator over broadcast inputs.
std::string elementwise(const std::vector<const Tensor*>& ts, bool is_int, const Elementwise& f,
                        Tensor& out) {
  if (auto e = broadcast_dims(ts, out.dims); !e.empty()) return e;
  out.is_int = is_int;
  std::vector<std::vector<int64_t>> idx;
  for (const Tensor* t : ts) idx.push_back(broadcast_index(*t, out.dims));
  const int64_t n = out.size();
  out.v.resize(size_t(n));
  std::vector<double> args(ts.size());
  for (int64_t e = 0; e < n; ++e) {
    for (size_t k = 0; k < ts.size(); ++k) args[k] = ts[k]->v[size_t(idx[k][size_t(e)])];
    out.v[size_t(e)] = f(args);
  }
  return "";
}

// Everything an evaluator sees.
struct Args {
  const onnx::NodeProto& n;
  int opset;
  std::vector<Tensor> in;
  std::vector<bool> present;
  std::vector<Tensor>& out;
};

using Eval = std::function<std::string(Args&)>;

std::string need_inputs(Args& a, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    if (k >= a.present.size() || !a.present[k]) return fmt::format("input {} is missing", k);
  }
  return "";
}

Eval unary(double (*f)(double), bool keeps_int) {
  return [f, keeps_int](Args& a) -> std::string {
    if (auto e = need_inputs(a, 1); !e.empty()) return e;
    const bool is_int = keeps_int && a.in[0].is_int;
    return elementwise(
        {&a.in[0]}, is_int, [f](const std::vector<double>& x) { return f(x[0]); }, a.out[0]);
  };
}

// `result_int`: 0 the inputs' type, 1 integer (comparisons, logic).
Eval binary(double (*f)(double, double, bool), int result_int) {
  return [f, result_int](Args& a) -> std::string {
    if (auto e = need_inputs(a, 2); !e.empty()) return e;
    const bool ints = a.in[0].is_int && a.in[1].is_int;
    return elementwise(
        {&a.in[0], &a.in[1]}, result_int ? true : a.in[0].is_int,
        [f, ints](const std::vector<double>& x) { return f(x[0], x[1], ints); }, a.out[0]);
  };
}

double div_op(double x, double y, bool ints) {
  if (!ints) return x / y;
  return y == 0 ? 0 : std::trunc(x / y);
}

std::string fold_mod(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  const bool fmod_mode = attr_int(a.n, "fmod", 0) != 0;
  if (!fmod_mode && !(a.in[0].is_int && a.in[1].is_int)) {
    return "fmod 0 is defined for integers only (ONNX)";
  }
  return elementwise(
      {&a.in[0], &a.in[1]}, a.in[0].is_int,
      [fmod_mode](const std::vector<double>& x) {
        if (x[1] == 0) return 0.0;
        double r = std::fmod(x[0], x[1]);
        if (!fmod_mode && r != 0 && ((r < 0) != (x[1] < 0))) r += x[1];
        return r;
      },
      a.out[0]);
}

std::string fold_variadic(Args& a, double (*f)(double, double)) {
  if (a.in.empty()) return "expects at least one input";
  std::vector<const Tensor*> ts;
  bool ints = true;
  for (const Tensor& t : a.in) {
    ts.push_back(&t);
    ints = ints && t.is_int;
  }
  return elementwise(
      ts, ints,
      [f](const std::vector<double>& x) {
        double r = x[0];
        for (size_t k = 1; k < x.size(); ++k) r = f(r, x[k]);
        return r;
      },
      a.out[0]);
}

std::string fold_where(Args& a) {
  if (auto e = need_inputs(a, 3); !e.empty()) return e;
  return elementwise(
      {&a.in[0], &a.in[1], &a.in[2]}, a.in[1].is_int && a.in[2].is_int,
      [](const std::vector<double>& x) { return x[0] != 0 ? x[1] : x[2]; }, a.out[0]);
}

std::string fold_identity(Args& a) {
  if (auto e = need_inputs(a, 1); !e.empty()) return e;
  a.out[0] = a.in[0];
  if (a.out.size() > 1) {  // Dropout's mask: everything kept
    a.out[1].dims = a.in[0].dims;
    a.out[1].is_int = true;
    a.out[1].v.assign(size_t(a.in[0].size()), 1.0);
  }
  return "";
}

bool is_integer_type(int64_t t) {
  using T = onnx::TensorProto_DataType;
  return t == T::TensorProto_DataType_INT64 || t == T::TensorProto_DataType_INT32 ||
         t == T::TensorProto_DataType_INT16 || t == T::TensorProto_DataType_INT8 ||
         t == T::TensorProto_DataType_UINT8 || t == T::TensorProto_DataType_UINT16 ||
         t == T::TensorProto_DataType_UINT32 || t == T::TensorProto_DataType_UINT64 ||
         t == T::TensorProto_DataType_BOOL;
}

bool is_float_type(int64_t t) {
  using T = onnx::TensorProto_DataType;
  return t == T::TensorProto_DataType_FLOAT || t == T::TensorProto_DataType_DOUBLE ||
         t == T::TensorProto_DataType_FLOAT16 || t == T::TensorProto_DataType_BFLOAT16;
}

std::string cast_to(Tensor& t, int64_t to) {
  if (is_float_type(to)) {
    t.is_int = false;
    return "";
  }
  if (!is_integer_type(to)) {
    return fmt::format("cast to {} is not supported (float or integer types)",
                       data_type_name(int(to)));
  }
  const bool to_bool = to == onnx::TensorProto_DataType_BOOL;
  for (double& x : t.v) x = to_bool ? double(x != 0) : std::trunc(x);
  t.is_int = true;
  return "";
}

std::string fold_cast(Args& a) {
  if (auto e = need_inputs(a, 1); !e.empty()) return e;
  a.out[0] = a.in[0];
  return cast_to(a.out[0], attr_int(a.n, "to", 0));
}

std::string fold_cast_like(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  a.out[0] = a.in[0];
  if (a.in[1].is_int && !a.in[0].is_int) {
    for (double& x : a.out[0].v) x = std::trunc(x);
  }
  a.out[0].is_int = a.in[1].is_int;
  return "";
}

std::string fold_size(Args& a) {
  if (auto e = need_inputs(a, 1); !e.empty()) return e;
  a.out[0] = Tensor{{}, {double(a.in[0].size())}, true};
  return "";
}

std::string fold_range(Args& a) {
  if (auto e = need_inputs(a, 3); !e.empty()) return e;
  for (const Tensor& t : a.in) {
    if (t.size() != 1) return "start, limit and delta must be scalars";
  }
  const double start = a.in[0].v[0], limit = a.in[1].v[0], delta = a.in[2].v[0];
  if (delta == 0) return "delta is 0";
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > 1e8) return fmt::format("{} elements is too many", count);
  Tensor& o = a.out[0];
  o.is_int = a.in[0].is_int;
  o.dims = {int64_t(count)};
  for (int64_t k = 0; k < int64_t(count); ++k) o.v.push_back(start + double(k) * delta);
  return "";
}

std::string fold_constant_of_shape(Args& a) {
  if (auto e = need_inputs(a, 1); !e.empty()) return e;
  Tensor& o = a.out[0];
  for (double d : a.in[0].v) {
    if (d < 0) return fmt::format("shape has a negative size {}", d);
    o.dims.push_back(int64_t(d));
  }
  double value = 0;
  if (const auto* attr = find_attr(a.n, "value")) {
    Constant c;
    if (auto e = read_tensor(attr->t(), c); !e.empty()) return "value " + e;
    if (c.elements() != 1) return "value must hold one element";
    value = c.is_int ? double(c.ints[0]) : double(c.values[0]);
    o.is_int = c.is_int;
  }
  if (product(o.dims) > 100'000'000) return "the result is too large to fold";
  o.v.assign(size_t(product(o.dims)), value);
  return "";
}

// numpy broadcast of x to shape (Expand's rule: either side may be 1).
std::string fold_expand(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  Tensor shape;
  for (double d : a.in[1].v) {
    if (d < 0) return fmt::format("shape has a negative size {}", d);
    shape.dims.push_back(int64_t(d));
  }
  if (shape.size() > 100'000'000) return "the result is too large to fold";
  shape.v.assign(size_t(shape.size()), 0.0);
  return elementwise(
      {&a.in[0], &shape}, a.in[0].is_int, [](const std::vector<double>& x) { return x[0]; },
      a.out[0]);
}

// Copies through an index map: out element e takes in element source(e).
void gather_by(const Tensor& in, const std::vector<int64_t>& out_dims,
               const std::function<int64_t(const std::vector<int64_t>&)>& source, Tensor& out) {
  out.dims = out_dims;
  out.is_int = in.is_int;
  const int64_t n = product(out_dims);
  out.v.resize(size_t(n));
  std::vector<int64_t> pos(out_dims.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    out.v[size_t(e)] = in.v[size_t(source(pos))];
    for (size_t k = pos.size(); k-- > 0;) {
      if (++pos[k] < out_dims[k]) break;
      pos[k] = 0;
    }
  }
}

std::string fold_tile(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  const Tensor& x = a.in[0];
  if (a.in[1].v.size() != x.dims.size()) return "repeats must have one entry per axis";
  std::vector<int64_t> dims = x.dims;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (a.in[1].v[k] < 0) return "repeats must not be negative";
    dims[k] *= int64_t(a.in[1].v[k]);
  }
  const auto s = strides_of(x.dims);
  gather_by(
      x, dims,
      [&](const std::vector<int64_t>& p) {
        int64_t f = 0;
        for (size_t k = 0; k < p.size(); ++k) f += (p[k] % x.dims[k]) * s[k];
        return f;
      },
      a.out[0]);
  return "";
}

std::string fold_trilu(Args& a) {
  if (auto e = need_inputs(a, 1); !e.empty()) return e;
  const Tensor& x = a.in[0];
  if (x.dims.size() < 2) return "expects a tensor of rank 2 or more";
  const int64_t k = a.present.size() > 1 && a.present[1] ? int64_t(a.in[1].v.at(0)) : 0;
  const bool upper = attr_int(a.n, "upper", 1) != 0;
  const int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
  a.out[0] = x;
  for (size_t e = 0; e < x.v.size(); ++e) {
    const int64_t c = int64_t(e) % cols, r = (int64_t(e) / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    if (!keep) a.out[0].v[e] = 0;
  }
  return "";
}

// CumSum along one axis (a scalar input), `exclusive` and `reverse` as the ONNX specification
// defines them (Hugging Face's position ids and masks: a cumulative sum of a mask of ones).
std::string fold_cumsum(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  const Tensor& x = a.in[0];
  if (a.in[1].v.size() != 1) return "axis must be a scalar";
  const auto rank = int64_t(x.dims.size());
  int64_t axis = int64_t(a.in[1].v[0]);
  if (axis < -rank || axis >= rank) return fmt::format("axis {} is out of range", axis);
  if (axis < 0) axis += rank;
  const bool exclusive = attr_int(a.n, "exclusive", 0) != 0;
  const bool reverse = attr_int(a.n, "reverse", 0) != 0;
  const int64_t len = x.dims[size_t(axis)];
  const int64_t inner = product(x.dims, size_t(axis) + 1);
  const int64_t outer = len == 0 ? 0 : x.size() / (len * inner);
  a.out[0] = x;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t k = reverse ? len - 1 - j : j;
        const auto e = size_t((o * len + k) * inner + in);
        if (exclusive) {
          a.out[0].v[e] = sum;
          sum += x.v[e];
        } else {
          sum += x.v[e];
          a.out[0].v[e] = sum;
        }
      }
    }
  }
  return "";
}

std::vector<int64_t> reduce_axes(Args& a, size_t rank, std::string& error) {
  std::vector<int64_t> axes;
  if (a.present.size() > 1 && a.present[1]) {
    for (double d : a.in[1].v) axes.push_back(int64_t(d));
  } else {
    axes = attr_ints(a.n, "axes", {});
  }
  if (axes.empty() && attr_int(a.n, "noop_with_empty_axes", 0) == 0) {
    for (size_t k = 0; k < rank; ++k) axes.push_back(int64_t(k));
  }
  for (int64_t& ax : axes) {
    if (ax < 0) ax += int64_t(rank);
    if (ax < 0 || ax >= int64_t(rank)) error = fmt::format("axis {} is out of range", ax);
  }
  return axes;
}

// 'm' mean, 's' sum, 'x' max, 'n' min, 'p' product.
Eval reduce(char kind) {
  return [kind](Args& a) -> std::string {
    if (auto e = need_inputs(a, 1); !e.empty()) return e;
    const Tensor& x = a.in[0];
    std::string error;
    const auto axes = reduce_axes(a, x.dims.size(), error);
    if (!error.empty()) return error;
    std::vector<bool> reduced(x.dims.size(), false);
    for (int64_t ax : axes) reduced[size_t(ax)] = true;
    std::vector<int64_t> keep_dims = x.dims, out_dims;
    int64_t count = 1;
    for (size_t k = 0; k < x.dims.size(); ++k) {
      if (reduced[k]) {
        keep_dims[k] = 1;
        count *= x.dims[k];
      } else {
        out_dims.push_back(x.dims[k]);
      }
    }
    const bool keep = attr_int(a.n, "keepdims", 1) != 0;
    Tensor& o = a.out[0];
    o.dims = keep ? keep_dims : out_dims;
    o.is_int = x.is_int && kind != 'm';
    const double init = kind == 'x'   ? -std::numeric_limits<double>::infinity()
                        : kind == 'n' ? std::numeric_limits<double>::infinity()
                        : kind == 'p' ? 1.0
                                      : 0.0;
    o.v.assign(size_t(product(keep_dims)), init);
    const auto out_stride = strides_of(keep_dims);
    std::vector<int64_t> pos(x.dims.size(), 0);
    for (double value : x.v) {
      int64_t f = 0;
      for (size_t k = 0; k < pos.size(); ++k) f += reduced[k] ? 0 : pos[k] * out_stride[k];
      double& r = o.v[size_t(f)];
      r = kind == 'x'   ? std::max(r, value)
          : kind == 'n' ? std::min(r, value)
          : kind == 'p' ? r * value
                        : r + value;
      for (size_t k = pos.size(); k-- > 0;) {
        if (++pos[k] < x.dims[k]) break;
        pos[k] = 0;
      }
    }
    if (kind == 'm') {
      for (double& r : o.v) r /= double(count);
    }
    return "";
  };
}

// Einsum without ellipsis: every combination of the labels' values, summed over the labels the
// output does not name.
std::string fold_einsum(Args& a) {
  std::string eq = attr_string(a.n, "equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) return "an equation with '...' is not supported";
  const auto arrow = eq.find("->");
  if (arrow == std::string::npos) return "an equation without '->' is not supported";
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow);
  for (size_t s = 0;;) {
    const auto c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  const std::string out_labels = eq.substr(arrow + 2);
  if (terms.size() != a.in.size()) return "the equation does not name every input";
  std::map<char, int64_t> size;
  for (size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].size() != a.in[t].dims.size()) {
      return fmt::format("term '{}' does not match input {} of shape {}", terms[t], t,
                         dims_text(a.in[t].dims));
    }
    for (size_t k = 0; k < terms[t].size(); ++k) {
      auto [it, fresh] = size.emplace(terms[t][k], a.in[t].dims[k]);
      if (!fresh && it->second != a.in[t].dims[k]) return "a label has two sizes";
    }
  }
  std::vector<char> labels;
  for (auto& [l, s] : size) labels.push_back(l);
  std::vector<int64_t> label_dims;
  for (char l : labels) label_dims.push_back(size[l]);
  Tensor& o = a.out[0];
  for (char l : out_labels) {
    if (!size.count(l)) return fmt::format("output label '{}' is not an input's", l);
    o.dims.push_back(size[l]);
  }
  o.is_int = std::all_of(a.in.begin(), a.in.end(), [](const Tensor& t) { return t.is_int; });
  o.v.assign(size_t(product(o.dims)), 0.0);
  if (product(label_dims) > 100'000'000) return "too large to fold";
  auto flat = [&](const std::string& term, const std::vector<int64_t>& dims,
                  const std::map<char, int64_t>& value) {
    int64_t f = 0;
    for (size_t k = 0; k < term.size(); ++k) f = f * dims[k] + value.at(term[k]);
    return f;
  };
  std::vector<int64_t> pos(labels.size(), 0);
  std::map<char, int64_t> value;
  for (int64_t e = 0; e < product(label_dims); ++e) {
    for (size_t k = 0; k < labels.size(); ++k) value[labels[k]] = pos[k];
    double p = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      p *= a.in[t].v[size_t(flat(terms[t], a.in[t].dims, value))];
    }
    o.v[size_t(flat(out_labels, o.dims, value))] += p;
    for (size_t k = pos.size(); k-- > 0;) {
      if (++pos[k] < label_dims[k]) break;
      pos[k] = 0;
    }
  }
  return "";
}

std::string fold_matmul(Args& a) {
  if (auto e = need_inputs(a, 2); !e.empty()) return e;
  const Tensor &x = a.in[0], &y = a.in[1];
  if (x.dims.size() != 2 || y.dims.size() != 2 || x.dims[1] != y.dims[0]) {
    return fmt::format("of constants {} x {}: only 2-D matrices fold", dims_text(x.dims),
                       dims_text(y.dims));
  }
  const int64_t m = x.dims[0], k = x.dims[1], n = y.dims[1];
  Tensor& o = a.out[0];
  o.dims = {m, n};
  o.is_int = x.is_int && y.is_int;
  o.v.assign(size_t(m * n), 0.0);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += x.v[size_t(r * k + j)] * y.v[size_t(j * n + c)];
      o.v[size_t(r * n + c)] = s;
    }
  }
  return "";
}

std::string fold_scatter_nd(Args& a) {
  if (auto e = need_inputs(a, 3); !e.empty()) return e;
  if (attr_string(a.n, "reduction", "none") != "none") return "reduction is not supported";
  const Tensor &data = a.in[0], &idx = a.in[1], &upd = a.in[2];
  if (idx.dims.empty()) return "indices must have rank 1 or more";
  const size_t q = size_t(idx.dims.back());
  if (q > data.dims.size()) return "indices address more axes than the data has";
  const int64_t slice = product(std::vector<int64_t>(data.dims.begin() + q, data.dims.end()));
  const int64_t count = idx.size() / int64_t(std::max<size_t>(q, 1));
  if (upd.size() != count * slice) return "updates do not match the indices";
  const auto s = strides_of(data.dims);
  a.out[0] = data;
  for (int64_t r = 0; r < count; ++r) {
    int64_t f = 0;
    for (size_t k = 0; k < q; ++k) {
      int64_t i = int64_t(idx.v[size_t(r * int64_t(q) + int64_t(k))]);
      if (i < 0) i += data.dims[k];
      if (i < 0 || i >= data.dims[k]) return fmt::format("index {} is out of range", i);
      f += i * s[k];
    }
    for (int64_t j = 0; j < slice; ++j) a.out[0].v[size_t(f + j)] = upd.v[size_t(r * slice + j)];
  }
  return "";
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu(double x) { return x > 0 ? x : 0; }
double neg(double x) { return -x; }
double reciprocal(double x) { return 1.0 / x; }
double logical_not(double x) { return x == 0; }
double sign(double x) { return double((x > 0) - (x < 0)); }

struct FoldEntry {
  const char* op;
  Eval eval;
};

const std::vector<FoldEntry>& fold_table() {
  using B = double (*)(double, double, bool);
  static const std::vector<FoldEntry> table = {
      {"Identity", fold_identity},
      {"Dropout", fold_identity},
      {"Cast", fold_cast},
      {"CastLike", fold_cast_like},
      {"Size", fold_size},
      {"Range", fold_range},
      {"ConstantOfShape", fold_constant_of_shape},
      {"Expand", fold_expand},
      {"Tile", fold_tile},
      {"Trilu", fold_trilu},
      {"CumSum", fold_cumsum},
      {"Where", fold_where},
      {"Einsum", fold_einsum},
      {"MatMul", fold_matmul},
      {"ScatterND", fold_scatter_nd},
      {"Add", binary(B([](double x, double y, bool) { return x + y; }), 0)},
      {"Sub", binary(B([](double x, double y, bool) { return x - y; }), 0)},
      {"Mul", binary(B([](double x, double y, bool) { return x * y; }), 0)},
      {"Div", binary(div_op, 0)},
      {"Pow", binary(B([](double x, double y, bool) { return std::pow(x, y); }), 0)},
      {"Mod", fold_mod},
      {"Equal", binary(B([](double x, double y, bool) { return double(x == y); }), 1)},
      {"Less", binary(B([](double x, double y, bool) { return double(x < y); }), 1)},
      {"LessOrEqual", binary(B([](double x, double y, bool) { return double(x <= y); }), 1)},
      {"Greater", binary(B([](double x, double y, bool) { return double(x > y); }), 1)},
      {"GreaterOrEqual", binary(B([](double x, double y, bool) { return double(x >= y); }), 1)},
      {"And", binary(B([](double x, double y, bool) { return double(x != 0 && y != 0); }), 1)},
      {"Or", binary(B([](double x, double y, bool) { return double(x != 0 || y != 0); }), 1)},
      {"Xor", binary(B([](double x, double y, bool) { return double((x != 0) != (y != 0)); }), 1)},
      {"Not", unary(logical_not, true)},
      {"Min",
       [](Args& a) { return fold_variadic(a, [](double x, double y) { return std::min(x, y); }); }},
      {"Max",
       [](Args& a) { return fold_variadic(a, [](double x, double y) { return std::max(x, y); }); }},
      {"Neg", unary(neg, true)},
      {"Abs", unary([](double x) { return std::abs(x); }, true)},
      {"Sign", unary(sign, true)},
      {"Floor", unary([](double x) { return std::floor(x); }, true)},
      {"Ceil", unary([](double x) { return std::ceil(x); }, true)},
      {"Sqrt", unary([](double x) { return std::sqrt(x); }, false)},
      {"Reciprocal", unary(reciprocal, false)},
      {"Exp", unary([](double x) { return std::exp(x); }, false)},
      {"Log", unary([](double x) { return std::log(x); }, false)},
      {"Sin", unary([](double x) { return std::sin(x); }, false)},
      {"Cos", unary([](double x) { return std::cos(x); }, false)},
      {"Sigmoid", unary(sigmoid, false)},
      {"Tanh", unary([](double x) { return std::tanh(x); }, false)},
      {"Relu", unary(relu, true)},
      {"ReduceMean", reduce('m')},
      {"ReduceSum", reduce('s')},
      {"ReduceMax", reduce('x')},
      {"ReduceMin", reduce('n')},
      {"ReduceProd", reduce('p')},
  };
  return table;
}

const FoldEntry* find_entry(const std::string& op) {
  for (const auto& e : fold_table()) {
    if (op == e.op) return &e;
  }
  return nullptr;
}

std::string run_fold(const onnx::NodeProto& n, int opset,
                     const std::vector<const Constant*>& inputs, std::vector<Constant>& outputs) {
  const FoldEntry* entry = find_entry(n.op_type());
  std::vector<Tensor> outs(size_t(n.output_size()));
  Args a{n, opset, {}, {}, outs};
  for (const Constant* c : inputs) {
    a.present.push_back(c != nullptr);
    a.in.push_back(c ? from_constant(*c) : Tensor{});
  }
  if (auto e = entry->eval(a); !e.empty()) return e;
  outputs.clear();
  for (const Tensor& t : outs) outputs.push_back(to_constant(t));
  return "";
}
}  // namespace

const ConstantFolder* find_constant_folder(const std::string& op_type) {
  static const std::vector<ConstantFolder> folders = [] {
    std::vector<ConstantFolder> f;
    for (const auto& e : fold_table()) f.push_back({e.op, run_fold});
    return f;
  }();
  for (const auto& f : folders) {
    if (op_type == f.op_type) return &f;
  }
  return nullptr;
}

std::string constant_only_operators() {
  std::string list;
  for (const auto& e : fold_table()) {
    if (find_onnx_translator(e.op)) continue;
    if (!list.empty()) list += ", ";
    list += e.op;
  }
  return list;
}

}  // namespace npusim::onnx_frontend
