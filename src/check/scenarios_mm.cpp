// Checker scenarios on one or two address spaces: unmapping and madvise racing user accesses, lazy CPUs and
// freed page tables, concurrent flushes of one mm, and context switches (with ASID slot reuse) racing a flush.
// mprotect write-protecting a page that another CPU writes, directly or on its return from lazy TLB mode.
// Each runs the modeled kernel's own syscalls and the architecture's switch_mm through kernel::ArchMmu.
#include <vector>

#include "check/scenario.h"
#include "mm/memory.h"
#include "mm/mprotect.h"

namespace tlbsim::check {

namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;

sim::Task<void> map(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
}

sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await user_touch(self, mm, addr, write);
}

sim::Task<void> madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
}

sim::Task<void> madvise_then_read(PerCpu& self, MmStruct& mm, std::uint64_t mine, std::uint64_t theirs, int reads) {
  co_await kernel::sys_madvise_dontneed(self, mm, mine, kPageSize);
  co_await touch_n(self, mm, theirs, reads);
}

// Both CPUs run one mm and have touched page X; the start every scenario below shares.
struct Shared2 {
  MmStruct* mm = nullptr;
  std::uint64_t x = 0;
  void prepare(ScenarioRun& run, std::uint64_t len) {
    kernel::Kernel& k = run.kernel();
    mm = &k.new_mm();
    run.prepare(0, switch_to(k.percpu(CpuId{0}), *mm));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *mm));
    run.prepare(0, map(k.percpu(CpuId{0}), *mm, len, x));
    run.prepare(0, touch(k.percpu(CpuId{0}), *mm, x, true));
    run.prepare(1, touch(k.percpu(CpuId{1}), *mm, x, true));
  }
};

// cpu0: madvise(MADV_DONTNEED) of page X; cpu1: reads X three times.
class MadviseVsAccess final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, 2 * kPageSize);
    kernel::Kernel& k = run.kernel();
    run.race(0, madvise(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize));
    run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 3));
  }

 private:
  Shared2 s_;
};
TLBSIM_SCENARIO(MadviseVsAccess, "madvise_vs_access",
                "cpu0 madvise(DONTNEED)s a page that cpu1, running the same mm, keeps reading");

// cpu0: munmap of the whole mapping (its page table is freed); cpu1 had switched to a kernel thread and keeps the
// mm loaded lazily, then returns to the mm.
class MunmapLazyTables final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, 4 * kPageSize);
    kernel::Kernel& k = run.kernel();
    run.prepare(1, switch_to_kthread(k.percpu(CpuId{1}), *s_.mm));
    run.race(0, munmap(k.percpu(CpuId{0}), *s_.mm, s_.x));
    run.race(1, kthread_then_back(k.percpu(CpuId{1}), *s_.mm));
  }

 private:
  static sim::Task<void> munmap(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_munmap(self, mm, x, 4 * kPageSize);
  }
  static sim::Task<void> kthread_then_back(PerCpu& self, MmStruct& mm) {
    co_await self.cpu.delay(sim::nanoseconds(200));  // the kernel thread's work
    co_await switch_to(self, mm);
  }
  Shared2 s_;
};
TLBSIM_SCENARIO(MunmapLazyTables, "munmap_lazy_tables",
                "cpu0 munmaps a whole mapping, freeing its page table, while cpu1 is lazy in the mm");

// cpu0 and cpu1 each madvise a different page of the same mm at once; cpu1 then reads cpu0's page.
class ConcurrentMadvise final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, 2 * kPageSize);
    kernel::Kernel& k = run.kernel();
    const std::uint64_t y = s_.x + kPageSize;
    run.prepare(0, touch(k.percpu(CpuId{0}), *s_.mm, y, true));
    run.prepare(1, touch(k.percpu(CpuId{1}), *s_.mm, y, true));
    run.race(0, madvise(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize));
    run.race(1, madvise_then_read(k.percpu(CpuId{1}), *s_.mm, y, s_.x, 1));
  }

 private:
  Shared2 s_;
};
TLBSIM_SCENARIO(ConcurrentMadvise, "concurrent_madvise",
                "cpu0 and cpu1 madvise different pages of one mm at once; cpu1 then reads cpu0's page once");

// Three CPUs on one mm: cpu0 madvises page X while cpu1 keeps reading it and cpu2, lazy in a kernel thread
// (skipped by the flush's lazy filter), returns to the mm and reads X.
class LazyReturnVsMadvise final : public CheckScenario {
 public:
  std::uint32_t cpus() const override { return 3; }
  void start(ScenarioRun& run) override {
    s_.prepare(run, kPageSize);
    kernel::Kernel& k = run.kernel();
    run.prepare(2, switch_to(k.percpu(CpuId{2}), *s_.mm));
    run.prepare(2, touch(k.percpu(CpuId{2}), *s_.mm, s_.x, false));
    run.prepare(2, switch_to_kthread(k.percpu(CpuId{2}), *s_.mm));
    run.race(0, madvise(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize));
    run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 2));
    run.race(2, back_and_read(k.percpu(CpuId{2}), *s_.mm, s_.x));
  }

 private:
  static sim::Task<void> back_and_read(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 1);
  }
  Shared2 s_;
};
TLBSIM_SCENARIO(LazyReturnVsMadvise, "lazy_return_vs_madvise",
                "3 CPUs: cpu0 madvises a page cpu1 reads, while lazy cpu2 returns to the mm and reads it");

