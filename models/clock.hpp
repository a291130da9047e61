// Simulated time is kept in whole cycles of the core clock: every delay is a multiple of one
// period, so converting back to cycles is exact.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <systemc>

namespace npusim {

class CoreClock {
 public:
  explicit CoreClock(double clock_mhz)
      : period_(static_cast<double>(std::llround(1e6 / clock_mhz)), sc_core::SC_PS),
        exact_cycles_(period_.value() == 0 ? 0 : (uint64_t{1} << 52) / period_.value()) {
    for (uint64_t d = 0; d < kDigit; ++d) {
      for (int k = 0; k < kDigits; ++k) digits_[size_t(k)][d] = exact(d << (kDigitBits * k));
    }
  }
  // In integers while the product is exact in a double (what sc_time's own arithmetic computes
  // then), which is every delay of a run: no int-double conversion on the per-burst path. Delays
  // under 2^18 cycles, those of every burst, are sums of table entries, one per base-64 digit
  // (sc_time::from_value, a library call, would be made twice per burst).
  sc_core::sc_time cycles(uint64_t n) const {
    if (n < kDigit) return digits_[0][n];
    if (n < (uint64_t{1} << (kDigitBits * kDigits)) && n < exact_cycles_) {
      sc_core::sc_time t = digits_[0][n & (kDigit - 1)];
      t += digits_[1][(n >> kDigitBits) & (kDigit - 1)];
      t += digits_[2][n >> (2 * kDigitBits)];
      return t;
    }
    return exact(n);
  }
  uint64_t now() const { return sc_core::sc_time_stamp().value() / period_.value(); }
  uint64_t to_cycles(const sc_core::sc_time& t) const { return t.value() / period_.value(); }
  const sc_core::sc_time& period() const { return period_; }

 private:
  sc_core::sc_time exact(uint64_t n) const {
    if (n < exact_cycles_) return sc_core::sc_time::from_value(period_.value() * n);
    return period_ * static_cast<double>(n);
  }

  sc_core::sc_time period_;
  uint64_t exact_cycles_;  // below it, period * n + 0.5 is exact in a double (sc_time rounds so)
  static constexpr int kDigitBits = 6, kDigits = 3;
  static constexpr uint64_t kDigit = uint64_t{1} << kDigitBits;
  // digits_[k][d] = cycles(d * 64^k)
  std::array<std::array<sc_core::sc_time, kDigit>, kDigits> digits_;
};

}  // namespace npusim
