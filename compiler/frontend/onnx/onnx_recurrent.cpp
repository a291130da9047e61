// LSTM and GRU (docs/onnx.md "Recurrent layers"), unrolled over time at import into operators
// npusim runs: per direction, the input projection of all T steps as one dense ([T, B, I] by
// [I, gates * H]); per step a slice of it, the recurrent dense of the previous hidden state
// ([1, B, H] by [H, gates * H]), the gate slices, their activations (sigmoid, tanh) and the
// elementwise products and sums of the cell. The unrolled nodes are appended after the model's
// own and imported at once, so every one of them is an ordinary ONNX operator with its own
// translator (and its own error messages naming it).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/frontend/onnx/onnx_importer.hpp"
#include "compiler/frontend/onnx/onnx_tensor.hpp"

namespace npusim::onnx_frontend {

std::string OnnxImporter::add_constant(const std::string& base, Constant c) {
  const std::string name = fresh_name(base);
  constants_[name] = std::move(c);
  return name;
}

std::string OnnxImporter::add_ints(const std::string& base, const std::vector<int64_t>& v) {
  Constant c;
  c.is_int = true;
  c.dims = {int64_t(v.size())};
  c.ints = v;
  return add_constant(base, std::move(c));
}

std::string OnnxImporter::emit_node(const std::string& base, const std::string& op,
                                    const std::vector<std::string>& inputs, std::string output,
                                    int64_t axis,
                                    const std::vector<onnx::AttributeProto>& attributes) {
  onnx::NodeProto* node = nodes_.add_node();
  if (output.empty()) output = fresh_name(base);
  node->set_name(fresh_name(base + "_node"));
  node->set_op_type(op);
  for (const auto& in : inputs) {
    node->add_input(in);
    ++consumers_[in];
  }
  node->add_output(output);
  if (op == "Concat") {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  for (const auto& a : attributes) *node->add_attribute() = a;
  const int j = nodes_.node_size() - 1;
  import_node(j);
  skipped_nodes_.insert(j);  // imported; the main loop passes over it
  return output;
}

namespace {

// A constant of all zeros (an initial state torch writes as an Expand of zeros, folded by now).
bool all_zero(const Constant& c) {
  return std::all_of(c.values.begin(), c.values.end(), [](float v) { return v == 0.0f; }) &&
         std::all_of(c.ints.begin(), c.ints.end(), [](int64_t v) { return v == 0; });
}

// Rows [from, from + count) of direction d of a weight tensor [D, rows, cols], transposed:
// [cols, count] as a MatMul's right operand.
Constant transposed_rows(const Constant& w, int64_t d, int64_t from, int64_t count) {
  const int64_t rows = w.dims[1], cols = w.dims[2];
  Constant t;
  t.dims = {cols, count};
  t.values.resize(size_t(cols * count));
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      t.values[size_t(c * count + r)] = w.values[size_t((d * rows + from + r) * cols + c)];
    }
  }
  return t;
}

}  // namespace

