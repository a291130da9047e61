// Runs a SoC built by a test to the end of its program: the simulation, then any unit's failure
// rethrown, then every instruction done (tests/memsys and tests/core build small SoCs by hand).
#pragma once

#include <gtest/gtest.h>

#include <exception>

#include "models/execution_unit.hpp"
#include "models/soc.hpp"

namespace npusim {

inline void run(Soc& soc) {
  sc_core::sc_start();
  if (auto failure = ExecutionUnit::failure()) std::rethrow_exception(failure);
  ASSERT_TRUE(soc.scoreboard.all_done());
}

}  // namespace npusim
