// Checker scenarios for PTEs that move rather than go: mremap racing a user of the old address, directly and
// through reclaim, which can free the page at its new address while a CPU still caches the old translation
// (CVE-2018-18281 in the eras before v4.19); mprotect racing reclaim's deferred flush; page migration racing a writer
// of the page and a madvise of it; compaction, which migrates without mmap_lock, racing a writer, an mremap and an
// mprotect; NUMA balancing's hinting PTEs racing a writer (whose fault migrates the page) and a migration.
#include <memory>
#include <vector>

#include "check/scenario.h"
#include "kernel/sched/fair_numa.h"
#include "mm/compaction.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "mm/mempolicy.h"
#include "mm/migrate.h"
#include "mm/mprotect.h"
#include "mm/mremap.h"
#include "mm/pgtable.h"
#include "mm/vmscan.h"

namespace tlbsim::check {

namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;

sim::Task<void> mremap(PerCpu& self, MmStruct& mm, std::uint64_t from, std::uint64_t len, std::uint64_t to) {
  co_await kernel::sys_mremap(self, mm, from, len, to);
}

sim::Task<void> enter_and_read(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await switch_to(self, mm);
  co_await user_touch(self, mm, addr, false);
}

// Both CPUs run one mm and have written page X, the first of a two-page anonymous mapping (cpu0 the second page
// too, when `both_pages`): the start the anonymous scenarios below share.
struct TwoWriters {
  MmStruct* mm = nullptr;
  std::uint64_t x = 0;
  void prepare(ScenarioRun& run, bool both_pages) {
    kernel::Kernel& k = run.kernel();
    mm = &k.new_mm();
    run.prepare(0, switch_to(k.percpu(CpuId{0}), *mm));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *mm));
    run.prepare(0, map(k.percpu(CpuId{0}), *mm, x));
    run.prepare(0, write(k.percpu(CpuId{0}), *mm, x));
    if (both_pages) run.prepare(0, write(k.percpu(CpuId{0}), *mm, x + kPageSize));
    run.prepare(1, write(k.percpu(CpuId{1}), *mm, x));
  }
  static sim::Task<void> map(PerCpu& self, MmStruct& mm, std::uint64_t& addr) {
    addr = co_await kernel::sys_mmap(self, mm, 2 * kPageSize, false, nullptr, 0);
  }
  static sim::Task<void> write(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    co_await user_touch(self, mm, addr, true);
  }
};

// cpu0 mremaps X alone to a free address, so the old VMA is split and X's PTE moves; cpu1 keeps reading X, which
// must fault (SIGSEGV) once mremap has returned, never hit a stale translation.
class MremapVsAccess final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, false);
    kernel::Kernel& k = run.kernel();
    const std::uint64_t y = s_.mm->get_unmapped_area(kPageSize);
    run.race(0, mremap(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize, y));
    run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 3));
  }

 private:
  TwoWriters s_;
};
TLBSIM_SCENARIO(MremapVsAccess, "mremap_vs_access",
                "cpu0 mremaps a page that cpu1, running the same mm, keeps reading at its old address");

// cpu0 has written X and the page after it, Y; cpu1 has written X and read Y. cpu0 mremaps X onto Y with
// MREMAP_FIXED, which unmaps Y first (mremap_to's do_munmap: Y's page is zapped, flushed and freed) and then moves X's
// PTE there. cpu1 keeps reading Y: the old page until the unmap's flush reaches it, then a fault or X's page, never
// Y's old page once it is freed.
class MremapFixedVsAccess final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    s_.prepare(run, true);
    kernel::Kernel& k = run.kernel();
    const std::uint64_t y = s_.x + kPageSize;
    run.prepare(1, touch_n(k.percpu(CpuId{1}), *s_.mm, y, 1));
    run.race(0, mremap(k.percpu(CpuId{0}), *s_.mm, s_.x, kPageSize, y));
    run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, y, 3));
  }

 private:
  TwoWriters s_;
};
TLBSIM_SCENARIO(
    MremapFixedVsAccess, "mremap_fixed_vs_access",
    "cpu0 mremaps a page onto the next one (MREMAP_FIXED unmaps it first) while cpu1 keeps reading that one");

