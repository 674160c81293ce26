// Checker scenarios for transparent huge pages: khugepaged collapsing small pages that another CPU writes; a THP
// split, zapped, mprotected or moved while another CPU uses it through its 2 MiB TLB entry; and NUMA hinting of a
// THP, whose fault migrates it while the other CPU uses it.
#include <memory>
#include <optional>

#include "check/scenario.h"
#include "kernel/sched/fair_numa.h"
#include "mm/gup.h"
#include "mm/huge_memory.h"
#include "mm/khugepaged.h"
#include "mm/memory.h"
#include "mm/mempolicy.h"
#include "mm/migrate.h"
#include "mm/mprotect.h"
#include "mm/mremap.h"

namespace tlbsim::check {

namespace {

using kernel::kHpagePmdSize;
using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;

// One mm that cpu0 and cpu1 run, with a 2 MiB-aligned anonymous writable mapping X of 2 MiB (`hugepage`:
// MADV_HUGEPAGE already).
struct ThpRange {
  MmStruct* mm = nullptr;
  std::uint64_t x = 0;
  kernel::Vma* vma = nullptr;
  void prepare(ScenarioRun& run, bool hugepage) {
    kernel::Kernel& k = run.kernel();
    mm = &k.new_mm();
    x = mm->get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    vma = &mm->insert_vma(kernel::Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    vma->hugepage = hugepage;
    run.prepare(0, switch_to(k.percpu(CpuId{0}), *mm));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *mm));
  }
  // Then cpu0 touches X's first page and cpu1 its second (each a read or a write): the first fault maps a THP or the
  // huge zero page, which both CPUs then cache by a 2 MiB entry.
  void touch_both(ScenarioRun& run, bool write0, bool write1) const {
    kernel::Kernel& k = run.kernel();
    run.prepare(0, touch_n(k.percpu(CpuId{0}), *mm, x, 1, write0));
    run.prepare(1, touch_n(k.percpu(CpuId{1}), *mm, x + kPageSize, 1, write1));
  }
};

// cpu0 and cpu1 have written the first page of X, cpu0 the second too, as small pages; then X is marked
// MADV_HUGEPAGE. cpu0, as khugepaged (a kernel thread, the mm lazily loaded), collapses X into a THP while cpu1 runs
// what the scenario races it with (`racer`) on X's first page.
class ThpCollapseRace : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    r_.prepare(run, false);
    kernel::Kernel& k = run.kernel();
    run.prepare(0, touch_n(k.percpu(CpuId{0}), *r_.mm, r_.x, 1, true));
    run.prepare(0, touch_n(k.percpu(CpuId{0}), *r_.mm, r_.x + kPageSize, 1, true));
    run.prepare(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x, 1, true));
    r_.vma->hugepage = true;
    run.race(0, khugepaged(k.percpu(CpuId{0}), *r_.mm, r_.x));
    run.race(1, racer(k.percpu(CpuId{1}), *r_.mm, r_.x));
  }

 protected:
  virtual sim::Task<void> racer(PerCpu& self, MmStruct& mm, std::uint64_t addr) = 0;

 private:
  static sim::Task<void> khugepaged(PerCpu& self, MmStruct& mm, std::uint64_t haddr) {
    co_await switch_to_kthread(self, mm);
    const bool collapsed = co_await kernel::collapse_huge_page(self, mm, haddr);
    (void)collapsed;
  }
  ThpRange r_;
};

// cpu1 keeps writing the first page: a write must reach the old page before the copy, or fault and wait for the
// collapse and then use the THP, never go through the old translation once the old page is freed.
class ThpCollapseVsAccess final : public ThpCollapseRace {
  sim::Task<void> racer(PerCpu& self, MmStruct& mm, std::uint64_t addr) override {
    co_await touch_n(self, mm, addr, 3, true);
  }
};
TLBSIM_SCENARIO(ThpCollapseVsAccess, "thp_collapse_vs_access",
                "cpu0 (khugepaged) collapses 2 MiB of small pages into a THP while cpu1 keeps writing one of them");

