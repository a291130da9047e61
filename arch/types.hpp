// Basic hardware vocabulary shared by the compiler and the models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace npusim {

// How the systolic array keeps one operand in place (SCALE-Sim's naming):
//   ws: weights stay in the PEs, inputs stream through, partial sums flow down.
//   os: each PE owns one output and accumulates it, inputs and weights both stream.
//   is: inputs stay in the PEs, weights stream through.
enum class Dataflow { kWeightStationary, kOutputStationary, kInputStationary };

// What computes a MATMUL tile: a systolic array (docs/systolic_array.md) or a Da Vinci-style cube
// unit that multiplies one M0 x K0 x N0 block per cycle after a pipeline fill.
enum class MatrixUnitKind { kSystolic, kCube };

enum class DataType { kInt8, kInt32, kBf16, kFp16, kFp32 };

const char* to_string(Dataflow dataflow);  // "ws", "os", "is"
std::optional<Dataflow> parse_dataflow(const std::string& text);
const char* to_string(MatrixUnitKind kind);  // "systolic", "cube"
const char* to_string(DataType type);        // "int8", ...
std::optional<DataType> parse_data_type(const std::string& text);
int size_bytes(DataType type);

}  // namespace npusim
