// The one table of ONNX operators npusim imports: each default-domain operator with its
// translator (an import_* member of OnnxImporter, one file per family). The table also produces
// the supported-operator list of error messages and docs/onnx.md (a test checks the doc).
#pragma once

#include <string>
#include <vector>

namespace npusim::onnx_frontend {

class OnnxImporter;

struct OnnxTranslator {
  const char* op_type;    // the ONNX operator, default domain
  const char* listed_as;  // how the supported-operator list names it
  void (*translate)(OnnxImporter& importer, int node);
};

// In the order of the supported-operator list.
const std::vector<OnnxTranslator>& onnx_translators();
// Null for an operator npusim does not import.
const OnnxTranslator* find_onnx_translator(const std::string& op_type);
// "Conv, Gemm, MatMul, ...": every entry's `listed_as`.
std::string onnx_supported_operators();

}  // namespace npusim::onnx_frontend