// cpu1, in the mm's task, pins the first page with GUP-fast for writing (as an O_DIRECT read into it would) and holds
// the pin while the I/O runs, past the collapse. GUP-fast runs with interrupts off and without mmap_lock: the
// collapse must see the pin (its reference count check fails) or make GUP-fast give up (the PMD gone, or a recheck),
// never copy and release a page that stays pinned: the pin's writes would be lost.
class ThpCollapseVsGupFast final : public ThpCollapseRace {
  sim::Task<void> racer(PerCpu& self, MmStruct& mm, std::uint64_t addr) override {
    const std::optional<Pfn> page = co_await kernel::pin_user_pages_fast(self, mm, addr, true);
    (void)page;  // never unpinned here: the I/O is still in flight when the scenario ends
  }
};
TLBSIM_SCENARIO(ThpCollapseVsGupFast, "thp_collapse_vs_gup_fast",
                "cpu0 (khugepaged) collapses 2 MiB while cpu1 pins one of its small pages with GUP-fast");

// cpu1 has written the first page of X (its walk cached X's PTE table in its paging-structure cache) and then
// switched to a kernel thread, the mm still loaded (lazy TLB). cpu0, as khugepaged, collapses X into a THP (the old
// table is unlinked and deposited), then, back in the mm's task, madvise(DONTNEED)s the whole THP: zap_huge_pmd frees
// the deposited table. No CPU may still cache a pointer to a page-table page when it is freed, lazy or not: a
// speculative walk could use the reused page.
class ThpCollapseVsLazy final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    r_.prepare(run, false);
    kernel::Kernel& k = run.kernel();
    run.prepare(0, touch_n(k.percpu(CpuId{0}), *r_.mm, r_.x + kPageSize, 1, true));
    run.prepare(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x, 1, true));
    run.prepare(1, switch_to_kthread(k.percpu(CpuId{1}), *r_.mm));
    r_.vma->hugepage = true;
    run.race(0, collapse_then_zap(k.percpu(CpuId{0}), *r_.mm, r_.x));
  }

 private:
  static sim::Task<void> collapse_then_zap(PerCpu& self, MmStruct& mm, std::uint64_t haddr) {
    co_await switch_to_kthread(self, mm);
    const bool collapsed = co_await kernel::collapse_huge_page(self, mm, haddr);
    (void)collapsed;
    co_await switch_to(self, mm);
    co_await kernel::sys_madvise_dontneed(self, mm, haddr, kHpagePmdSize);
  }
  ThpRange r_;
};
TLBSIM_SCENARIO(
    ThpCollapseVsLazy, "thp_collapse_vs_lazy",
    "khugepaged collapses 2 MiB that lazy cpu1 walked, then the THP is zapped and its deposited table freed");

// cpu0 has faulted X in as a THP; cpu1 has read it (a 2 MiB TLB entry). cpu0 then madvise(DONTNEED)s either one
// page of it (the THP is split, the page zapped) or all of it (zap_huge_pmd); cpu1 keeps reading that page, which
// must fault (a fresh zero page) once madvise has returned, never hit the freed page.
class ThpZapRace : public CheckScenario {
 public:
  explicit ThpZapRace(bool whole) : whole_(whole) {}
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.touch_both(run, true, false);
    kernel::Kernel& k = run.kernel();
    const std::uint64_t len = whole_ ? kHpagePmdSize : kPageSize;
    run.race(0, madvise(k.percpu(CpuId{0}), *r_.mm, r_.x + (whole_ ? 0 : kPageSize), len));
    run.race(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x + kPageSize, 3, false));
  }

 private:
  static sim::Task<void> madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
    co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
  }
  bool whole_;
  ThpRange r_;
};

class ThpSplitVsAccess final : public ThpZapRace {
 public:
  ThpSplitVsAccess() : ThpZapRace(false) {}
};
TLBSIM_SCENARIO(ThpSplitVsAccess, "thp_split_vs_access",
                "cpu0 madvises one page of a THP away (split, then zap) while cpu1 reads it through its 2 MiB entry");

class ThpZapVsAccess final : public ThpZapRace {
 public:
  ThpZapVsAccess() : ThpZapRace(true) {}
};
TLBSIM_SCENARIO(ThpZapVsAccess, "thp_zap_vs_access",
                "cpu0 madvises a whole THP away (zap_huge_pmd) while cpu1 reads it through its 2 MiB entry");

