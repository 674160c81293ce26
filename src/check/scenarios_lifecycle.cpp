// Checker scenarios of the mm lifecycle and reclaim: a parent forks children that exec, touch memory and exit
// while the other CPU borrows their mm lazily (exit and __mmdrop racing lazy users), and direct reclaim unmapping
// pages with batched flushes while another CPU reads them. They run the scheduler (kernel/sched/core.cpp), the fork and
// exit paths (kernel/fork.cpp) and reclaim (mm/vmscan.cpp, mm/rmap.cpp) as the simulator does.
#include <memory>

#include "check/scenario.h"
#include "kernel/fork.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "mm/vmscan.h"

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
    sched_ = std::make_unique<Sched>(k, false);  // no tick: every step is the scenario's
    wait_ = std::make_unique<kernel::WaitQueue>(k.sys().coherence(), "wait_chldexit", k.arch().spinlock_kind());
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

// Direct reclaim on cpu0 over the cached pages of one file per mm, mapped MAP_SHARED: mm a (run by cpu0 and cpu1)
// maps `a_pages` pages, mm b (run by cpu1 only) `b_pages`, queued on the LRU in that order. cpu1 keeps reading the
// first page of each of its mms; cpu0 reads a's first page again after reclaiming. Reclaim unmaps with
// TTU_BATCH_FLUSH where the kernel batches.
class Reclaim : public CheckScenario {
 public:
  Reclaim(std::uint64_t a_pages, std::uint64_t b_pages) : a_pages_(a_pages), b_pages_(b_pages) {}
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    vm_ = std::make_unique<kernel::Vmscan>(k, std::vector<std::uint64_t>{a_pages_ + b_pages_}, std::vector<std::uint64_t>{1});
    a_ = map_file(k, a_pages_);
    if (b_pages_ > 0) b_ = map_file(k, b_pages_);
    run.prepare(0, enter(k.percpu(CpuId{0}), *a_.mm, a_.addr, a_pages_));
    run.prepare(1, enter(k.percpu(CpuId{1}), *a_.mm, a_.addr, a_pages_));
    if (b_pages_ > 0) run.prepare(1, enter(k.percpu(CpuId{1}), *b_.mm, b_.addr, b_pages_));
    run.race(0, reclaim_then_read(k.percpu(CpuId{0}), *vm_, a_));
    run.race(1, read(k.percpu(CpuId{1}), a_, b_));
  }

 private:
  struct Mapping {
    MmStruct* mm = nullptr;
    std::uint64_t addr = 0;
  };
  Mapping map_file(kernel::Kernel& k, std::uint64_t pages) {
    Mapping m{&k.new_mm(), 0};
    kernel::File& f = k.new_file(pages * kPageSize);
    m.addr = m.mm->get_unmapped_area(pages * kPageSize);
    m.mm->insert_vma(kernel::Vma{m.addr, m.addr + pages * kPageSize, false, true, &f, 0, nullptr});
    vm_->add_file(f);
    for (std::uint64_t i = 0; i < pages; ++i) vm_->prefill(f, i, 0, true);
    return m;
  }
  static sim::Task<void> enter(kernel::PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t pages) {
    co_await switch_to(self, mm);
    for (std::uint64_t i = 0; i < pages; ++i) co_await user_touch(self, mm, addr + i * kPageSize, false);
  }
  static sim::Task<void> reclaim_then_read(kernel::PerCpu& self, kernel::Vmscan& vm, Mapping a) {
    co_await switch_to(self, *a.mm);
    co_await vm.try_to_free_pages(self);
    co_await user_touch(self, *a.mm, a.addr, false);
  }
  static sim::Task<void> read(kernel::PerCpu& self, Mapping a, Mapping b) {
    for (int i = 0; i < 2; ++i) {
      if (b.mm != nullptr) {
        co_await switch_to(self, *b.mm);
        co_await user_touch(self, *b.mm, b.addr, false);
      }
      co_await switch_to(self, *a.mm);
      co_await user_touch(self, *a.mm, a.addr, false);
    }
  }
  std::uint64_t a_pages_, b_pages_;
  std::unique_ptr<kernel::Vmscan> vm_;
  Mapping a_, b_;
};

class ReclaimVsAccess final : public Reclaim {
 public:
  ReclaimVsAccess() : Reclaim(4, 0) {}
};
TLBSIM_SCENARIO(ReclaimVsAccess, "reclaim_vs_access",
                "cpu0 reclaims file pages (batched unmap flush) of an mm that cpu1 also runs; both read them again");

// reclaim_vs_access on a machine with INVLPGB (AMD Milan): v6.15's arch_tlbbatch_flush broadcasts one INVLPGB of
// every non-global entry and waits with TLBSYNC instead of sending IPIs.
class ReclaimInvlpgb final : public Reclaim {
 public:
  ReclaimInvlpgb() : Reclaim(4, 0) {}
  std::string machine() const override { return "milan-36c"; }
  std::string applies_to(const kernel::KernelConfig& cfg) const override {
    return cfg.arch == kernel::Arch::kX86 ? "" : "INVLPGB is an x86 (AMD) instruction";
  }
};
TLBSIM_SCENARIO(ReclaimInvlpgb, "reclaim_invlpgb",
                "reclaim_vs_access on an AMD Milan: with v6.15 the batched flush is an INVLPGB and a TLBSYNC");

class ReclaimTwoMms final : public Reclaim {
 public:
  ReclaimTwoMms() : Reclaim(2, 1) {}
};
TLBSIM_SCENARIO(ReclaimTwoMms, "reclaim_two_mms",
                "cpu0 reclaims a batch holding two mms' pages (the second mm's once), which cpu1 switches between");

}  // namespace

}  // namespace tlbsim::check