// cpu0 and cpu1 run one mm and have written X, the first page of an anonymous mapping of `kSize` aligned to it; cpu0
// mremaps all of it to another address aligned to it. 2 MiB: the eras that have move_normal_pmd (x86 v5.1+, powerpc
// v5.14+) move the PTE table itself. 1 GiB: the eras that have move_normal_pud (x86 and arm64 v5.11+, powerpc
// v5.14+) move the PUD, with every table under it; with `kThp` X is the first page of a THP (MADV_HUGEPAGE), so a
// PMD that maps a THP moves with the PUD. cpu1 keeps writing X, which must fault (SIGSEGV) once mremap has returned.
template <std::uint64_t kSize, bool kThp>
class MremapAlignedVsAccess final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    mm_ = &k.new_mm();
    x_ = mm_->get_unmapped_area(kSize, kSize);
    mm_->insert_vma(kernel::Vma{x_, x_ + kSize, true, false, nullptr, 0, nullptr});
    const std::uint64_t y = mm_->get_unmapped_area(kSize, kSize);
    run.prepare(0, switch_to(k.percpu(CpuId{0}), *mm_));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *mm_));
    if (kThp) run.prepare(0, hugepage(k.percpu(CpuId{0}), *mm_, x_, kSize));
    run.prepare(0, TwoWriters::write(k.percpu(CpuId{0}), *mm_, x_));
    run.prepare(1, TwoWriters::write(k.percpu(CpuId{1}), *mm_, x_));
    run.race(0, mremap(k.percpu(CpuId{0}), *mm_, x_, kSize, y));
    run.race(1, touch_n(k.percpu(CpuId{1}), *mm_, x_, 3, true));
  }

 private:
  static sim::Task<void> hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
    co_await kernel::sys_madvise_hugepage(self, mm, addr, len);
  }
  MmStruct* mm_ = nullptr;
  std::uint64_t x_ = 0;
};
using MremapPmdVsAccess = MremapAlignedVsAccess<kernel::kHpagePmdSize, false>;
TLBSIM_SCENARIO(MremapPmdVsAccess, "mremap_pmd_vs_access",
                "cpu0 mremaps a 2 MiB-aligned 2 MiB mapping (move_normal_pmd) while cpu1 keeps writing its first page");
using MremapPudVsAccess = MremapAlignedVsAccess<kernel::kPudSize, false>;
TLBSIM_SCENARIO(MremapPudVsAccess, "mremap_pud_vs_access",
                "cpu0 mremaps a 1 GiB-aligned 1 GiB mapping (move_normal_pud) while cpu1 keeps writing its first page");
using MremapPudThpVsAccess = MremapAlignedVsAccess<kernel::kPudSize, true>;
TLBSIM_SCENARIO(MremapPudThpVsAccess, "mremap_pud_thp_vs_access",
                "cpu0 mremaps a 1 GiB-aligned 1 GiB mapping whose first 2 MiB is a THP (the PUD moves it) while cpu1 "
                "keeps writing it");

// One page of a file in the page cache, mapped MAP_SHARED (read-write with `writable`) at X by a new mm, and
// direct reclaim that will free it: the start of the reclaim scenarios below.
struct CachedFilePage {
  std::unique_ptr<kernel::Vmscan> vm;
  MmStruct* mm = nullptr;
  std::uint64_t x = 0;
  void prepare(kernel::Kernel& k, bool writable) {
    vm = std::make_unique<kernel::Vmscan>(k, std::vector<std::uint64_t>{1}, std::vector<std::uint64_t>{1});
    mm = &k.new_mm();
    kernel::File& f = k.new_file(kPageSize);
    x = mm->get_unmapped_area(kPageSize);
    mm->insert_vma(kernel::Vma{x, x + kPageSize, writable, true, &f, 0, nullptr});
    vm->add_file(f);
    vm->prefill(f, 0, 0, true);  // scanned once already: reclaim frees it at its next scan
  }
};

// One page of a file, cached and mapped MAP_SHARED read-only at X by an mm that cpu0 and cpu1 run; both have read
// it. cpu0 mremaps X to Y; cpu1 runs direct reclaim, which finds the page through the file's i_mmap (at Y once it
// has moved), unmaps it there with the flush of Y that reclaim makes, and frees it; cpu1 then reads X again. A clean
// PTE's flush waits for the end of move_page_tables before v4.19, after the PTE lock drops: a CPU that still caches
// X then reads a freed page (Jann Horn's CVE-2018-18281 race, with reclaim in the role of his ftruncate).
class MremapVsReclaim final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    p_.prepare(k, false);
    const std::uint64_t y = p_.mm->get_unmapped_area(kPageSize);
    run.prepare(0, enter_and_read(k.percpu(CpuId{0}), *p_.mm, p_.x));
    run.prepare(1, enter_and_read(k.percpu(CpuId{1}), *p_.mm, p_.x));
    run.race(0, mremap(k.percpu(CpuId{0}), *p_.mm, p_.x, kPageSize, y));
    run.race(1, reclaim_then_read(k.percpu(CpuId{1}), *p_.vm, *p_.mm, p_.x));
  }

 private:
  static sim::Task<void> reclaim_then_read(PerCpu& self, kernel::Vmscan& vm, MmStruct& mm, std::uint64_t x) {
    co_await vm.try_to_free_pages(self);
    co_await touch_n(self, mm, x, 2);
  }
  CachedFilePage p_;
};
TLBSIM_SCENARIO(MremapVsReclaim, "mremap_vs_reclaim",
                "cpu0 mremaps a cached file page while cpu1, which caches its old address, reclaims it and reads");