// cpu0 has faulted X in as a THP and cpu1 has written it (a writable 2 MiB entry). cpu0 mprotects all of X read-only
// (change_huge_pmd: the PMD changes in place); cpu1 keeps writing, which must fault (SIGSEGV) once mprotect has
// returned, never go through the writable entry.
class ThpMprotectVsWrite final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.touch_both(run, true, true);
    kernel::Kernel& k = run.kernel();
    run.race(0, mprotect(k.percpu(CpuId{0}), *r_.mm, r_.x));
    run.race(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x + kPageSize, 3, true));
  }

 private:
  static sim::Task<void> mprotect(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_mprotect(self, mm, x, kHpagePmdSize, false);
  }
  ThpRange r_;
};
TLBSIM_SCENARIO(ThpMprotectVsWrite, "thp_mprotect_vs_write",
                "cpu0 mprotects a whole THP read-only while cpu1 keeps writing it through its 2 MiB entry");

// cpu0 has faulted X in as a THP and cpu1 has written it (a writable 2 MiB entry). cpu0 mremaps all of X to a
// 2 MiB-aligned Y (move_huge_pmd: the PMD moves whole); cpu1 keeps writing X, which must fault (SIGSEGV: X is unmapped)
// once mremap has returned, never write the THP through its old address.
class ThpMremapVsWrite final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.touch_both(run, true, true);
    kernel::Kernel& k = run.kernel();
    const std::uint64_t y = r_.mm->get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    run.race(0, mremap(k.percpu(CpuId{0}), *r_.mm, r_.x, y));
    run.race(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x + kPageSize, 3, true));
  }

 private:
  static sim::Task<void> mremap(PerCpu& self, MmStruct& mm, std::uint64_t x, std::uint64_t y) {
    co_await kernel::sys_mremap(self, mm, x, kHpagePmdSize, y);
  }
  ThpRange r_;
};
TLBSIM_SCENARIO(ThpMremapVsWrite, "thp_mremap_vs_write",
                "cpu0 mremaps a whole THP to an aligned address (move_huge_pmd) while cpu1 keeps writing it");

// cpu0 and cpu1 have read X, a MADV_HUGEPAGE range whose read fault mapped the huge zero page (both cache its
// read-only 2 MiB entry). cpu0 writes X's second page (the write fault replaces the huge zero PMD: a new THP before
// v5.8, a split and a copied page from it); cpu1 keeps reading that page and the third. Once the write fault has
// returned, neither may be read through the old 2 MiB entry: the second is cpu0's page, the third a new THP's page
// or the small zero page (from v5.8 the copy's flush_tlb_page of the second page also drops the 2 MiB entry on an
// architecture whose invalidation by address drops an entry of any size: the third page is what shows a skipped
// flush of the PMD).
class ThpZeroWpVsRead final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.touch_both(run, false, false);
    kernel::Kernel& k = run.kernel();
    run.race(0, touch_n(k.percpu(CpuId{0}), *r_.mm, r_.x + kPageSize, 1, true));
    run.race(1, reader(k.percpu(CpuId{1}), *r_.mm, r_.x));
  }

 private:
  static sim::Task<void> reader(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    for (int i = 0; i < 2; ++i) {
      co_await touch_n(self, mm, x + kPageSize, 1, false);
      co_await touch_n(self, mm, x + 2 * kPageSize, 1, false);
    }
  }
  ThpRange r_;
};
TLBSIM_SCENARIO(
    ThpZeroWpVsRead, "thp_zero_wp_vs_read",
    "cpu0 writes the huge zero page (its PMD replaced) while cpu1 keeps reading it through its 2 MiB entry");

// cpu0 has faulted X in as a THP (node 0) and cpu1 has written it (a writable 2 MiB entry). cpu0 migrates the mm's
// pages to node 1 (migrate_pages(2): the THP whole by a PMD migration entry where the arch has THP migration, split
// and page by page where not) while cpu1 keeps writing X: no write may reach the old THP once its PMD or PTE is
// gone, and each write after the migration lands in the copy.
class ThpMigrateVsWrite final : public CheckScenario {
 public:
  std::uint32_t nodes() const override { return 2; }
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.touch_both(run, true, true);
    kernel::Kernel& k = run.kernel();
    run.race(0, migrate(k.percpu(CpuId{0}), *r_.mm));
    run.race(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x + kPageSize, 3, true));
  }

 private:
  static sim::Task<void> migrate(PerCpu& self, MmStruct& mm) {
    const std::uint64_t migrated = co_await kernel::sys_migrate_pages(self, mm);
    (void)migrated;
  }
  ThpRange r_;
};
TLBSIM_SCENARIO(ThpMigrateVsWrite, "thp_migrate_vs_write",
                "cpu0 migrates an mm's pages (migrate_pages), a THP among them, while cpu1 keeps writing the THP");

