// A measured figure with its spread over repetitions: median and the 10th and 90th percentiles.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tlbsim::native {

struct Spread {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  std::size_t n = 0;  // repetitions
};

// The spread of `samples` (nearest-rank percentiles); all zero when there are none.
Spread spread_of(std::vector<double> samples);

// "12.3 ns (p10 11.9, p90 14.0, n 15)".
std::string describe(const Spread& s, const char* unit = "ns");

}  // namespace tlbsim::native
