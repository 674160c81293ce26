// Counterexamples: a violating schedule as a file (the non-default choices of one run of one target), shrunk to
// a minimal set of choices, and replayed as per-CPU columns in kernel terms ending at the violation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check/run.h"
#include "trace/profile.h"

namespace tlbsim::trace {
class Tracer;
}

namespace tlbsim::check {

struct Counterexample {
  CheckTarget target;
  std::vector<Decision> decisions;
  std::string violation;
  std::uint64_t steps = 0;  // exploration steps up to the violation
};

// Delta debugging (ddmin) over the decisions: a smallest set (1-minimal) that still ends in a violation, then
// the decisions that run actually took. At most `max_runs` replays.
Counterexample shrink(const Counterexample& cx, std::uint64_t max_runs = 4000);

// The file: JSON naming the kernel, options, mutations, scenario, machine and the decisions.
std::string to_json_text(const Counterexample& cx);
// Throws InputError "ORIGIN: counterexample file: 'FIELD': WHAT" for a malformed file: a missing, unknown,
// wrong-typed or out-of-range field, unknown names, decision steps that do not increase, or an action that is not
// one of the scenario's (a CPU it does not have).
Counterexample parse_counterexample(const std::string& text, const std::string& origin);

struct Replay {
  bool violation = false;
  std::string what;
  std::string text;  // the interleaving, one row per step, one column per CPU
  // The first decision that did not apply (DecisionChooser::unapplied()); "" when the decisions describe a schedule
  // of the scenario. A file's replay with such a decision is not the run the file recorded.
  std::string unapplied;
  // With `profile`, the simulated CPU time of the replay (setup included) by call stack, as `tlbsim run --profile`.
  std::shared_ptr<trace::Profiler> profile;
};
// Replays deterministically; the same decisions give the same text. With a tracer, the run (setup included) is
// also recorded as a timeline, closed at the run's end; with `profile`, profiled.
Replay replay(const Counterexample& cx, trace::Tracer* tracer = nullptr, bool profile = false);

}  // namespace tlbsim::check