// One page of a file, cached and mapped MAP_SHARED read-write at X by an mm that cpu0 and cpu1 run; cpu1 has written
// it, so its TLB holds X writable. cpu0 runs direct reclaim, which unmaps the page with its flush deferred to the
// batch where the era batches (x86 v4.3+, powerpc with seed 001); cpu1 mprotects X read-only and writes X again.
// mprotect finds no PTE to change, so only change_pte_range's flush_tlb_batched_pending (v4.13, 3ea277194daa, "mm,
// mprotect: flush TLB if potentially racing with a parallel reclaim leaving stale TLB entries") keeps cpu1 from
// writing through its stale entry after mprotect has returned: Nadav Amit's race as that commit gives it. **S**: the
// model's reclaim keeps no dirty state; the kernel would keep the written page (dirty) where the model frees it
// after the batch's flush. The TLB race is the same.
class MprotectVsReclaim final : public CheckScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    p_.prepare(k, true);
    run.prepare(0, enter_and_read(k.percpu(CpuId{0}), *p_.mm, p_.x));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *p_.mm));
    run.prepare(1, TwoWriters::write(k.percpu(CpuId{1}), *p_.mm, p_.x));
    run.race(0, reclaim(k.percpu(CpuId{0}), *p_.vm));
    run.race(1, protect_then_write(k.percpu(CpuId{1}), *p_.mm, p_.x));
  }

 private:
  static sim::Task<void> reclaim(PerCpu& self, kernel::Vmscan& vm) { co_await vm.try_to_free_pages(self); }
  static sim::Task<void> protect_then_write(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_mprotect(self, mm, x, kPageSize, false);
    co_await user_touch(self, mm, x, true);  // must fault (SIGSEGV): X is read-only now
  }
  CachedFilePage p_;
};
TLBSIM_SCENARIO(MprotectVsReclaim, "mprotect_vs_reclaim",
                "cpu1 mprotects read-only a file page it wrote, then writes it, while cpu0's reclaim unmaps it");

// cpu0 migrates the mm's pages (migrate_pages(2) of its own process); cpu1 keeps writing X: a write must reach the
// old page before the migration entry is made (and so the copy) or fault and wait for the new one, never go
// through a stale entry once the old page is freed.
class MigrateRace : public CheckScenario {
 public:
  explicit MigrateRace(bool madvise) : madvise_(madvise) {}
  void start(ScenarioRun& run) override {
    s_.prepare(run, true);
    kernel::Kernel& k = run.kernel();
    run.race(0, migrate(k.percpu(CpuId{0}), *s_.mm));
    if (madvise_) {
      run.race(1, madvise_then_write(k.percpu(CpuId{1}), *s_.mm, s_.x));
    } else {
      run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 3, true));
    }
  }

 private:
  static sim::Task<void> madvise_then_write(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    co_await user_touch(self, mm, addr + kPageSize, true);
    co_await kernel::sys_madvise_dontneed(self, mm, addr, kPageSize);
    co_await user_touch(self, mm, addr, true);
  }
  static sim::Task<void> migrate(PerCpu& self, MmStruct& mm) { co_await kernel::sys_migrate_pages(self, mm); }
  bool madvise_;
  TwoWriters s_;
};

class MigrateVsAccess final : public MigrateRace {
 public:
  MigrateVsAccess() : MigrateRace(false) {}
};
TLBSIM_SCENARIO(MigrateVsAccess, "migrate_vs_access",
                "cpu0 migrates the pages of an mm (migrate_pages) while cpu1, running it, keeps writing one of them");

class MigrateVsMadvise final : public MigrateRace {
 public:
  MigrateVsMadvise() : MigrateRace(true) {}
};
TLBSIM_SCENARIO(MigrateVsMadvise, "migrate_vs_madvise",
                "cpu0 migrates the pages of an mm while cpu1 madvise(DONTNEED)s one of them and writes it again");

