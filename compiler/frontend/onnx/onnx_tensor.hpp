// Decoding of ONNX protobuf data: constant tensors (initializers, Constant nodes) and node
// attributes, with the problems a user can act on returned as messages.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::onnx_frontend {

// A constant tensor: an initializer or the output of a Constant node.
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> values;  // float and double tensors
  std::vector<int64_t> ints;  // integer tensors (int32, int64, int8, uint8; bool as 0 / 1)
  bool is_int = false;
  uint64_t elements() const {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
};

std::string dims_text(const std::vector<int64_t>& dims);
int64_t product(const std::vector<int64_t>& dims, size_t from = 0);

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback);
std::string attr_string(const onnx::NodeProto& n, const std::string& name,
                        const std::string& fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                               std::vector<int64_t> fallback);

std::string data_type_name(int t);
// Reads a TensorProto's values; returns an error message, empty when fine.
std::string read_tensor(const onnx::TensorProto& t, Constant& c);

}  // namespace npusim::onnx_frontend
