// Fuzz target: the JSON graph reader (parse, checks, shape inference) and the parameters and input
// it generates for an accepted graph (docs/fuzzing.md).
#include "compiler/frontend/json_graph.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/json_reader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npusim::fuzz::expect_user_error_or_success([&] {
    const npusim::json root =
        npusim::parse_json_text(npusim::fuzz::as_text(data, size), "fuzz.json");
    npusim::Graph g = npusim::parse_workload(root, "fuzz.json");
    // Generating values is bounded by what the graph declares; skip the huge ones (a real run
    // would take long too) so the fuzzer keeps its pace.
    uint64_t values = g.input_shape.elements() * uint64_t(g.batch);
    for (const auto& layer : g.layers) {
      values += layer.out_shape.elements() * uint64_t(g.batch);
      if (layer.has_weights()) values += layer.reduction() * uint64_t(layer.filters);
    }
    if (values > (uint64_t{1} << 20)) return;
    npusim::materialize_parameters(g, 1);
    (void)npusim::make_random_input(g, 1);
  });
  return 0;
}