// cpu0 writes /proc/sys/vm/compact_memory: compaction finds X by its frame and its mapping by the reverse map, with
// no lock of the mm. cpu1, running the mm, has written X and then:
// - kAccess: keeps writing X; a write must reach the old page before its migration entry, or fault and wait for the
//   copy, never go through a stale entry once the old page is freed;
// - kMremap: mremaps X and the page after it (both pages cpu0 wrote) to a free address Y and writes both there.
//   mremap takes no rmap lock for a new VMA
//   (need_rmap_locks false) and relies on the rmap walk's order: remove_migration_ptes must find a migration entry
//   at its new address if the move came first, or the write faults on an entry that no migration will remove (BUG);
// - kMprotect: mprotects X read-only, then writes it, which must fault (SIGSEGV). From v6.4 compaction defers its
//   flush (migrate_pages_batch): mprotect finds a migration entry, and only its flush_tlb_batched_pending drops the
//   writable translation cpu1 still caches.
// The migrating side (CompactBy):
// - kSysctl: cpu0's task writes /proc/sys/vm/compact_memory, in the mm's task;
// - kKcompactd: cpu0 switches to kcompactd, the node's compaction thread, whose proactive pass (v5.9+) compacts the
//   node: a kernel thread, it runs lazily in the mm cpu0 had loaded (the flusher itself is lazy);
// - kMigratePages: cpu0 calls migrate_pages(2) on the mm (kMremap only): from v6.7 it holds mmap_lock only while it
//   queues the pages, so mremap races its migration as it races compaction's.
enum class CompactRace { kAccess, kMremap, kMprotect };
enum class CompactBy { kSysctl, kKcompactd, kMigratePages };

template <CompactRace kRace, CompactBy kBy = CompactBy::kSysctl>
class CompactVs final : public CheckScenario {
 public:
  std::string applies_to(const kernel::KernelConfig& config) const override {
    if (kBy == CompactBy::kKcompactd && !kernel::has_proactive_compaction(config)) {
      return "kcompactd compacts on its own from v5.9 (proactive compaction, facd6b8ab7f1); before, only for a "
             "high-order allocation kswapd could not satisfy, which the model never makes";
    }
    return "";
  }
  void start(ScenarioRun& run) override {
    s_.prepare(run, true);
    kernel::Kernel& k = run.kernel();
    PerCpu& cpu1 = k.percpu(CpuId{1});
    PerCpu& cpu0 = k.percpu(CpuId{0});
    run.race(0, kBy == CompactBy::kMigratePages ? migrate(cpu0, *s_.mm)
                : kBy == CompactBy::kKcompactd  ? kcompactd(cpu0, *s_.mm)
                                                : compact(cpu0));
    switch (kRace) {
      case CompactRace::kAccess:
        run.race(1, touch_n(cpu1, *s_.mm, s_.x, 3, true));
        break;
      case CompactRace::kMremap:
        run.race(1, mremap_then_write(cpu1, *s_.mm, s_.x, s_.mm->get_unmapped_area(2 * kPageSize)));
        break;
      case CompactRace::kMprotect:
        run.race(1, protect_then_write(cpu1, *s_.mm, s_.x));
        break;
    }
  }

 private:
  static sim::Task<void> compact(PerCpu& self) { co_await kernel::sysctl_compact_memory(self); }
  static sim::Task<void> kcompactd(PerCpu& self, MmStruct& lazy_in) {
    co_await switch_to_kthread(self, lazy_in);
    co_await kernel::proactive_compact_node(self, self.k.cpu_to_node(self.id));
  }
  static sim::Task<void> migrate(PerCpu& self, MmStruct& mm) { co_await kernel::sys_migrate_pages(self, mm); }
  static sim::Task<void> mremap_then_write(PerCpu& self, MmStruct& mm, std::uint64_t x, std::uint64_t y) {
    co_await kernel::sys_mremap(self, mm, x, 2 * kPageSize, y);
    co_await user_touch(self, mm, y, true);
    co_await user_touch(self, mm, y + kPageSize, true);
  }
  static sim::Task<void> protect_then_write(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_mprotect(self, mm, x, kPageSize, false);
    co_await user_touch(self, mm, x, true);  // must fault (SIGSEGV): X is read-only now
  }
  TwoWriters s_;
};

using CompactVsAccess = CompactVs<CompactRace::kAccess>;
TLBSIM_SCENARIO(CompactVsAccess, "compact_vs_access",
                "cpu0 compacts memory (compact_memory) while cpu1 keeps writing a page of its mm");
using CompactVsMremap = CompactVs<CompactRace::kMremap>;
TLBSIM_SCENARIO(CompactVsMremap, "compact_vs_mremap",
                "cpu0 compacts memory while cpu1 mremaps the pages it wrote to a new address and writes them there");
