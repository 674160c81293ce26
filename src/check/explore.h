// Exploration strategies: random walk, PCT (probabilistic concurrency testing with bug depth d), and bounded
// exhaustive search (every schedule with at most k preemptions, CHESS-style), each a sequence of runs of one
// target that stops at the first violation or when its budget is spent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "check/run.h"
#include "sim/time.h"

namespace tlbsim::check {

struct ExploreSpec {
  std::string strategy = "pct";  // random | pct | exhaustive
  std::uint64_t budget = 1000;   // runs (schedules); exhaustive: a cap, reported when hit
  double time_limit_s = 0;       // wall-clock cap in seconds; 0: none
  std::uint64_t seed = 1;
  std::uint32_t pct_depth = 3;       // PCT's d: priority change points + 1
  std::uint32_t preemptions = 2;     // exhaustive: the preemption bound
};

struct ExploreResult {
  std::uint64_t runs = 0;          // schedules run
  std::uint64_t steps = 0;         // exploration steps over all runs
  std::uint64_t cut_off = 0;       // runs that hit max_steps
  bool complete = false;           // exhaustive: every schedule within the bound was run
  double wall_s = 0;
  std::optional<Outcome> found;    // the first violating run
  std::uint64_t found_at_run = 0;  // its index, from 1
};

// Throws InputError for an unknown strategy or an absurd parameter.
ExploreResult explore(const CheckTarget& target, const ExploreSpec& spec);

}  // namespace tlbsim::check
