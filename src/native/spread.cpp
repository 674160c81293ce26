#include "native/spread.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tlbsim::native {

namespace {

double rank(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(i, 1, sorted.size()) - 1];
}

}  // namespace

Spread spread_of(std::vector<double> samples) {
  Spread s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = samples.size();
  s.p10 = rank(samples, 0.1);
  s.p90 = rank(samples, 0.9);
  const std::size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
  return s;
}

std::string describe(const Spread& s, const char* unit) {
  if (s.n == 1) return fmt::format("{:.1f} {} (one value, no spread)", s.median, unit);
  return fmt::format("{:.1f} {} (p10 {:.1f}, p90 {:.1f}, n {})", s.median, unit, s.p10, s.p90, s.n);
}

}  // namespace tlbsim::native
