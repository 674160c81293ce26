// Checker scenarios of the mm lifecycle and reclaim: a parent forks children that exec, touch memory and exit
// while the other CPU borrows their mm lazily (exit and __mmdrop racing lazy users), and direct reclaim unmapping
// pages with batched flushes while another CPU reads them. They run the scheduler (kernel/sched.cpp), the fork and
// exit paths (kernel/fork.cpp) and reclaim (kernel/vmscan.cpp, kernel/rmap.cpp) as the simulator does.
#include <memory>

#include "check/scenario.h"
#include "kernel/fork.h"
#include "kernel/mm_ops.h"
#include "kernel/sched.h"
#include "kernel/vmscan.h"

namespace tlbsim::check {

namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::Sched;
using kernel::TaskStruct;

// A parent on cpu0 spawns `children` children on cpu1, one after another (vfork + exec: each gets a fresh mm,
// touches two pages and exits); after each, cpu1's idle task borrows the dead child's mm lazily. Then a thread of
// the parent runs on cpu1, which switches cpu1 to a user mm and drops the lazy reference.
class Family : public CheckScenario {
 public:
  explicit Family(int children) : children_(children) {}
  ~Family() override {
    // The tasks' coroutines reference this object: destroy them first.
    sched_.reset();
  }
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    sched_ = std::make_unique<Sched>(k);
    wait_ = std::make_unique<kernel::WaitQueue>(k.sys().coherence(), "wait_chldexit");
    sched_->start();
    MmStruct& mm = k.new_mm();
    sched_->create_task("parent", &mm, CpuId{0}, [this](TaskStruct& t) { return parent(t); });
  }

 private:
  sim::Task<void> child(TaskStruct& t) {
    Sched& s = *sched_;
    MmStruct& mm = s.k.new_mm();
    co_await kernel::exec_mmap(s, t, mm);
    kernel::PerCpu& pc = s.cpu_of(t);
    const std::uint64_t addr = co_await kernel::sys_mmap(pc, mm, 2 * kPageSize, false, nullptr, 0);
    for (int i = 0; i < 2; ++i) co_await kernel::user_access(pc, mm, addr + i * kPageSize, true);
    co_await kernel::exit_mm(s, t);
    exited_ = true;
    co_await s.wake_up(t, *wait_);
  }
  sim::Task<void> thread(TaskStruct& t) {
    Sched& s = *sched_;
    co_await kernel::user_access(s.cpu_of(t), *t.mm, addr_, false);
    co_await kernel::exit_mm(s, t);
    exited_ = true;
    co_await s.wake_up(t, *wait_);
  }
  sim::Task<void> parent(TaskStruct& t) {
    Sched& s = *sched_;
    addr_ = co_await kernel::sys_mmap(s.cpu_of(t), *t.mm, kPageSize, false, nullptr, 0);
    co_await kernel::user_access(s.cpu_of(t), *t.mm, addr_, true);
    for (int i = 0; i <= children_; ++i) {
      exited_ = false;
      co_await kernel::mmget(s.cpu_of(t), *t.mm);
      const bool last = i == children_;
      TaskStruct& c = s.create_task(last ? "thread" : "child", t.mm, CpuId{1}, [this, last](TaskStruct& ct) {
        return last ? thread(ct) : child(ct);
      }, false);
      co_await s.wake_up_new_task(t, c);
      co_await s.wait_event(t, *wait_, [this] { return exited_; });
    }
    for (;;) co_await s.wait_event(t, *wait_, [] { return false; });
  }

  int children_;
  std::unique_ptr<Sched> sched_;
  std::unique_ptr<kernel::WaitQueue> wait_;
  bool exited_ = false;
  std::uint64_t addr_ = 0;
};

class ExitVsLazy final : public Family {
 public:
  ExitVsLazy() : Family(1) {}
};
TLBSIM_SCENARIO(ExitVsLazy, "exit_vs_lazy",
                "a child on cpu1 execs, touches memory and exits; cpu1 borrows its mm lazily until a user task runs");

class ForkExecExit final : public Family {
 public:
  ForkExecExit() : Family(2) {}
};
TLBSIM_SCENARIO(ForkExecExit, "fork_exec_exit",
                "two children in turn fork, exec, touch memory and exit on cpu1 while the parent waits on cpu0");

// cpu0 runs direct reclaim (try_to_free_pages) over a file's cached pages that both CPUs have mapped in one mm;
// cpu1 keeps reading two of them. Reclaim unmaps with TTU_BATCH_FLUSH where the kernel batches.
class ReclaimVsAccess final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    constexpr std::uint64_t kPages = 4;
    vm_ = std::make_unique<kernel::Vmscan>(k, std::vector<std::uint64_t>{kPages}, std::vector<std::uint64_t>{1});
    mm_ = &k.new_mm();
    kernel::File& f = k.new_file(kPages * kPageSize);
    addr_ = mm_->get_unmapped_area(kPages * kPageSize);
    mm_->vmas.push_back(kernel::Vma{addr_, addr_ + kPages * kPageSize, false, true, &f, 0});
    vm_->add_mapping(f, *mm_, addr_, 0);
    for (std::uint64_t i = 0; i < kPages; ++i) vm_->prefill(f, i, 0, true);
    for (std::uint32_t c = 0; c < 2; ++c) {
      kernel::PerCpu& pc = k.percpu(CpuId{c});
      run.prepare(c, enter(pc, *mm_, addr_));
    }
    run.race(0, reclaim(k.percpu(CpuId{0}), *vm_));
    run.race(1, read(k.percpu(CpuId{1}), *mm_, addr_));
  }

 private:
  static sim::Task<void> enter(kernel::PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    self.cpu.local_irq_disable();
    co_await self.k.arch().switch_mm_irqs_off(self, mm);
    co_await self.cpu.local_irq_enable();
    self.k.oracle().set_user_context(self.id, mm.id());
    co_await user_touch(self, mm, addr, false);
    co_await user_touch(self, mm, addr + kPageSize, false);
  }
  static sim::Task<void> reclaim(kernel::PerCpu& self, kernel::Vmscan& vm) { co_await vm.try_to_free_pages(self); }
  static sim::Task<void> read(kernel::PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    for (int i = 0; i < 2; ++i) {
      co_await user_touch(self, mm, addr, false);
      co_await user_touch(self, mm, addr + kPageSize, false);
    }
  }
  std::unique_ptr<kernel::Vmscan> vm_;
  MmStruct* mm_ = nullptr;
  std::uint64_t addr_ = 0;
};
TLBSIM_SCENARIO(ReclaimVsAccess, "reclaim_vs_access",
                "cpu0 reclaims file pages (batched unmap flush) that cpu1, running the same mm, keeps reading");

}  // namespace

}  // namespace tlbsim::check