// cpu1 leaves the mm for another process and then a kernel thread (lazy in the other process's mm), and switches
// back while cpu0 madvises page X, then reads X twice: its mm_cpumask bit in the mm may still be set (seed 002), so
// only the order of its is_lazy (and loaded_mm) stores before its tlb_gen load makes the flush reach it
// (83b0177a6c48). Without a barrier, a read before the flush's tlb_gen increment may be followed by one after the
// madvise returned. The same with `same_mm`: cpu1 is lazy in the mm itself and returns to it (the smp_mb() of
// switch_mm_irqs_off's was_lazy path).
class LazySwitchVsMadvise : public CheckScenario {
 public:
  explicit LazySwitchVsMadvise(bool same_mm) : same_mm_(same_mm) {}
  void start(ScenarioRun& run) override {
    s_.prepare(run, kPageSize);
    kernel::Kernel& k = run.kernel();
    MmStruct* lazy_in = s_.mm;
    if (!same_mm_) {
      MmStruct& o = k.new_mm();
      std::uint64_t a = 0;
      run.prepare(1, switch_to(k.percpu(CpuId{1}), o));
      run.prepare(1, map(k.percpu(CpuId{1}), o, kPageSize, a));
      run.prepare(1, touch(k.percpu(CpuId{1}), o, a, true));
      lazy_in = &o;
    }
    run.prepare(1, switch_to_kthread(k.percpu(CpuId{1}), *lazy_in));
    run.race(0, madvise(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize));
    run.race(1, back_and_read(k.percpu(CpuId{1}), *s_.mm, s_.x));
  }

 private:
  static sim::Task<void> back_and_read(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 2);
  }
  bool same_mm_;
  Shared2 s_;
};
class LazySwitchOtherVsMadvise final : public LazySwitchVsMadvise {
 public:
  LazySwitchOtherVsMadvise() : LazySwitchVsMadvise(false) {}
};
TLBSIM_SCENARIO(LazySwitchOtherVsMadvise, "lazy_switch_vs_madvise",
                "cpu1, lazy after another process, switches back and reads twice a page that cpu0 madvises");
class LazySwitchSameVsMadvise final : public LazySwitchVsMadvise {
 public:
  LazySwitchSameVsMadvise() : LazySwitchVsMadvise(true) {}
};
TLBSIM_SCENARIO(LazySwitchSameVsMadvise, "lazy_reread_vs_madvise",
                "cpu1, lazy in the mm, returns to it and reads twice a page that cpu0 madvises meanwhile");

// A copy-on-write fault (ptep_clear_flush: a flush outside any mmu_gather) on cpu0 races a madvise on cpu1; cpu1
// then reads the page cpu0 copied. Gathers that overlap are caught up by mm_tlb_flush_nested; this flush is not.
class CowVsMadvise final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    MmStruct& mm = k.new_mm();
    kernel::File& f = k.new_file(kPageSize);
    run.prepare(0, switch_to(k.percpu(CpuId{0}), mm));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), mm));
    run.prepare(0, map_private_file(k.percpu(CpuId{0}), mm, f, p_));
    // q_, the first page of a mapping a leaf table long, lies in another page table than p_ (the mapping just below
    // p_'s ends there): the fault and the madvise take different page-table locks and can overlap.
    run.prepare(0, map(k.percpu(CpuId{0}), mm, (kernel::kPtesPerTable + 1) * kPageSize, q_));
    for (std::uint32_t c = 0; c < 2; ++c) {
      run.prepare(c, touch(k.percpu(CpuId{c}), mm, p_, false));
      run.prepare(c, touch(k.percpu(CpuId{c}), mm, q_, true));
    }
    run.race(0, touch(k.percpu(CpuId{0}), mm, p_, true));
    run.race(1, madvise_then_read(k.percpu(CpuId{1}), mm, q_, p_, 2));
  }

 private:
  static sim::Task<void> map_private_file(PerCpu& self, MmStruct& mm, kernel::File& f, std::uint64_t& addr) {
    addr = co_await kernel::sys_mmap(self, mm, kPageSize, false, &f, 0);
  }
  std::uint64_t p_ = 0, q_ = 0;
};
TLBSIM_SCENARIO(CowVsMadvise, "cow_vs_madvise",
                "cpu0 write-faults a private file page (copy + flush_tlb_page) while cpu1 madvises another page");

