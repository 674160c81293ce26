// Off-CPU time by what the task was in (`tlbsim run --offcpu`): each time a task is switched out, the kernel
// functions it was inside (the timeline's spans: a lock's slow path, a fault, a syscall) and its state, and how long
// it stayed out. The real-kernel counterpart is sched:sched_switch with a stack trace per switch, or bcc's
// offcputime; docs/usage.md ("Where tasks wait") gives the recipe, so that both sides can be set side by side.
// Contract: fed by the Tracer's sched_switch (trace/tracer.h), so it sees every switch whatever the trace's window
// and event cap; start() at the measured window's start. A wait is counted, whole, when it ends (the task is switched
// back in) inside the window; the idle tasks (pid 0) are not counted. Observes only.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "sim/time.h"

namespace tlbsim::trace {

class OffCpuProfile {
 public:
  void start(sim::SimTime t) { start_ = t; }
  // `prev_pid` leaves its CPU at `now` in state `state` (ftrace's prev_state: "D", "S", "R+"), inside `stack`
  // (outermost first).
  void switch_out(std::string_view comm, std::uint32_t pid, std::string_view state, std::vector<std::string> stack,
                  sim::SimTime now);
  // `pid` is switched in at `now`: its wait, if it began with switch_out, ends.
  void switch_in(std::uint32_t pid, sim::SimTime now);
  // The waits still open at the end of the run (not counted).
  std::size_t still_out() const { return out_.size(); }

  struct Row {
    std::string comm;
    std::string state;
    std::vector<std::string> stack;
    std::vector<sim::Duration> waits;  // in the order they ended
    sim::Duration total{0};
  };
  // By total time, then count, then the key.
  std::vector<const Row*> rows() const;
  std::uint64_t waits() const;

  // The table `tlbsim run --offcpu` prints; per-op figures divide by `ops` (none when it is 0); `window` names
  // what the waits ended in ("the measured window", "the trace").
  std::string table(std::uint64_t ops, std::string_view window = "the measured window") const;
  nlohmann::json to_json(std::uint64_t ops) const;
  // Folded stacks, one per line in ascending order: "comm;function;...;[state] picoseconds", for flame-graph tools.
  std::string folded() const;

 private:
  struct Out {
    std::string comm;
    std::string state;
    std::vector<std::string> stack;
    sim::SimTime since;
  };
  using Key = std::tuple<std::string, std::string, std::vector<std::string>>;

  sim::SimTime start_{};
  std::map<std::uint32_t, Out> out_;  // by pid: the tasks switched out now
  std::map<Key, Row> rows_;
};

}  // namespace tlbsim::trace
