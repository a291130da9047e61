// Test tool: writes the real-valued parameters a workload runs with (those of its file, or drawn
// from the seed as `npusim run --seed S` draws them) as .npy files, so an independent
// implementation of the network (numpy, torch) can be checked against npusim's outputs.
//   npusim_zoo_parameters WORKLOAD SEED DIR
// DIR/<layer>.weights.npy ([in][out] for dense, [kd][kh][kw][cin/groups][cout] flattened to
// [reduction][filters] for conv), <layer>.bias.npy, <layer>.gamma.npy, <layer>.beta.npy.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "compiler/frontend/workload.hpp"
#include "compiler/passes/parameters.hpp"
#include "support/npy.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: npusim_zoo_parameters WORKLOAD SEED DIR\n";
    return 2;
  }
  using npusim::Layer;
  npusim::Graph g = npusim::load_workload(argv[1], std::nullopt);
  npusim::materialize_parameters(g, std::stoull(argv[2]), npusim::WeightStorage::kStored);
  const std::filesystem::path dir = argv[3];
  std::filesystem::create_directories(dir);
  auto save = [&](const Layer& l, const char* what, const std::vector<int64_t>& shape,
                  const std::vector<float>& v) {
    if (!v.empty())
      npusim::write_npy_float32((dir / (l.name + "." + what + ".npy")).string(), shape, v);
  };
  for (const Layer& l : g.layers) {
    if (l.has_weights()) {
      save(l, "weights", {int64_t(l.reduction()), l.filters}, l.weights);
      save(l, "bias", {l.filters}, l.bias);
    }
    save(l, "gamma", {int64_t(l.gamma.size())}, l.gamma);
    save(l, "beta", {int64_t(l.beta.size())}, l.beta);
  }
  return 0;
}
