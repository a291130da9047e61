// Simulated time is kept in whole cycles of the core clock: every delay is a multiple of one
// period, so converting back to cycles is exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <systemc>

namespace npusim {

class CoreClock {
 public:
  explicit CoreClock(double clock_mhz)
      : period_(static_cast<double>(std::llround(1e6 / clock_mhz)), sc_core::SC_PS) {}
  sc_core::sc_time cycles(uint64_t n) const { return period_ * static_cast<double>(n); }
  uint64_t now() const { return sc_core::sc_time_stamp().value() / period_.value(); }
  uint64_t to_cycles(const sc_core::sc_time& t) const { return t.value() / period_.value(); }
  const sc_core::sc_time& period() const { return period_; }

 private:
  sc_core::sc_time period_;
};

}  // namespace npusim
