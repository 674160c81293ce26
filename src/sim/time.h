// Simulated time: integer picoseconds in std::chrono types, never floating point.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tlbsim::sim {

// A span of simulated time, in integer picoseconds.
using Duration = std::chrono::duration<std::int64_t, std::pico>;

// The clock of the simulated machine. It has no now(): only a Scheduler knows the current time.
struct SimClock {
  using rep = std::int64_t;
  using period = std::pico;
  using duration = Duration;
  using time_point = std::chrono::time_point<SimClock, Duration>;
  static constexpr bool is_steady = true;
};

// A point in simulated time, measured from the start of the run.
using SimTime = SimClock::time_point;

inline constexpr SimTime kTimeZero{Duration{0}};

constexpr Duration picoseconds(std::int64_t ps) { return Duration{ps}; }
constexpr Duration nanoseconds(std::int64_t ns) { return Duration{ns * 1000}; }
constexpr Duration microseconds(std::int64_t us) { return Duration{us * 1000 * 1000}; }
constexpr Duration milliseconds(std::int64_t ms) { return Duration{ms * 1000 * 1000 * 1000}; }

// Converts a figure in (fractional) nanoseconds, as machine files give it, to integer picoseconds.
// Contract: ns is finite and non-negative; rounding is to the nearest picosecond.
Duration from_nanoseconds(double ns);

// Parses "250ns", "10us", "1.5ms", "2s" (also "ps"); throws std::invalid_argument naming the text.
Duration parse_duration(const std::string& text);

// Formats a duration for humans with a fitting unit, e.g. "12.5 us".
std::string format_duration(Duration d);

constexpr double to_seconds(Duration d) { return static_cast<double>(d.count()) * 1e-12; }
constexpr double to_nanoseconds(Duration d) { return static_cast<double>(d.count()) * 1e-3; }

}  // namespace tlbsim::sim
