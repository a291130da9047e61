#include "arch/types.hpp"

namespace npusim {

const char* to_string(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::kWeightStationary:
      return "ws";
    case Dataflow::kOutputStationary:
      return "os";
    case Dataflow::kInputStationary:
      return "is";
  }
  return "?";
}

const char* to_string(MatrixUnitKind kind) {
  return kind == MatrixUnitKind::kCube ? "cube" : "systolic";
}

std::optional<Dataflow> parse_dataflow(const std::string& text) {
  if (text == "ws") return Dataflow::kWeightStationary;
  if (text == "os") return Dataflow::kOutputStationary;
  if (text == "is") return Dataflow::kInputStationary;
  return std::nullopt;
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return "int8";
    case DataType::kInt32:
      return "int32";
    case DataType::kBf16:
      return "bf16";
    case DataType::kFp16:
      return "fp16";
    case DataType::kFp32:
      return "fp32";
  }
  return "?";
}

std::optional<DataType> parse_data_type(const std::string& text) {
  if (text == "int8") return DataType::kInt8;
  if (text == "int32") return DataType::kInt32;
  if (text == "bf16") return DataType::kBf16;
  if (text == "fp16") return DataType::kFp16;
  if (text == "fp32") return DataType::kFp32;
  return std::nullopt;
}

int size_bytes(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return 1;
    case DataType::kBf16:
    case DataType::kFp16:
      return 2;
    case DataType::kInt32:
    case DataType::kFp32:
      return 4;
  }
  return 0;
}

}  // namespace npusim
