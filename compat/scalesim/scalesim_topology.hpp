// SCALE-Sim v2 topology CSVs. Conv rows are
//   name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
// (an optional 9th field is the column stride), GEMM rows are `name, M, N, K,`. SCALE-Sim drops
// the text after the last comma of every row, so every data row must end with a comma.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::scalesim {

enum class TopologyKind { kConv, kGemm };

// One layer as SCALE-Sim sees it: a convolution (a GEMM row becomes the convolution
// ifmap M x K, filter 1 x K, 1 channel, N filters, stride 1).
struct Layer {
  std::string name;
  int64_t ifmap_h = 0;
  int64_t ifmap_w = 0;
  int64_t filter_h = 0;
  int64_t filter_w = 0;
  int64_t channels = 0;
  int64_t num_filters = 0;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
};

// Throws UserErrors naming file, line and field of every malformed row.
std::vector<Layer> read_topology(const std::string& path, TopologyKind kind);
std::vector<Layer> parse_topology(const std::string& text, const std::string& path,
                                  TopologyKind kind);

}  // namespace npusim::scalesim
