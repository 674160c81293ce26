// The mutation suite: each registered mutation of the modeled kernel is run against the scenarios that should
// catch it, and must be caught with a minimal counterexample that replays.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "check/counterexample.h"
#include "check/explore.h"

namespace tlbsim::check {

struct MutationRow {
  std::string mutation;
  std::string area;
  std::string kernel;
  std::string scenario;      // the scenario that caught it (or the last one tried)
  std::string memory_model;  // the memory model it was explored under
  bool caught = false;
  bool replays = false;      // the shrunk counterexample replays the violation
  double seconds = 0;        // wall time to the first violation (exploration only)
  std::uint64_t runs = 0;    // schedules run to catch it
  std::uint64_t decisions = 0;  // forced choices in the minimal counterexample
  std::uint64_t steps = 0;      // its steps up to the violation
  std::string violation;
  Counterexample counterexample;
};

// `names` empty or {"all"}: every mutation. Throws InputError for an unknown name. `explore` gives the strategy
// and its budget per scenario; `model` the memory model (nullopt: each mutation's arch's, arch_memory_model).
std::vector<MutationRow> run_mutation_suite(const std::vector<std::string>& names, const ExploreSpec& explore,
                                            std::optional<hw::MemoryModel> model = std::nullopt);

std::string render_mutation_table(const std::vector<MutationRow>& rows);
nlohmann::json mutation_rows_json(const std::vector<MutationRow>& rows);

}  // namespace tlbsim::check
