// Scenario tests of compaction (mm/compaction.cpp) and the anonymous reverse map it migrates by (mm/rmap.cpp): pages
// found by frame with no lock of the mm, found again after mremap moved them, and the BUG_ON a lost migration entry
// meets.
#include "mm/compaction.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "arch/x86/mm/tlb.h"
#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "mm/mprotect.h"
#include "mm/mremap.h"
#include "mm/rmap.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

KernelConfig profile(const char* name) { return load_kernel_profile(name).config; }

sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> compact(PerCpu& self, std::uint64_t& migrated, sim::SimTime* done = nullptr) {
  migrated = co_await sysctl_compact_memory(self);
  if (done != nullptr) *done = self.cpu.now();
}
sim::Task<void> hold_mmap_lock(PerCpu& self, MmStruct& mm, sim::Duration d) {
  co_await mm.mmap_lock.down_write(self);
  co_await self.cpu.delay(d);
  co_await mm.mmap_lock.up_write(self);
}
sim::Task<void> mremap(PerCpu& self, MmStruct& mm, std::uint64_t from, std::uint64_t len, std::uint64_t to) {
  co_await sys_mremap(self, mm, from, len, to);
}
sim::Task<void> read(PerCpu& self, MmStruct& mm, std::uint64_t addr) { co_await user_access(self, mm, addr, false); }

Pfn pfn_at(const MmStruct& mm, std::uint64_t addr) { return mm.pgd.lookup(vpn_of(addr))->pfn; }

// A fault records page->index as the address in pages (an anonymous VMA's vm_pgoff is its start); compaction moves
// every such page to a frame above all others (compaction_alloc) and maps it where it was, without waiting for the
// mmap_lock writer on cpu1; the old frames are freed.
TEST(Compaction, MovesEveryAnonymousPageWithoutTakingMmapLock) {
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    Scenario s(profile(kernel));
    MmStruct& mm = s.k.new_mm();
    std::uint64_t addr = 0;
    s.run_on(0, map_and_write(s.cpu(0), mm, 3, addr));
    std::vector<Pfn> before;
    for (std::uint64_t i = 0; i < 3; ++i) {
      before.push_back(pfn_at(mm, addr + i * kPageSize));
      const auto r = s.k.frames().anon_rmap(before.back());
      ASSERT_TRUE(r.has_value()) << kernel;
      EXPECT_EQ(r->mm, &mm);
      EXPECT_EQ(r->index, (addr >> kPageShift) + i);
    }
    const std::uint64_t top = s.k.frames().nr_frames();
    std::uint64_t migrated = 0;
    const sim::SimTime held_until = s.cpu(0).cpu.now() + sim::milliseconds(1);
    sim::SimTime done;
    s.cpu(1).cpu.start(hold_mmap_lock(s.cpu(1), mm, sim::milliseconds(1)));
    s.run_on(0, compact(s.cpu(0), migrated, &done));
    EXPECT_EQ(migrated, 3u) << kernel;
    EXPECT_LT(done, held_until) << kernel << ": it waited for mmap_lock";
    for (std::uint64_t i = 0; i < 3; ++i) {
      const Pfn now = pfn_at(mm, addr + i * kPageSize);
      EXPECT_GE(now.get(), top) << kernel << " page " << i;
      EXPECT_EQ(s.k.frames().use(before[i]), FrameUse::kFree) << kernel << " page " << i;
      EXPECT_EQ(s.k.frames().anon_rmap(now)->index, (addr >> kPageShift) + i) << "folio_migrate_mapping";
      EXPECT_FALSE(s.k.frames().page_locked(now) || s.k.frames().page_locked(before[i]));
    }
    EXPECT_TRUE(s.oracle().violations().empty()) << kernel;
  }
}

// mremap keeps page->index and gives the new VMA the old vm_pgoff: the rmap walk finds the page at its new address.
TEST(Compaction, FindsAPageAtTheAddressMremapMovedItTo) {
  Scenario s(profile("linux-6.13"));
  MmStruct& mm = s.k.new_mm();
  std::uint64_t addr = 0;
  s.run_on(0, map_and_write(s.cpu(0), mm, 2, addr));
  const std::uint64_t to = mm.get_unmapped_area(2 * kPageSize);
  s.run_on(0, mremap(s.cpu(0), mm, addr, 2 * kPageSize, to));
  const Pfn moved = pfn_at(mm, to + kPageSize);
  EXPECT_EQ(mm.find_vma(to)->pgoff, addr >> kPageShift);
  std::uint64_t migrated = 0;
  s.run_on(0, compact(s.cpu(0), migrated));
  EXPECT_EQ(migrated, 2u);
  EXPECT_NE(pfn_at(mm, to + kPageSize), moved);
  EXPECT_FALSE(mm.pgd.lookup(vpn_of(addr)).has_value());
}

// change_pte_range makes a writable migration entry readable, so the copy is mapped read-only; a fault on a
// migration entry whose page no migration holds is the BUG_ON of pfn_swap_entry_to_page.
TEST(Compaction, MprotectMakesAMigrationEntryReadableAndALostEntryIsABug) {
  Scenario s(profile("linux-6.13"));
  MmStruct& mm = s.k.new_mm();
  std::uint64_t addr = 0;
  s.run_on(0, map_and_write(s.cpu(0), mm, 1, addr));
  const Pfn page = pfn_at(mm, addr);
  ASSERT_TRUE(s.k.frames().trylock_page(page));  // as migrate_folio_unmap holds it
  mm.pgd.set(vpn_of(addr), Pte{page, false, true, true, true});
  s.run_on(1, [](PerCpu& self, MmStruct& m, std::uint64_t a) -> sim::Task<void> {
    co_await sys_mprotect(self, m, a, kPageSize, false);
  }(s.cpu(1), mm, addr));
  const auto entry = mm.pgd.migration_entry(vpn_of(addr));
  ASSERT_TRUE(entry.has_value());
  EXPECT_FALSE(entry->writable);
  s.k.frames().unlock_page(page);  // the migration ended without finding its entry
  EXPECT_THROW(s.run_on(1, read(s.cpu(1), mm, addr)), std::logic_error);
}

