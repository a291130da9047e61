// libsystemc provides main() and calls sc_main: test binaries linked with SystemC run GoogleTest
// from here. gtest_discover_tests runs each test in a process of its own, so a test may elaborate
// and start one SystemC design.
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

int sc_main(int argc, char* argv[]) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