using MigrateVsMremap = CompactVs<CompactRace::kMremap, CompactBy::kMigratePages>;
TLBSIM_SCENARIO(MigrateVsMremap, "migrate_vs_mremap",
                "cpu0 migrates an mm's pages (migrate_pages) while cpu1 mremaps them to a new address and writes them");
using CompactVsMprotect = CompactVs<CompactRace::kMprotect>;
TLBSIM_SCENARIO(CompactVsMprotect, "compact_vs_mprotect",
                "cpu0 compacts memory while cpu1 mprotects a page it wrote read-only and writes it again");
using KcompactdVsAccess = CompactVs<CompactRace::kAccess, CompactBy::kKcompactd>;
TLBSIM_SCENARIO(KcompactdVsAccess, "kcompactd_vs_access",
                "cpu0 switches to kcompactd (lazy in the mm), whose proactive pass compacts the node, while cpu1 keeps "
                "writing a page of the mm (v5.9+)");
using KcompactdVsMremap = CompactVs<CompactRace::kMremap, CompactBy::kKcompactd>;
TLBSIM_SCENARIO(KcompactdVsMremap, "kcompactd_vs_mremap",
                "cpu0, as kcompactd lazy in the mm, compacts the node while cpu1 mremaps the pages it wrote and writes "
                "them there (v5.9+)");
using KcompactdVsMprotect = CompactVs<CompactRace::kMprotect, CompactBy::kKcompactd>;
TLBSIM_SCENARIO(
    KcompactdVsMprotect, "kcompactd_vs_mprotect",
    "cpu0, as kcompactd lazy in the mm, compacts the node while cpu1 mprotects a page it wrote read-only and "
    "writes it again (v5.9+)");

// cpu0 (node 0) runs the NUMA scanner, task_numa_work, over the mm of two threads, on both nodes; cpu1 (node 1) keeps
// writing X, a page on node 0 that it caches. Once the scan's flush has reached cpu1 its write takes a hinting
// fault (do_numa_page), which migrates X to node 1 (a first fault); a write must never hit a stale translation.
// With `migrate`, cpu1 instead migrates the mm's pages with migrate_pages(2) and then writes X: a migration that
// meets a hinting PTE flushes it only if pte_accessible says it may still be cached (x86: while
// tlb_flush_pending; 20841405940e, v3.13, "mm: fix TLB flush race between migration, and
// change_protection_range").
class NumaHintingRace : public CheckScenario {
 public:
  explicit NumaHintingRace(bool migrate) : migrate_(migrate) {}
  std::uint32_t nodes() const override { return 2; }
  std::string applies_to(const kernel::KernelConfig& config) const override {
    return kernel::numa_balancing(config.version) ? "" : "NUMA balancing came in v3.8";
  }
  void start(ScenarioRun& run) override {
    s_.prepare(run, true);
    s_.mm->mm_users.value = 2;  // two threads of one process (change_pte_range's target_node check)
    kernel::Kernel& k = run.kernel();
    run.race(0, scan(k.percpu(CpuId{0}), *s_.mm));
    if (migrate_) {
      run.race(1, migrate_then_write(k.percpu(CpuId{1}), *s_.mm, s_.x));
    } else {
      run.race(1, touch_n(k.percpu(CpuId{1}), *s_.mm, s_.x, 3, true));
    }
  }

 private:
  static sim::Task<void> scan(PerCpu& self, MmStruct& mm) { co_await kernel::task_numa_work(self, mm); }
  static sim::Task<void> migrate_then_write(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    co_await kernel::sys_migrate_pages(self, mm);
    co_await touch_n(self, mm, addr, 2, true);
  }
  bool migrate_;
  TwoWriters s_;
};

class NumaHintingVsAccess final : public NumaHintingRace {
 public:
  NumaHintingVsAccess() : NumaHintingRace(false) {}
};
TLBSIM_SCENARIO(NumaHintingVsAccess, "numa_hinting_vs_access",
                "cpu0's NUMA scan makes hinting PTEs of an mm while cpu1, on the other node, keeps writing a page");

class NumaHintingVsMigrate final : public NumaHintingRace {
 public:
  NumaHintingVsMigrate() : NumaHintingRace(true) {}
};
TLBSIM_SCENARIO(NumaHintingVsMigrate, "numa_hinting_vs_migrate",
                "cpu0's NUMA scan makes hinting PTEs while cpu1 migrates the mm's pages and writes one it caches");

}  // namespace

}  // namespace tlbsim::check
