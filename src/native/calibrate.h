// `tlbsim calibrate`: measures this host and writes a machine file for it, in the format of configs/machines and
// loadable by hw::load_machine. What user space cannot measure keeps the default of a built-in machine of the same
// architecture, marked DEFAULT in its source and in a comment above it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "native/host.h"
#include "native/microbench.h"

namespace tlbsim::native {

struct CalibrateOptions {
  BenchScale scale;
  std::string name = "host";  // the machine's name in the file
};

struct MeasuredFigure {
  std::string what;  // e.g. "line transfer CPU 0 <-> CPU 1 (same LLC)"
  Spread spread;
};

struct Calibration {
  HostTopology host;
  std::string base_machine;  // the built-in machine whose defaults fill what was not measured
  std::vector<MeasuredFigure> figures;
  std::string toml;  // the machine file
};

// Measures the host (progress lines go to `progress`). Throws std::runtime_error when the host refuses
// (not Linux, pinning forbidden).
Calibration calibrate_host(const CalibrateOptions& o, std::ostream& progress);

// The machine-file TOML basic string for `s` (quotes and backslashes escaped).
std::string toml_quote(const std::string& s);

}  // namespace tlbsim::native
