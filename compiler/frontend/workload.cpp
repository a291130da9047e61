#include "compiler/frontend/workload.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "compiler/frontend/json_graph.hpp"
#include "compiler/frontend/onnx_import.hpp"
#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

Graph load_workload(const std::string& spec, std::optional<int> batch) {
  Graph g;
  if (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".onnx") == 0) {
    if (!std::filesystem::exists(spec))
      throw UserError(fmt::format("--workload '{}': no such file", spec));
    g = import_onnx(spec, batch);
    g.channels_first_io = true;
    return g;
  }
  if (const EmbeddedFile* zoo = find_embedded_file("zoo", spec)) {
    std::string origin = fmt::format("workloads/zoo/{}.json", spec);
    g = parse_workload(parse_json_text(zoo->text, origin), origin);
  } else if (std::filesystem::exists(spec)) {
    g = parse_workload(parse_json_file(spec), spec);
  } else {
    throw UserError(fmt::format("--workload '{}': no such file and no such zoo network (zoo: {})",
                                spec, embedded_file_names_joined("zoo")));
  }
  if (batch) g.batch = *batch;
  return g;
}

}  // namespace npusim