// cpu0 madvises page X of a process that cpu1, running another one, switches to for the first time and reads X
// twice: cpu1 sets its mm_cpumask bit as cpu0 clears the PTE and reads the mask (the store -> load pairs that
// switch_mm_irqs_off's smp_mb() and the flush side's barrier order).
class JoinVsMadvise final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    MmStruct& mm = k.new_mm();
    MmStruct& other = k.new_mm();
    std::uint64_t x = 0, a = 0;
    run.prepare(0, switch_to(k.percpu(CpuId{0}), mm));
    run.prepare(0, map(k.percpu(CpuId{0}), mm, kPageSize, x));
    run.prepare(0, touch(k.percpu(CpuId{0}), mm, x, true));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), other));
    run.prepare(1, map(k.percpu(CpuId{1}), other, kPageSize, a));
    run.prepare(1, touch(k.percpu(CpuId{1}), other, a, true));
    run.race(0, madvise(k.percpu(CpuId{0}), mm, x, kPageSize));
    run.race(1, join_and_read(k.percpu(CpuId{1}), mm, x));
  }

 private:
  static sim::Task<void> join_and_read(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 2);
  }
};
TLBSIM_SCENARIO(JoinVsMadvise, "join_vs_madvise",
                "cpu1 switches to a process for the first time and reads twice a page that cpu0 madvises");

// cpu0 madvises page X while cpu1 switches to another process (or through `others` processes, recycling its ASID
// slots) and back, then reads X.
class SwitchVsMadvise : public CheckScenario {
 public:
  explicit SwitchVsMadvise(int others) : others_(others) {}
  void start(ScenarioRun& run) override {
    s_.prepare(run, kPageSize);
    kernel::Kernel& k = run.kernel();
    for (int i = 0; i < others_; ++i) {
      MmStruct& o = k.new_mm();
      std::uint64_t a = 0;
      run.prepare(1, switch_to(k.percpu(CpuId{1}), o));
      run.prepare(1, map(k.percpu(CpuId{1}), o, kPageSize, a));
      run.prepare(1, touch(k.percpu(CpuId{1}), o, a, true));
      others_mm_.push_back(&o);
    }
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *s_.mm));
    run.prepare(1, touch(k.percpu(CpuId{1}), *s_.mm, s_.x, true));
    run.race(0, madvise(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize));
    run.race(1, away_and_back(k.percpu(CpuId{1}), others_mm_, *s_.mm, s_.x));
  }

 private:
  static sim::Task<void> away_and_back(PerCpu& self, std::vector<MmStruct*> others, MmStruct& mm, std::uint64_t x) {
    for (MmStruct* o : others) co_await switch_to(self, *o);
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 2);
  }
  int others_;
  Shared2 s_;
  std::vector<MmStruct*> others_mm_;
};

class SwitchAwayVsMadvise final : public SwitchVsMadvise {
 public:
  SwitchAwayVsMadvise() : SwitchVsMadvise(1) {}
};
TLBSIM_SCENARIO(SwitchAwayVsMadvise, "switch_vs_madvise",
                "cpu1 switches to another process and back while cpu0 madvises a page both had used");

// More processes than x86 has dynamic ASID slots (TLB_NR_DYN_ASIDS = 6): the slot is recycled on the way.
class AsidReuseVsMadvise final : public SwitchVsMadvise {
 public:
  AsidReuseVsMadvise() : SwitchVsMadvise(6) {}
};
TLBSIM_SCENARIO(AsidReuseVsMadvise, "asid_reuse",
                "cpu1 cycles through 6 other processes (recycling ASID slots) and back while cpu0 madvises");

// cpu0 write-protects page X (mprotect PROT_READ) while cpu1 keeps writing it: once the mprotect has returned, a
// write must fault (SIGSEGV), never go through a writable TLB entry.
class MprotectVsWrite final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, 2 * kPageSize);
    kernel::Kernel& k = run.kernel();
    run.race(0, protect(k.percpu(CpuId{0}), *s_.mm, s_.x));
    run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 3, true));
  }
  static sim::Task<void> protect(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_mprotect(self, mm, x, kPageSize, false);
  }

 private:
  Shared2 s_;
};
TLBSIM_SCENARIO(MprotectVsWrite, "mprotect_vs_write",
                "cpu0 mprotects a page read-only while cpu1, running the same mm, keeps writing it");

// cpu1, lazy in a kernel thread with the mm still loaded, returns to the mm and writes page X while cpu0
// write-protects X: the flush skips the lazy CPU, so its return must catch up (tlb_gen, or the lazy shootdown).
class MprotectLazyThenWrite final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, 2 * kPageSize);
    kernel::Kernel& k = run.kernel();
    run.prepare(1, switch_to_kthread(k.percpu(CpuId{1}), *s_.mm));
    run.race(0, MprotectVsWrite::protect(k.percpu(CpuId{0}), *s_.mm, s_.x));
    run.race(1, back_and_write(k.percpu(CpuId{1}), *s_.mm, s_.x));
  }

 private:
  static sim::Task<void> back_and_write(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 2, true);
  }
  Shared2 s_;
};
TLBSIM_SCENARIO(MprotectLazyThenWrite, "mprotect_lazy_then_write",
                "cpu1 returns from lazy TLB mode and writes a page that cpu0 mprotects read-only meanwhile");

}  // namespace

}  // namespace tlbsim::check
