#include "sim/time.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace tlbsim::sim {

Duration from_nanoseconds(double ns) {
  if (!std::isfinite(ns) || ns < 0) throw std::invalid_argument(fmt::format("invalid duration {} ns", ns));
  return Duration{static_cast<std::int64_t>(std::llround(ns * 1000.0))};
}

Duration parse_duration(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  const std::string number = text.substr(0, pos);
  const std::string unit = text.substr(pos);
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
      number.find('.') != number.rfind('.')) {
    throw std::invalid_argument(fmt::format("'{}' is not a duration (expected e.g. 100us, 2ms, 1s)", text));
  }
  double value = std::stod(number);
  double scale_ps;
  if (unit.empty() && value == 0) return Duration{0};  // zero needs no unit
  if (unit == "ps") scale_ps = 1;
  else if (unit == "ns") scale_ps = 1e3;
  else if (unit == "us") scale_ps = 1e6;
  else if (unit == "ms") scale_ps = 1e9;
  else if (unit == "s") scale_ps = 1e12;
  else throw std::invalid_argument(fmt::format("'{}' has unknown unit '{}' (expected ps, ns, us, ms or s)", text, unit));
  const double ps = value * scale_ps;
  // About 106 days of simulated time fit in int64 picoseconds; anything near that is absurd.
  if (ps > 1e18) throw std::invalid_argument(fmt::format("duration '{}' is too long", text));
  return Duration{static_cast<std::int64_t>(std::llround(ps))};
}

std::string format_duration(Duration d) {
  const double ps = static_cast<double>(d.count());
  const double mag = std::fabs(ps);
  if (mag >= 1e12) return fmt::format("{:.3g} s", ps / 1e12);
  if (mag >= 1e9) return fmt::format("{:.3g} ms", ps / 1e9);
  if (mag >= 1e6) return fmt::format("{:.3g} us", ps / 1e6);
  if (mag >= 1e3) return fmt::format("{:.3g} ns", ps / 1e3);
  return fmt::format("{} ps", d.count());
}

}  // namespace tlbsim::sim
