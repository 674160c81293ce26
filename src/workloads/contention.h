// The contention microbenchmark: N simulated CPUs repeat one access pattern on modeled cache lines, showing how
// the coherence model makes shared lines stop scaling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "hw/coherence.h"
#include "hw/machine.h"
#include "sim/time.h"

namespace tlbsim::workloads {

// An access pattern, self-registered by name (`tlbsim list patterns`).
// Contract: setup() adds the lines the pattern uses; line_for() is then valid for CPUs below `cpus`.
class ContentionPattern {
 public:
  virtual ~ContentionPattern() = default;
  virtual void setup(hw::CoherenceModel& model, std::uint32_t cpus) = 0;
  virtual hw::Access access() const = 0;
  virtual LineId line_for(CpuId cpu) const = 0;
};

struct ContentionPoint {
  std::uint32_t cpus = 0;
  std::uint64_t ops = 0;
  double ops_per_sec = 0;
  std::vector<std::uint64_t> per_cpu_ops;
  std::uint64_t events = 0;
  hw::LineStats lines;  // summed over the pattern's lines
  double wall_seconds = 0;
};

// Runs `pattern` on the first `cpus` CPUs of `machine` (in Linux numbering) for `duration` of simulated time.
// Throws InputError for an unknown pattern or a CPU count the machine does not have.
ContentionPoint run_contention(const hw::Machine& machine, const std::string& pattern, std::uint32_t cpus,
                               sim::Duration duration, std::uint64_t seed);

nlohmann::json to_json(const ContentionPoint& p);

}  // namespace tlbsim::workloads
