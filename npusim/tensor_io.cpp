#include "npusim/tensor_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "arch/activation.hpp"
#include "arch/quant.hpp"
#include "compiler/passes/parameters.hpp"
#include "npusim/simulate.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "support/text_escape.hpp"

namespace npusim {

namespace {

// Channels-last sample dims [(D,) H, W, C] and the permutation to the file's layout.
bool transposed(const Graph& g, const std::string& name, const std::vector<int>& dims) {
  return g.channels_first_io && (dims.size() == 3 || dims.size() == 4) &&
         !g.io_in_onnx_order.count(name);
}

// The file's shape: [batch, sample...], or the sample alone in ONNX's whole-tensor mode.
std::vector<int64_t> file_shape(const Graph& g, const std::string& name,
                                const std::vector<int>& dims, int batch) {
  std::vector<int64_t> shape{batch};
  if (g.io_without_batch) shape.clear();
  if (transposed(g, name, dims)) {
    shape.push_back(dims.back());
    shape.insert(shape.end(), dims.begin(), dims.end() - 1);
  } else {
    shape.insert(shape.end(), dims.begin(), dims.end());
  }
  return shape;
}

// Moves channels between last and first place in every sample ([..., C] <-> [C, ...]).
template <class T>
std::vector<T> move_channels(const std::vector<T>& in, const std::vector<int>& dims, int batch,
                             bool to_last) {
  const uint64_t c = dims.back();
  uint64_t spatial = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) spatial *= dims[i];
  std::vector<T> out(in.size());
  for (int b = 0; b < batch; ++b)
    for (uint64_t ch = 0; ch < c; ++ch)
      for (uint64_t p = 0; p < spatial; ++p) {
        const uint64_t last = (b * spatial + p) * c + ch, first = (b * c + ch) * spatial + p;
        out[to_last ? last : first] = in[to_last ? first : last];
      }
  return out;
}

}  // namespace

