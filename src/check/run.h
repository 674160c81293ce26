// One explored run: a scenario on a kernel profile, with the exploring scheduler's choices made by a strategy,
// stopped at the first violation, kernel BUG or deadlock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw/machine.h"
#include "hw/memory.h"
#include "hw/store_buffer.h"
#include "model/config.h"
#include "sim/exploring_scheduler.h"
#include "util/error.h"

namespace tlbsim::kernel {
class Kernel;
}

namespace tlbsim::check {

// What the checker runs: everything but the choices.
struct CheckTarget {
  std::string kernel;    // the profile name or file, as given
  std::string scenario;  // a registered CheckScenario
  std::vector<std::string> options;    // NAME=on|off overrides, as given
  std::vector<std::string> mutations;  // as given
  std::string machine_name;            // as given ("" for the arch's default)
  kernel::KernelConfig config;
  hw::Machine machine;   // with exactly the scenario's CPUs
  // Speculative page walks the hardware may make at any moment, at most this many per run.
  std::uint32_t hardware_budget = 2;
  // A run longer than this many exploration steps is cut off (counted, never a violation).
  std::uint64_t max_steps = 20000;
  // The hardware memory model the run explores (docs/model.md, "Memory ordering").
  hw::MemoryModel memory_model = hw::MemoryModel::kSc;
};

// A scenario that cannot run on the kernel asked for (`check --scenario all` skips it).
class NotApplicable : public InputError {
 public:
  using InputError::InputError;
};

// Loads the profile, applies options and mutations, and shrinks `machine` ("" for the arch's default) to the
// scenario's CPUs (one socket, one LLC). Throws InputError for unknown names, or a scenario that does not apply.
CheckTarget make_target(const std::string& kernel, const std::vector<std::string>& options,
                        const std::vector<std::string>& mutations, const std::string& scenario,
                        const std::string& machine);

// A choice that differs from the default order (the action a timed run would take first).
struct Decision {
  std::uint64_t step = 0;  // exploration step, from 0
  std::string label;       // sim::Action::label()
  bool operator==(const Decision&) const = default;
};

struct Outcome {
  bool violation = false;
  std::string what;                  // the violation, kernel BUG or deadlock
  std::vector<Decision> decisions;   // the run's non-default choices: replaying them replays the run
  std::uint64_t steps = 0;           // exploration steps taken
  bool cut_off = false;              // max_steps reached
};

// Observers for the replay trace; both optional.
struct RunHooks {
  sim::ActionObserver* actions = nullptr;
  hw::AccessObserver* accesses = nullptr;
  // Called once the kernel exists (the trace names lines and mms through it).
  std::function<void(kernel::Kernel&)> on_kernel;
  // Called before the scenario's setup runs, and when the run is over (also after a failed setup) while the
  // kernel still exists: a timeline trace attaches and closes here.
  std::function<void(kernel::Kernel&)> before_setup;
  std::function<void(kernel::Kernel&)> on_end;
};

// The default order, against which a schedule is written as decisions: the CPU that ran last keeps running
// while it can (so each decision is a preemption); otherwise the enabled action with the smallest advisory time,
// the oldest first. Never a hardware action. A store that has just entered its CPU's buffer commits at once (so
// the default order of every memory model is sequentially consistent, and holding a store is a decision); a store
// held already stays held until a decision or a fence commits it, or nothing else can run.
class DefaultOrder {
 public:
  std::size_t pick(const std::vector<sim::Action>& actions) const;
  void ran(const sim::Action& a) {
    if (a.kind == sim::Action::Kind::kStep) last_ = a.cpu.get();
  }

 private:
  std::uint32_t last_ = ~0u;
};

// The memory model the checker explores an arch under unless told otherwise: x86-TSO for x86; sequential
// consistency for powerpc, whose weak model is not built (docs/model.md, "Memory ordering").
hw::MemoryModel arch_memory_model(kernel::Arch arch);

// Runs the target once with `chooser` making every exploration choice.
Outcome run_schedule(const CheckTarget& target, sim::Chooser& chooser, const RunHooks& hooks = {});

// Follows `decisions` (a decision whose action is not enabled at its step falls back to the default, as shrinking
// needs; unapplied() says whether that happened).
class DecisionChooser final : public sim::Chooser {
 public:
  explicit DecisionChooser(std::vector<Decision> decisions) : decisions_(std::move(decisions)) {}
  std::size_t choose(const std::vector<sim::Action>& actions) override;
  // After the run: the first decision that did not apply, as "'decisions[I]' (step S): why" (its action was not
  // offered at its step, or the run ended before its step); "" when every decision applied.
  std::string unapplied() const;

 private:
  std::vector<Decision> decisions_;
  std::size_t next_ = 0;
  std::uint64_t step_ = 0;
  DefaultOrder order_;
  std::string not_offered_;  // the first decision whose action was not offered
};

}  // namespace tlbsim::check
