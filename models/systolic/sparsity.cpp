// N:M sparse tiles (sparsity.hpp).
#include "models/systolic/sparsity.hpp"

#include <fmt/format.h>

#include "support/error.hpp"

namespace npusim::systolic {

int sparse_rows(int k, int n_keep, int m_group) {
  NPUSIM_CHECK(n_keep >= 1 && m_group > n_keep && k >= 0, "systolic: {}:{} sparsity, K = {}",
               n_keep, m_group, k);
  return k / m_group * n_keep + std::min(n_keep, k % m_group);
}

void fail_group(const TileShape& tile, int n, int k0, int n_keep, int m_group) {
  fail_check(__FILE__, __LINE__, "at most N non-zeros per group of a sparse tile",
             fmt::format("systolic: sparse tile {}x{}x{}: column {} has more than {} non-zero "
                         "weights in rows {}..{} ({}:{} sparsity)",
                         tile.m, tile.k, tile.n, n, n_keep, k0, std::min(tile.k, k0 + m_group) - 1,
                         n_keep, m_group));
}

}  // namespace npusim::systolic
