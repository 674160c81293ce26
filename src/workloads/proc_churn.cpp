// Process churn, the skeleton of the kernel-build workload: N job slots, each a runner process that spawns a
// child the way make does (posix_spawn: clone(CLONE_VM | CLONE_VFORK), so the child borrows the runner's mm until
// exec), waits for it, and spawns the next. The child execs into a fresh mm, touches its pages (anonymous
// faults), and exits: exit_mm, mmput, exit_mmap with the final flush, and the last mmdrop once every CPU that
// borrowed the mm lazily has switched away. Reports children completed per second.
#include <memory>
#include <vector>

#include "kernel/fork.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint64_t kChildPages = 64;  // 256 KiB touched by each child

struct Slot {
  Slot(hw::CoherenceModel& m, kernel::SpinlockKind locks) : wait(m, "signal.wait_chldexit", locks) {}
  kernel::WaitQueue wait;  // vfork completion and child exit (wait4)
  bool vfork_done = false;
  bool child_exited = false;
};

sim::Task<void> child_body(kernel::Sched& s, kernel::TaskStruct& t, kernel::TaskStruct& parent, Slot& slot) {
  kernel::Kernel& k = s.k;
  kernel::MmStruct& mm = k.new_mm();
  co_await kernel::exec_mmap(s, t, mm);
  slot.vfork_done = true;  // mm_release -> complete_vfork_done
  co_await s.wake_up(t, slot.wait);
  kernel::PerCpu& pc = s.cpu_of(t);
  const std::uint64_t addr = co_await kernel::sys_mmap(pc, mm, kChildPages * kernel::kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < kChildPages; ++i) co_await kernel::user_access(pc, mm, addr + i * kernel::kPageSize, true);
  co_await kernel::exit_mm(s, t);
  slot.child_exited = true;  // exit_notify -> __wake_up_parent (__wake_up_sync_key)
  co_await s.wake_up(t, slot.wait, kernel::WF_SYNC);
  (void)parent;
}

sim::Task<void> runner_body(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, CpuId child_cpu,
                            sim::SimTime measure_from, sim::SimTime end, std::uint64_t& children) {
  while (s.cpu_of(t).cpu.now() < end) {
    slot.vfork_done = slot.child_exited = false;
    co_await kernel::mmget(s.cpu_of(t), *t.mm);  // CLONE_VM: the child uses our mm until it execs
    kernel::TaskStruct& child = s.create_task(
        "cc1", t.mm, child_cpu, [&s, &t, &slot](kernel::TaskStruct& c) { return child_body(s, c, t, slot); }, false);
    co_await s.wake_up_new_task(t, child);
    co_await s.wait_event(t, slot.wait, [&slot] { return slot.vfork_done; });
    co_await s.wait_event(t, slot.wait, [&slot] { return slot.child_exited; });
    if (s.cpu_of(t).cpu.now() >= measure_from) ++children;
  }
}

class ProcChurn final : public Workload {
 public:
  std::string metric_name() const override { return "children_per_sec"; }
  std::string unit() const override { return "children/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const std::uint32_t n = k.ncpus();
    if (p.threads == 0 || p.threads > n) {
      throw InputError("--threads: proc_churn runs at most one job per CPU (" + std::to_string(n) + " here)");
    }
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(p.threads, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      slots_.push_back(std::make_unique<Slot>(k.sys().coherence(), k.arch().spinlock_kind()));
      Slot& slot = *slots_.back();
      // The child runs on an idle CPU when there is one (select_idle_sibling), else beside its runner.
      const CpuId runner_cpu{i}, child_cpu{2 * p.threads <= n ? i + p.threads : i};
      kernel::MmStruct& mm = k.new_mm();
      kernel::Sched& s = *sched_;
      std::uint64_t& counter = ops[i];
      s.create_task("make", &mm, runner_cpu, [&s, &slot, child_cpu, from, end, &counter](kernel::TaskStruct& t) {
        return runner_body(s, t, slot, child_cpu, from, end, counter);
      });
    }
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

TLBSIM_REGISTER(Workload, ProcChurn, "proc_churn",
                "process churn (make -jN skeleton): vfork+exec children that touch memory and exit");

}  // namespace
}  // namespace tlbsim::workloads