// kcompactd: a kernel thread, run lazily in the mm its CPU last ran (context_switch's enter_lazy_tlb).
sim::Task<void> kcompactd(PerCpu& self, MmStruct& lazy_in, std::uint64_t& migrated) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().enter_lazy_tlb(self, lazy_in);
  co_await self.cpu.local_irq_enable();
  migrated = co_await proactive_compact_node(self, self.k.cpu_to_node(self.id));
}

// kcompactd compacts on its own from v5.9 (proactive_compact_node), its own node only. On x86 its CPU is lazy in the
// mm whose pages it migrates: a flush that other CPUs of the mm share skips it (on_each_cpu_cond_mask's
// tlb_is_not_lazy), but when it is the mm's only CPU the flush is local, and flush_tlb_func's is_lazy branch switches
// it to init_mm, whether the flush is per page (v5.17) or the v6.4 batch's (arch_tlbbatch_flush, v6.13).
TEST(Compaction, KcompactdCompactsItsOwnNodeAndOnX86ItsLazyCpuLeavesTheMm) {
  for (const char* kernel : {"linux-3.3", "linux-4.14-ppc"}) {
    EXPECT_FALSE(has_proactive_compaction(profile(kernel))) << kernel;
  }
  for (const char* kernel : {"linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    EXPECT_TRUE(has_proactive_compaction(profile(kernel))) << kernel;
  }
  for (const char* kernel : {"linux-5.17", "linux-6.13"}) {
    for (const bool shared : {false, true}) {
      Scenario s(profile(kernel));
      std::uint32_t far = 0;  // a CPU of node 1
      while (s.k.cpu_to_node(CpuId{far}) != 1) ++far;
      MmStruct& mm = s.k.new_mm();
      MmStruct& other = s.k.new_mm();
      std::uint64_t here = 0, there = 0;
      s.run_on(0, map_and_write(s.cpu(0), mm, 2, here));
      // Node 1's pages: another process's, or (shared) the same mm's, whose CPU then stays in mm_cpumask.
      MmStruct& far_mm = shared ? mm : other;
      s.run_on(far, map_and_write(s.cpu(far), far_mm, 2, there));
      const Pfn before_here = pfn_at(mm, here), before_there = pfn_at(far_mm, there);
      ASSERT_EQ(s.k.frames().nid(before_there), 1u) << kernel;
      std::uint64_t migrated = 0;
      s.run_on(0, kcompactd(s.cpu(0), mm, migrated));
      EXPECT_EQ(migrated, 2u) << kernel << ": node 0's two pages, not node 1's";
      EXPECT_NE(pfn_at(mm, here), before_here) << kernel;
      EXPECT_EQ(pfn_at(far_mm, there), before_there) << kernel;
      EXPECT_EQ(x86::cpu_tlbstate(s.cpu(0)).loaded_mm, shared ? &mm : &s.k.init_mm())
          << kernel << (shared ? ": the IPIs skip the lazy CPU" : ": the lazy CPU's local flush switches it away");
      EXPECT_TRUE(s.oracle().violations().empty()) << kernel;
    }
  }
  Scenario old(profile("linux-4.14-ppc"), "power9-2s16c-smt4");
  MmStruct& mm = old.k.new_mm();
  std::uint64_t migrated = 0;
  EXPECT_THROW(old.run_on(0, kcompactd(old.cpu(0), mm, migrated)), std::logic_error);
}

// isolate_migratepages_block skips a compound page when compaction has no target order (compact_memory, the
// proactive pass), in every era: a THP stays where it is, and the base pages beside it still move.
TEST(Compaction, LeavesAThpWhereItIs) {
  for (const char* kernel : {"linux-5.17", "linux-6.13"}) {
    Scenario s(profile(kernel));
    MmStruct& mm = s.k.new_mm();
    const std::uint64_t x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.run_on(0, [](PerCpu& self, MmStruct& m, std::uint64_t a) -> sim::Task<void> {
      co_await sys_madvise_hugepage(self, m, a, kHpagePmdSize);
    }(s.cpu(0), mm, x));
    std::uint64_t small = 0;
    s.run_on(0, map_and_write(s.cpu(0), mm, 1, small));
    s.run_on(0, [](PerCpu& self, MmStruct& m, std::uint64_t a) -> sim::Task<void> {
      co_await user_access(self, m, a, true);  // do_huge_pmd_anonymous_page: a THP (a read would map the zero one)
    }(s.cpu(0), mm, x));
    const HugePmd* thp = mm.pgd.huge_pmd(vpn_of(x));
    ASSERT_NE(thp, nullptr) << kernel;
    const Pfn head = thp->page;
    std::uint64_t migrated = 0;
    s.run_on(0, compact(s.cpu(0), migrated));
    EXPECT_EQ(migrated, 1u) << kernel << ": the base page only";
    ASSERT_NE(mm.pgd.huge_pmd(vpn_of(x)), nullptr) << kernel;
    EXPECT_EQ(mm.pgd.huge_pmd(vpn_of(x))->page, head) << kernel;
  }
}

}  // namespace
}  // namespace tlbsim::kernel