namespace {
std::vector<uint8_t> to_bytes(const std::vector<float>& real, const Graph& g) {
  std::vector<uint8_t> out;
  if (g.dtype == DataType::kBf16) {
    out.resize(real.size() * 2);
    for (size_t i = 0; i < real.size(); ++i) {
      const uint16_t h = float_to_bf16_bits(real[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}
std::vector<float> dequantize(const std::vector<int8_t>& q, float scale) {
  std::vector<float> x(q.size());
  for (size_t i = 0; i < q.size(); ++i) x[i] = static_cast<float>(q[i]) * scale;
  return x;
}
}  // namespace

InputBatch random_input(const Graph& g, uint64_t seed) {
  const std::vector<int8_t> q = make_random_input(g, seed);
  InputBatch in;
  in.real = dequantize(q, g.input_scale);
  in.bytes =
      g.dtype == DataType::kBf16 ? to_bytes(in.real, g) : std::vector<uint8_t>(q.begin(), q.end());
  return in;
}

std::vector<float> decode_tensor(const std::vector<uint8_t>& bytes, int element_bytes,
                                 float scale) {
  std::vector<float> real(bytes.size() / element_bytes);
  for (size_t i = 0; i < real.size(); ++i) {
    if (element_bytes == 2) {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      real[i] = bf16_bits_to_float(h);
    } else {
      real[i] = static_cast<float>(static_cast<int8_t>(bytes[i])) * scale;
    }
  }
  return real;
}

BatchFile read_batch_npy(const std::string& flag, const std::string& path, const Graph& g) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{} {}", flag, e.what()));
  }
  const std::vector<int>& dims = g.input_shape.dims;
  const std::vector<int64_t> expected_sample = [&] {
    auto s = file_shape(g, g.input_name, dims, 1);
    if (!g.io_without_batch) s.erase(s.begin());
    return s;
  }();
  if (g.io_without_batch) {
    // Whole-tensor mode: the file is one sample of exactly the model's input shape.
    if (a.shape != expected_sample) {
      throw UserError(
          fmt::format("{} {}: expected an array of shape [{}] (the model's input "
                      "shape), got [{}]",
                      flag, path, fmt::join(expected_sample, ", "), fmt::join(a.shape, ", ")));
    }
    a.shape.insert(a.shape.begin(), 1);
  }
  const std::vector<int64_t> got_sample(a.shape.empty() ? a.shape.begin() : a.shape.begin() + 1,
                                        a.shape.end());
  if (a.shape.empty() || got_sample != expected_sample) {
    throw UserError(fmt::format(
        "{} {}: expected an array of shape [batch, {}] ({} layout), "
        "got [{}]",
        flag, path, fmt::join(expected_sample, ", "),
        g.channels_first_io ? "channels first" : "channels last", fmt::join(a.shape, ", ")));
  }
  BatchFile f;
  f.batch = static_cast<int>(a.shape[0]);
  if (f.batch < 1) throw UserError(fmt::format("{} {}: the batch is empty", flag, path));
  const bool channels_first = transposed(g, g.input_name, dims);
  const std::string origin = fmt::format("{} {}", flag, path);
  if (a.dtype == "int8") {
    f.is_int8 = true;
    f.codes = npy_to_int8(a, origin);
    if (channels_first) f.codes = move_channels(f.codes, dims, f.batch, true);
  } else {
    f.values = npy_to_float32(a, origin);
    for (float v : f.values) {
      if (!std::isfinite(v)) throw UserError(fmt::format("{}: holds NaN or infinity", origin));
    }
    if (channels_first) f.values = move_channels(f.values, dims, f.batch, true);
  }
  return f;
}

std::vector<int8_t> quantize_values(const std::vector<float>& x, float scale) {
  std::vector<int8_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) q[i] = saturate_round(x[i] / scale);
  return q;
}

float calibrate_input_scale(const std::vector<float>& x, const CalibrationOptions& options) {
  const float m = calibration_magnitude(x, options);
  return m > 0.0f ? m / 127.0f : 1.0f / 127.0f;
}

std::vector<float> real_values(const BatchFile& f, float scale) {
  return f.is_int8 ? dequantize(f.codes, scale) : f.values;
}

InputBatch read_input_npy(const std::string& path, Graph& g, bool batch_given,
                          const std::optional<CalibrationOptions>& calibrate_scale) {
  BatchFile f = read_batch_npy("--input", path, g);
  if (g.io_without_batch && batch_given && g.batch != 1) {
    throw UserError(
        fmt::format("--input {}: the model runs as one whole tensor (batch 1), but "
                    "--batch is {}",
                    path, g.batch));
  }
  if (batch_given && f.batch != g.batch) {
    throw UserError(
        fmt::format("--input {}: holds a batch of {}, but --batch is {}", path, f.batch, g.batch));
  }
  g.batch = f.batch;
  InputBatch in;
  if (g.dtype == DataType::kBf16) {
    in.real = real_values(f, g.input_scale);
    in.bytes = to_bytes(in.real, g);
    return in;
  }
  if (!f.is_int8 && calibrate_scale)
    g.input_scale = calibrate_input_scale(f.values, *calibrate_scale);
  in.real = real_values(f, g.input_scale);
  const std::vector<int8_t> q = f.is_int8 ? f.codes : quantize_values(f.values, g.input_scale);
  in.bytes.assign(q.begin(), q.end());
  return in;
}

Tensor stored_tensor(const Graph& g, const std::string& name, const std::vector<int>& dims,
                     int batch, float scale, int element_bytes,
                     const std::vector<uint8_t>& stored) {
  std::vector<float> real = decode_tensor(stored, element_bytes, scale);
  // A tensor with per-row scales (compiler/passes/row_scales.hpp): each row on its own.
  const Layer* p = element_bytes == 1 ? g.producer(name) : nullptr;
  const std::vector<float>* rows = p ? &p->last_stage().out_row_scales : nullptr;
  if (rows != nullptr && !rows->empty() && batch > 0) {
    const size_t sample = real.size() / size_t(batch), row = sample / rows->size();
    for (size_t i = 0; i < real.size(); ++i) {
      real[i] = static_cast<float>(static_cast<int8_t>(stored[i])) * (*rows)[i % sample / row];
    }
  }
  return real_tensor(g, name, dims, batch, std::move(real));
}

namespace {

// `name` with every byte but ASCII letters, digits, '.', '-' and '_' as '_'.
std::string file_stem(const std::string& name) {
  std::string stem = name;
  for (char& ch : stem) {
    const unsigned char b = static_cast<unsigned char>(ch);
    const bool alnum = (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
    if (!alnum && ch != '.' && ch != '-' && ch != '_') ch = '_';
  }
  return stem;
}

}  // namespace

std::vector<std::string> assign_file_names(const std::vector<Tensor*>& tensors) {
  std::set<std::string> taken;
  std::map<std::string, std::string> file_of_name;  // a name given twice gets the same file
  // Names that are their own file name first, so they keep it.
  for (const Tensor* t : tensors) {
    if (file_stem(t->name) == t->name) {
      file_of_name[t->name] = t->name;
      taken.insert(t->name);
    }
  }
  std::vector<std::string> renamed;
  for (Tensor* t : tensors) {
    auto f = file_of_name.find(t->name);
    if (f == file_of_name.end()) {
      const std::string stem = file_stem(t->name);
      std::string file = stem;
      for (int k = 2; taken.count(file); ++k) file = fmt::format("{}~{}", stem, k);
      taken.insert(file);
      f = file_of_name.emplace(t->name, file).first;
      if (file != stem)
        renamed.push_back(fmt::format("{}.npy <- {}", file, printable_text(t->name)));
    }
    t->file_name = f->second;
  }
  return renamed;
}

Tensor real_tensor(const Graph& g, const std::string& name, const std::vector<int>& dims, int batch,
                   std::vector<float> real) {
  Tensor t;
  t.name = name;
  t.file_name = file_stem(name);
  if (transposed(g, name, dims)) real = move_channels(real, dims, batch, false);
  t.shape = file_shape(g, name, dims, batch);
  t.values = std::move(real);
  return t;
}

std::map<std::string, Tensor> program_outputs(const Graph& graph, const Program& program,
                                              const SimulationResult& r) {
  std::map<std::string, Tensor> outputs;
  for (size_t i = 0; i < program.outputs.size() && i < r.outputs.size(); ++i) {
    const auto& out = program.outputs[i];
    outputs.emplace(out.name, stored_tensor(graph, out.name, out.dims, out.batch, out.scale,
                                            out.element_bytes, r.outputs[i]));
  }
  return outputs;
}

std::string functional_mismatch(const SimulationResult& r, const std::string& name) {
  if (!r.check.checked || r.check.within_tolerance) return "";
  return fmt::format(
      "FUNCTIONAL MISMATCH in {} from layer {} on: {} of {} values outside their layer's bound. "
      "This is a bug in npusim.",
      name, r.check.first_mismatch, r.check.bound_exceeded, r.check.compared);
}

}  // namespace npusim