// NUMA hinting of a THP. The mm is two threads' (cpu0 on node 0, cpu1 on node 1); cpu0 has faulted X in as a THP,
// on node 0, and cpu1 has written it (a writable 2 MiB entry). The scan is task_numa_work on cpu0; cpu1's next
// write takes the hinting fault (do_huge_pmd_numa_page), which migrates the THP to node 1 (a first fault). No write
// may reach the old THP through a translation once its PMD is gone: the copy would lose it.
class ThpNumaRace : public CheckScenario {
 public:
  enum class Racer : std::uint8_t { kScan, kLocalFault, kMadvise };
  explicit ThpNumaRace(Racer racer) : racer_(racer) {}
  std::uint32_t nodes() const override { return 2; }
  std::string applies_to(const kernel::KernelConfig& config) const override {
    return kernel::numa_balancing(config.version) ? "" : "NUMA balancing came in v3.8";
  }
  void start(ScenarioRun& run) override {
    r_.prepare(run, true);
    r_.mm->mm_users.value = 2;
    r_.touch_both(run, true, true);
    kernel::Kernel& k = run.kernel();
    PerCpu& cpu0 = k.percpu(CpuId{0});
    if (racer_ == Racer::kScan) {
      run.race(0, scan(cpu0, *r_.mm));
    } else {
      run.prepare(0, scan(cpu0, *r_.mm));
      if (racer_ == Racer::kLocalFault) run.race(0, touch_n(cpu0, *r_.mm, r_.x, 3, true));
      if (racer_ == Racer::kMadvise) run.race(0, madvise_then_write(cpu0, *r_.mm, r_.x));
    }
    run.race(1, touch_n(k.percpu(CpuId{1}), *r_.mm, r_.x + kPageSize, 3, true));
  }

 private:
  static sim::Task<void> scan(PerCpu& self, MmStruct& mm) { co_await kernel::task_numa_work(self, mm); }
  static sim::Task<void> madvise_then_write(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_madvise_dontneed(self, mm, x, kHpagePmdSize);
    co_await touch_n(self, mm, x, 1, true);
  }
  Racer racer_;
  ThpRange r_;
};

// cpu0's scan makes X's PMD a hinting PMD while cpu1 keeps writing X.
class ThpNumaHintingVsWrite final : public ThpNumaRace {
 public:
  ThpNumaHintingVsWrite() : ThpNumaRace(Racer::kScan) {}
};
TLBSIM_SCENARIO(ThpNumaHintingVsWrite, "thp_numa_hinting_vs_write",
                "cpu0's NUMA scan makes a THP's PMD a hinting PMD while cpu1, on the other node, keeps writing it");

// The scan has run. cpu1's write faults and migrates the THP to node 1 while cpu0 writes it too: cpu0's own hinting
// fault, on the THP's node, restores the PMD if it comes while the migration has not yet unmapped it (cpu1's fault
// left a node-1 mark, so cpu0's does not migrate), and cpu0 then caches the old THP: the migration's flush must
// reach it.
class ThpNumaMigrateVsLocalFault final : public ThpNumaRace {
 public:
  ThpNumaMigrateVsLocalFault() : ThpNumaRace(Racer::kLocalFault) {}
};
TLBSIM_SCENARIO(ThpNumaMigrateVsLocalFault, "thp_numa_migrate_vs_local_fault",
                "cpu1's hinting fault migrates a THP while cpu0, on the THP's node, faults on it and writes it");

// The scan has run. cpu1's write faults and migrates the THP while cpu0 madvise(DONTNEED)s all of it (zap_huge_pmd
// of the hinting PMD or of the migration entry) and writes X again (a new THP).
class ThpNumaMigrateVsMadvise final : public ThpNumaRace {
 public:
  ThpNumaMigrateVsMadvise() : ThpNumaRace(Racer::kMadvise) {}
};
TLBSIM_SCENARIO(ThpNumaMigrateVsMadvise, "thp_numa_migrate_vs_madvise",
                "cpu1's hinting fault migrates a THP while cpu0 madvise(DONTNEED)s all of it and writes it again");

}  // namespace

}  // namespace tlbsim::check
