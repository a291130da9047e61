#include "compiler/frontend/onnx/onnx_tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <type_traits>

namespace npusim::onnx_frontend {

static_assert(std::endian::native == std::endian::little, "raw_data is read as little-endian");

std::string dims_text(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t product(const std::vector<int64_t>& dims, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) n *= dims[i];
  return n;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : fallback;
}
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : fallback;
}
std::string attr_string(const onnx::NodeProto& n, const std::string& name,
                        const std::string& fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : fallback;
}
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                               std::vector<int64_t> fallback) {
  const auto* a = find_attr(n, name);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::string data_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
             : fmt::format("{}", t);
}

// Reads a TensorProto's values; returns an error message, empty when fine.
std::string read_tensor(const onnx::TensorProto& t, Constant& c) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    return "stores its data in an external file, which is not supported (save the model with "
           "its weights inside)";
  }
  c.dims.assign(t.dims().begin(), t.dims().end());
  for (int64_t d : c.dims) {
    if (d < 0) return fmt::format("has a negative dimension in {}", dims_text(c.dims));
  }
  const uint64_t n = c.elements();
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto sample, auto& out) -> std::string {
    using T = decltype(sample);
    if (raw.size() != n * sizeof(T)) {
      return fmt::format("has {} bytes of raw data, expected {} for shape {}", raw.size(),
                         n * sizeof(T), dims_text(c.dims));
    }
    out.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<std::remove_reference_t<decltype(out[0])>>(v);
    }
    return "";
  };
  auto from_field = [&](const auto& field, auto& out) -> std::string {
    if (static_cast<uint64_t>(field.size()) != n) {
      return fmt::format("has {} values, expected {} for shape {}", field.size(), n,
                         dims_text(c.dims));
    }
    out.assign(field.begin(), field.end());
    return "";
  };
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      return t.has_raw_data() ? from_raw(float{}, c.values) : from_field(t.float_data(), c.values);
    case onnx::TensorProto_DataType_DOUBLE:
      return t.has_raw_data() ? from_raw(double{}, c.values)
                              : from_field(t.double_data(), c.values);
    case onnx::TensorProto_DataType_INT64:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(int64_t{}, c.ints) : from_field(t.int64_data(), c.ints);
    case onnx::TensorProto_DataType_INT32:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(int32_t{}, c.ints) : from_field(t.int32_data(), c.ints);
    case onnx::TensorProto_DataType_BOOL:
    case onnx::TensorProto_DataType_UINT8:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(uint8_t{}, c.ints) : from_field(t.int32_data(), c.ints);
    case onnx::TensorProto_DataType_INT8:
      c.is_int = true;
      return t.has_raw_data() ? from_raw(int8_t{}, c.ints) : from_field(t.int32_data(), c.ints);
    default:
      return fmt::format(
          "has data type {}; supported: FLOAT, DOUBLE, INT32, INT64, INT8, "
          "UINT8, BOOL",
          data_type_name(t.data_type()));
  }
}

}  // namespace npusim::onnx_frontend
