// One run: a workload on a machine with a kernel, for a simulated duration; its figure, counters and the oracle's
// verdict.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/machine.h"
#include "kernel/kernel.h"
#include "sim/time.h"
#include "trace/offcpu.h"
#include "trace/profile.h"

namespace tlbsim::trace {
class Tracer;
}

namespace tlbsim::workloads {

struct RunSpec {
  std::string kernel = "linux-5.17";      // a built-in kernel profile or a profile file
  std::vector<std::string> options;       // NAME=on|off overrides of the profile's options, in order
  std::string workload = "tlb_flush1";
  std::vector<std::string> params;        // the workload's own parameters, NAME=VALUE (workload_args.h)
  std::uint32_t threads = 1;
  sim::Duration duration = sim::milliseconds(10);
  sim::Duration warmup{-1};  // negative: a tenth of the duration
  std::uint64_t seed = 1;
  // A CPU spinning on one line this long, while others run, stops the run as a livelock (0: never).
  sim::Duration stall_limit = sim::milliseconds(100);
  std::vector<std::string>
      mutations;  // planted bugs (declared in each owner's options.h), to show the oracle catching them
  bool profile = false;  // charge the measured window's CPU time to call stacks (RunOutput::profile)
  bool offcpu = false;   // record where tasks wait off their CPU in the measured window (RunOutput::offcpu)
};

struct RunOutput {
  nlohmann::json json;  // the run's JSON object (machine, kernel, options, workload, ..., violations, events)
  double metric = 0;
  std::size_t violations = 0;
  std::uint64_t events = 0;
  double wall_seconds = 0;
  bool seed_changes_nothing = false;  // no tie set was ordered by the seed and the workload draws nothing from it
  // The counters (json["counters"]) as table rows, in the order their subsystems registered them.
  std::vector<kernel::Stats::Row> counter_rows;
  // With RunSpec::profile: the measured window's simulated CPU time by call stack.
  std::shared_ptr<const trace::Profiler> profile;
  // With RunSpec::offcpu: the measured window's waits off the CPU, by what the task was in.
  std::shared_ptr<const trace::OffCpuProfile> offcpu;
};

// Throws InputError for unknown kernels or workloads and impossible parameters. With a tracer, the run is also
// recorded as a timeline (closed at the run's end); the results are the same as without.
// `progress`, when given, is called now and then during the run with the simulated time reached (from the start,
// warm-up included), the time the run ends at, and the events so far.
using RunProgress = std::function<void(sim::Duration reached, sim::Duration end, std::uint64_t events)>;
RunOutput run_workload(const hw::Machine& machine, const RunSpec& spec, trace::Tracer* tracer = nullptr,
                       const RunProgress& progress = {});

}  // namespace tlbsim::workloads
