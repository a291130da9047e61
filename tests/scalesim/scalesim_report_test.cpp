// Number formatting of the reports: SCALE-Sim prints with Python's str(), so npusim must too.
#include "compat/scalesim/scalesim_report.hpp"

#include <gtest/gtest.h>

namespace npusim::scalesim {
namespace {

TEST(ScalesimReport, PythonFloatRepr) {
  EXPECT_EQ(python_float(251.0), "251.0");
  EXPECT_EQ(python_float(-50.0), "-50.0");
  EXPECT_EQ(python_float(0.0), "0.0");
  EXPECT_EQ(python_float(41.832669322709165), "41.832669322709165");
  EXPECT_EQ(python_float(72.91666666666666), "72.91666666666666");
  EXPECT_EQ(python_float(0.18421052631578946), "0.18421052631578946");
  EXPECT_EQ(python_float(0.1), "0.1");
  EXPECT_EQ(python_float(0.0001), "0.0001");
  EXPECT_EQ(python_float(0.00001), "1e-05");
  EXPECT_EQ(python_float(1.5e-7), "1.5e-07");
  EXPECT_EQ(python_float(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(python_float(2.5), "2.5");
  EXPECT_EQ(python_float(100.0), "100.0");
}

TEST(ScalesimReport, LayoutMatchesScaleSim) {
  LayerResult l;
  l.total_cycles = 251;
  l.stall_cycles = 0;
  l.overall_util_pct = 41.832669322709165;
  l.mapping_efficiency_pct = 62.5;
  l.compute_util_pct = 41.66666666666666;
  EXPECT_EQ(compute_report({l, l}),
            "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute "
            "Util %,\n"
            "0, 251, 0, 41.832669322709165, 62.5, 41.66666666666666,\n"
            "1, 251, 0, 41.832669322709165, 62.5, 41.66666666666666,\n");
}

}  // namespace
}  // namespace npusim::scalesim
