// will-it-scale tests/context_switch1.c ("Context switch via pipes"): each task creates a partner (a thread in
// threads mode, a process in processes mode) and they pass one byte back and forth over two pipes; the task
// counts 2 iterations per round trip. Tasks are placed as will-it-scale pins them (task i on core i % cores) and
// as the scheduler's idle-sibling search spreads a task and its partner over that core's hardware threads.
#include <memory>
#include <vector>

#include "fs/pipe.h"
#include "kernel/sched/sched.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

struct Pair {
  Pair(hw::CoherenceModel& m, kernel::SpinlockKind locks) : to_child(m, locks), to_parent(m, locks) {}
  kernel::Pipe to_child;
  kernel::Pipe to_parent;
};

sim::Task<void> parent_body(kernel::Sched& s, kernel::TaskStruct& t, Pair& p, sim::SimTime measure_from,
                            sim::SimTime end, std::uint64_t& iterations) {
  while (s.cpu_of(t).cpu.now() < end) {
    co_await kernel::pipe_write(s, t, p.to_child);
    co_await s.exit_to_user_mode(t);
    co_await kernel::pipe_read(s, t, p.to_parent);
    co_await s.exit_to_user_mode(t);
    if (s.cpu_of(t).cpu.now() >= measure_from) iterations += 2;
  }
}

sim::Task<void> child_body(kernel::Sched& s, kernel::TaskStruct& t, Pair& p, sim::SimTime end) {
  while (s.cpu_of(t).cpu.now() < end) {
    co_await kernel::pipe_read(s, t, p.to_child);
    co_await s.exit_to_user_mode(t);
    co_await kernel::pipe_write(s, t, p.to_parent);
    co_await s.exit_to_user_mode(t);
  }
}

template <WisMode kMode>
class ContextSwitch1 final : public Workload {
 public:
  std::string metric_name() const override { return "ops_per_sec"; }
  std::string unit() const override { return "ops/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const auto& topo = k.sys().topology().params();
    const std::uint32_t cores = topo.sockets * topo.cores_per_socket;
    if (p.threads == 0 || p.threads > cores * topo.threads_per_core) {
      throw InputError("--threads: context_switch1 runs at most one task per hardware thread (" +
                       std::to_string(cores * topo.threads_per_core) + " here)");
    }
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(p.threads, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    kernel::MmStruct* shared_mm = kMode == WisMode::kThreads ? &k.new_mm() : nullptr;
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      pairs_.push_back(std::make_unique<Pair>(k.sys().coherence(), k.arch().spinlock_kind()));
      Pair& pair = *pairs_.back();
      const std::uint32_t core = i % cores, slot = i / cores;
      const auto& topology = k.sys().topology();
      const CpuId parent_cpu = topology.cpu_at(core / topo.cores_per_socket, core % topo.cores_per_socket,
                                               (2 * slot) % topo.threads_per_core);
      const CpuId child_cpu = topology.cpu_at(core / topo.cores_per_socket, core % topo.cores_per_socket,
                                              (2 * slot + 1) % topo.threads_per_core);
      kernel::MmStruct* parent_mm = kMode == WisMode::kThreads ? shared_mm : &k.new_mm();
      kernel::MmStruct* child_mm = kMode == WisMode::kThreads ? shared_mm : &k.new_mm();
      kernel::Sched& s = *sched_;
      std::uint64_t& counter = ops[i];
      // will-it-scale pins task i to core i % cores (all its hardware threads); the partner inherits it.
      kernel::Cpumask core_mask(k.ncpus());
      for (std::uint32_t th = 0; th < topo.threads_per_core; ++th) {
        core_mask.set(topology.cpu_at(core / topo.cores_per_socket, core % topo.cores_per_socket, th));
      }
      kernel::TaskStruct& parent =
          s.create_task("context_switch1", parent_mm, parent_cpu, [&s, &pair, from, end, &counter](kernel::TaskStruct& t) {
            return parent_body(s, t, pair, from, end, counter);
          });
      kernel::TaskStruct& child = s.create_task("context_switch1", child_mm, child_cpu,
                                                [&s, &pair, end](kernel::TaskStruct& t) { return child_body(s, t, pair, end); });
      parent.cpus_allowed = core_mask;
      child.cpus_allowed = core_mask;
    }
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
  std::vector<std::unique_ptr<Pair>> pairs_;
};

TLBSIM_REGISTER(Workload, ContextSwitch1<WisMode::kThreads>, "context_switch1",
                "will-it-scale context_switch1, threads mode: a byte ping-ponged over two pipes");
TLBSIM_REGISTER(Workload, ContextSwitch1<WisMode::kProcesses>, "context_switch1_processes",
                "will-it-scale context_switch1, processes mode");

}  // namespace
}  // namespace tlbsim::workloads