void OnnxImporter::import_recurrent(int i) {
  const Node& n = g_.node(i);
  const bool lstm = n.op_type() == "LSTM";
  const int64_t gates = lstm ? 4 : 3;
  const Value* x = activation(i, 0);
  if (!x) return;
  const std::string direction = attr_string(n, "direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return fail(
        i, fmt::format("direction '{}' (expected forward, reverse or bidirectional)", direction));
  }
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  std::vector<std::string> refused;
  if (find_attr(n, "activations")) {
    const auto* a = find_attr(n, "activations");
    std::vector<std::string> want;
    for (int64_t d = 0; d < dirs; ++d) {
      want.push_back("Sigmoid");
      want.push_back("Tanh");
      if (lstm) want.push_back("Tanh");
    }
    std::vector<std::string> got(a->strings().begin(), a->strings().end());
    if (got != want) refused.push_back(fmt::format("activations [{}]", fmt::join(got, ", ")));
  }
  if (find_attr(n, "clip")) refused.push_back("clip");
  if (attr_int(n, "layout", 0) != 0) refused.push_back("layout 1 (batch first)");
  if (lstm && attr_int(n, "input_forget", 0) != 0) refused.push_back("input_forget 1");
  if (lstm && n.input_size() > 7 && !n.input(7).empty()) refused.push_back("peepholes P");
  if (!refused.empty()) {
    return fail(i, fmt::format("{} not supported (npusim unrolls the default activations, "
                               "sigmoid and tanh, over every step)",
                               fmt::join(refused, ", ")));
  }
  if (x->batched) {
    return batch_axis_needed(
        i, fmt::format("{} runs over ONNX axis 0 of its input (the time steps)", n.op_type()));
  }
  if (x->dims.size() != 3) {
    return fail(i, fmt::format("input X is {}, expected [sequence, batch, input_size]",
                               dims_text(x->dims)));
  }
  const Constant* w = constant(i, 1, "W");
  const Constant* r = constant(i, 2, "R");
  if (!w || !r) return;
  const Constant* b = optional_constant(i, 3, "B");
  if (n.input_size() > 3 && !n.input(3).empty() && !b) return;
  const int64_t steps = x->dims[0], batch = x->dims[1], in = x->dims[2];
  const int64_t hidden = attr_int(n, "hidden_size", r->dims.size() == 3 ? r->dims[2] : 0);
  const int64_t rows = gates * hidden;
  auto bad_shape = [&](const Constant* c, const std::vector<int64_t>& want) {
    return c && (c->is_int || c->dims != want);
  };
  if (hidden < 1 || bad_shape(w, {dirs, rows, in}) || bad_shape(r, {dirs, rows, hidden}) ||
      bad_shape(b, {dirs, 2 * rows})) {
    return fail(
        i, fmt::format("weights W {}, R {}{} do not fit hidden_size {}, {} direction(s) "
                       "and input X {} (expected W [{}, {}, {}], R [{}, {}, {}], B "
                       "[{}, {}])",
                       dims_text(w->dims), dims_text(r->dims), b ? ", B " + dims_text(b->dims) : "",
                       hidden, dirs, dims_text(x->dims), dirs, rows, in, dirs, rows, hidden, dirs,
                       2 * rows));
  }
  if (n.input_size() > 4 && !n.input(4).empty()) {
    const auto it = constants_.find(n.input(4));
    const bool full = it != constants_.end() && it->second.is_int &&
                      std::all_of(it->second.ints.begin(), it->second.ints.end(),
                                  [&](int64_t v) { return v == steps; });
    if (!full) refused.push_back("sequence_lens other than the full length");
  }
  if (!refused.empty()) {
    return fail(i, fmt::format("{} not supported (npusim unrolls the default activations, "
                               "sigmoid and tanh, over every step)",
                               fmt::join(refused, ", ")));
  }
  const bool linear_before_reset = !lstm && attr_int(n, "linear_before_reset", 0) != 0;
  // An initial state: empty (zeros), or the tensor holding all directions' [D, B, H].
  auto initial = [&](int k) -> std::string {
    if (n.input_size() <= k || n.input(k).empty()) return "";
    const std::string& name = n.input(k);
    if (auto it = constants_.find(name); it != constants_.end() && all_zero(it->second)) return "";
    if (!is_constant(name) && !activation(i, k)) return "";
    return name;
  };
  const std::string h0 = initial(5), c0 = lstm ? initial(6) : "";
  for (const auto& out : n.output()) {
    if (!out.empty() && poisoned_.count(out)) return;  // an initial state failed (reported)
  }
  std::string base = n.name();
  for (int k = 0; base.empty() && k < n.output_size(); ++k) base = n.output(k);
  auto used = [&](int k) {
    return n.output_size() > k && !n.output(k).empty() && consumers_[n.output(k)] > 0;
  };
  auto slice = [&](const std::string& from, int64_t axis, int64_t begin, int64_t end,
                   const std::string& tag) {
    return emit_node(tag, "Slice",
                     {from, add_ints(tag + "_starts", {begin}), add_ints(tag + "_ends", {end}),
                      add_ints(tag + "_axes", {axis})});
  };
  // h [1, B, H] times a constant [H, N]: a dense, or (a constant initial state) a constant.
  auto product = [&](const std::string& h, Constant rt, const std::string& tag) {
    const auto it = constants_.find(h);
    if (it == constants_.end()) return emit_node(tag, "MatMul", {h, add_constant(tag + "_t", rt)});
    const Constant& hc = it->second;
    const int64_t k = rt.dims[0], cols = rt.dims[1], m = int64_t(hc.values.size()) / k;
    Constant out;
    out.dims = {1, m, cols};
    out.values.assign(size_t(m * cols), 0.0f);
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        double acc = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          acc += double(hc.values[size_t(row * k + j)]) * rt.values[size_t(j * cols + col)];
        }
        out.values[size_t(row * cols + col)] = float(acc);
      }
    }
    return add_constant(tag, std::move(out));
  };
  std::vector<std::string> y_dirs, h_last, c_last;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const std::string dir = fmt::format("{}/{}", base, reverse ? "reverse" : "forward");
    // Biases: Wb + Rb, except GRU's Rb of the hidden gate when it is applied before the reset.
    Constant bias;
    bias.dims = {rows};
    bias.values.assign(size_t(rows), 0.0f);
    Constant recurrent_h_bias;  // GRU, linear_before_reset: Rb of the hidden gate
    recurrent_h_bias.dims = {rows};
    recurrent_h_bias.values.assign(size_t(rows), 0.0f);
    if (b) {
      for (int64_t k = 0; k < rows; ++k) {
        const float wb = b->values[size_t(d * 2 * rows + k)];
        const float rb = b->values[size_t(d * 2 * rows + rows + k)];
        const bool late = linear_before_reset && k >= 2 * hidden;
        bias.values[size_t(k)] = wb + (late ? 0.0f : rb);
        if (late) recurrent_h_bias.values[size_t(k)] = rb;
      }
    }
    // The input projection of all steps: one dense [T, B, I] x [I, gates * H].
    std::string projection =
        emit_node(dir + "/input_projection", "MatMul",
                  {n.input(0), add_constant(dir + "/W_t", transposed_rows(*w, d, 0, rows))});
    projection = emit_node(dir + "/input_projection_bias", "Add",
                           {projection, add_constant(dir + "/bias", bias)});
    std::string h, c;
    if (!h0.empty()) h = slice(h0, 0, d, d + 1, dir + "/initial_h");
    if (!c0.empty()) c = slice(c0, 0, d, d + 1, dir + "/initial_c");
    std::vector<std::string> y(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t t = reverse ? steps - 1 - s : s;
      const std::string at = fmt::format("{}/t{}", dir, t);
      const std::string xp = slice(projection, 0, t, t + 1, at + "/input");
      auto gate = [&](const std::string& from, int64_t g, int64_t count, const std::string& tag) {
        return slice(from, 2, g * hidden, (g + count) * hidden, at + "/" + tag);
      };
      if (lstm) {
        std::string sum = xp;
        if (!h.empty()) {
          const std::string rp = product(h, transposed_rows(*r, d, 0, rows), at + "/recurrent");
          sum = emit_node(at + "/gates", "Add", {xp, rp});
        }
        // ONNX's gate order: input, output, forget, cell.
        const std::string ig = emit_node(at + "/i", "Sigmoid", {gate(sum, 0, 1, "i_pre")});
        const std::string og = emit_node(at + "/o", "Sigmoid", {gate(sum, 1, 1, "o_pre")});
        const std::string cg = emit_node(at + "/g", "Tanh", {gate(sum, 3, 1, "g_pre")});
        std::string cell = emit_node(at + "/i_g", "Mul", {ig, cg});
        if (!c.empty()) {
          const std::string fg = emit_node(at + "/f", "Sigmoid", {gate(sum, 2, 1, "f_pre")});
          cell = emit_node(at + "/c", "Add", {emit_node(at + "/f_c", "Mul", {fg, c}), cell});
        }
        c = cell;
        h = emit_node(at + "/h", "Mul", {og, emit_node(at + "/tanh_c", "Tanh", {c})});
      } else {
        // ONNX's gate order: update z, reset r, hidden.
        std::string zr = gate(xp, 0, 2, "zr_in");
        const std::string xh = gate(xp, 2, 1, "h_in");
        std::string rh;  // the recurrent part of the hidden gate
        if (!h.empty()) {
          const int64_t now = linear_before_reset ? rows : 2 * hidden;
          std::string rp = product(h, transposed_rows(*r, d, 0, now), at + "/recurrent");
          if (linear_before_reset && !all_zero(recurrent_h_bias)) {
            Constant rb;
            rb.dims = {rows};
            rb.values = recurrent_h_bias.values;
            rp = emit_node(at + "/recurrent_bias", "Add", {rp, add_constant(at + "/Rb", rb)});
          }
          zr = emit_node(at + "/zr", "Add", {zr, gate(rp, 0, 2, "zr_rec")});
          if (linear_before_reset) rh = gate(rp, 2, 1, "h_rec");
        } else if (linear_before_reset && !all_zero(recurrent_h_bias)) {
          Constant rb;  // the recurrent dense of a zero state is its bias
          rb.dims = {1, 1, hidden};
          rb.values.assign(recurrent_h_bias.values.begin() + 2 * hidden,
                           recurrent_h_bias.values.end());
          rh = add_constant(at + "/Rb_h", rb);
        }
        const std::string zg = emit_node(at + "/z", "Sigmoid", {gate(zr, 0, 1, "z_pre")});
        std::string pre = xh;
        if (linear_before_reset && !rh.empty()) {
          const std::string rg = emit_node(at + "/r", "Sigmoid", {gate(zr, 1, 1, "r_pre")});
          pre = emit_node(at + "/h_pre", "Add", {xh, emit_node(at + "/r_h", "Mul", {rg, rh})});
        } else if (!linear_before_reset && !h.empty()) {
          const std::string rg = emit_node(at + "/r", "Sigmoid", {gate(zr, 1, 1, "r_pre")});
          const std::string reset = emit_node(at + "/r_hprev", "Mul", {rg, h});
          const std::string rec = emit_node(
              at + "/recurrent_h", "MatMul",
              {reset, add_constant(at + "/Rh_t", transposed_rows(*r, d, 2 * hidden, hidden))});
          pre = emit_node(at + "/h_pre", "Add", {xh, rec});
        }
        const std::string hh = emit_node(at + "/h_candidate", "Tanh", {pre});
        // h = (1 - z) * hh + z * h_prev = hh + z * (h_prev - hh)
        if (h.empty()) {
          h = emit_node(at + "/h", "Sub", {hh, emit_node(at + "/z_hh", "Mul", {zg, hh})});
        } else {
          const std::string diff = emit_node(at + "/hprev_hh", "Sub", {h, hh});
          h = emit_node(at + "/h", "Add", {hh, emit_node(at + "/z_diff", "Mul", {zg, diff})});
        }
      }
      y[size_t(t)] = h;
    }
    h_last.push_back(h);
    c_last.push_back(c);
    if (used(0)) {
      const std::string seq = steps == 1 ? y[0] : emit_node(dir + "/Y", "Concat", y, "", 0);
      y_dirs.push_back(emit_node(dir + "/Y_4d", "Reshape",
                                 {seq, add_ints(dir + "/Y_shape", {steps, 1, batch, hidden})}));
    }
  }
  auto join = [&](const std::vector<std::string>& parts, int k, int64_t axis) {
    if (parts.size() == 1) {
      emit_node(base + "/out", "Identity", {parts[0]}, n.output(k));
    } else {
      emit_node(base + "/out", "Concat", parts, n.output(k), axis);
    }
  };
  if (used(0)) join(y_dirs, 0, 1);
  if (used(1)) join(h_last, 1, 0);
  if (used(2) && lstm) join(c_last, 2, 0);
}

}  // namespace npusim::onnx_frontend
