// Simulated CPU time by call stack (`tlbsim run --profile`): what `perf record -a` would sample on the modeled
// machine, without sampling error. Every interval a CPU spends suspended is charged, whole, to the chain of task
// frames it was suspended in, from the task's root to the awaiting function, with a last frame saying what the
// step waited for: a cache line ("line: NAME"), a spin or poll on one ("spin: NAME", "poll: NAME"), a halt.
// Stacks are rooted in a class, as perf's user/kernel split and its idle and interrupt stacks: [user] for steps
// awaited in workload code, [irq] inside an interrupt handler, [idle] while the CPU runs its idle task (or halts
// or polls), [system] for the rest.
// Contract: attach before the run, start() at the measured window's start, finish() at its end; then read.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cpu.h"
#include "sim/ids.h"
#include "sim/scheduler.h"
#include "sim/time.h"

namespace tlbsim::trace {

enum class ProfileClass : std::uint8_t { kUser = 0, kSystem = 1, kIrq = 2, kIdle = 3 };
inline constexpr std::size_t kProfileClasses = 4;
const char* to_string(ProfileClass c);  // "user", "system", "irq", "idle"

class Profiler final : public sim::CpuObserver {
 public:
  // `line_name` names a cache line; `runs_idle_task` says whether a CPU's current task is its idle task.
  Profiler(std::function<std::string(LineId)> line_name, std::function<bool(CpuId)> runs_idle_task);

  // Observes every CPU of `sched` from now on.
  void attach(sim::Scheduler& sched);
  // Charges only time after `t` (the warm-up's end); earlier charges are dropped.
  void start(sim::SimTime t);
  // Charges the intervals still open on `sched`'s CPUs up to `end`, and stops.
  void finish(sim::Scheduler& sched, sim::SimTime end);

  void on_interval(const sim::Cpu& cpu, const sim::Suspension& s, sim::SimTime end) override;

  // One function's time, as `perf report --children` lists it: with its callees (a stack that holds it more
  // than once counts once) and in itself (as the innermost frame).
  struct Row {
    std::string function;
    sim::Duration children{0};
    sim::Duration self{0};
  };
  // Every function and pseudo-frame, by time with children, then self, then name.
  std::vector<Row> rows() const;
  sim::Duration total() const { return total_; }
  sim::Duration of_class(ProfileClass c) const;
  // Folded stacks ("[system];task;schedule;line: rq.lock 12345"), one per line in ascending order, with the time
  // in picoseconds: the input of flame-graph tools.
  std::string folded() const;
  // The table printed by `tlbsim run --profile`: the split, then the rows with at least `min_share` of the total.
  std::string table(double min_share) const;
  nlohmann::json to_json(double min_share) const;

  // The stack tree, for writers: node 0 is the root; a node's time is what was charged to stacks ending there.
  struct Node {
    std::uint32_t name;  // index into names()
    std::uint32_t parent;
    sim::Duration self{0};
    std::vector<std::uint32_t> children;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::string>& names() const { return names_; }
  // Each node's time with everything under it, by node.
  std::vector<sim::Duration> subtree_times() const;

 private:
  std::uint32_t intern(const char* name);
  std::uint32_t intern(const std::string& name);
  std::uint32_t child(std::uint32_t node, std::uint32_t name);
  void charge(const sim::Cpu& cpu, const sim::Suspension& s, sim::SimTime end);

  std::function<std::string(LineId)> line_name_;
  std::function<bool(CpuId)> runs_idle_task_;
  sim::SimTime start_{};
  bool finished_ = false;
  std::vector<Node> nodes_;
  std::vector<std::string> names_;
  std::unordered_map<const char*, std::uint32_t> by_pointer_;  // __builtin_FUNCTION strings, by address
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::unordered_map<std::uint32_t, std::uint32_t> line_names_;  // line id -> name index of "line: NAME"
  std::unordered_map<std::uint32_t, std::uint32_t> spin_names_;
  std::unordered_map<std::uint32_t, std::uint32_t> poll_names_;
  std::vector<std::uint32_t> frames_;  // scratch: one stack, outermost first
  sim::Duration total_{0};
  std::array<sim::Duration, kProfileClasses> by_class_{};
};

}  // namespace tlbsim::trace
