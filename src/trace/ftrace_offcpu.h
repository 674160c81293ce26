// A real kernel's off-CPU waits, read from ftrace's text output (`cat /sys/kernel/tracing/trace`) with
// sched:sched_switch enabled and a stack trace per switch (the `stacktrace` trigger): the same table as `tlbsim run
// --offcpu` prints for the model (`tlbsim offcpu FILE`; docs/usage.md, "Where tasks wait").
// Each wait runs from a sched_switch whose prev_pid is the task to the next one whose next_pid is. Its stack is
// reduced to the functions the model's timeline names (model_frames below), outermost first; a wait in none of them
// keeps the innermost function below the scheduler's, and one without a stack trace reads "(no stack trace)".
// Contract: any text either reads or raises InputError naming the origin, the line and what is wrong; every other
// event and comment line is skipped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/offcpu.h"

namespace tlbsim::trace {

struct FtraceOffCpu {
  OffCpuProfile profile;
  std::size_t switches = 0;  // sched_switch events read (all tasks)
  std::size_t stacks = 0;    // stack traces attached to a counted task's switch-out
};

// `comm`: count only the tasks of that name (empty: every task but the idle ones).
FtraceOffCpu read_ftrace_offcpu(std::string_view text, const std::string& origin, const std::string& comm);

// A real stack (innermost first, as ftrace prints it) reduced to the model's frames, outermost first.
std::vector<std::string> model_frames(const std::vector<std::string>& innermost_first);

}  // namespace tlbsim::trace
