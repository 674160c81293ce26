// Scenario tests of khugepaged's collapse (mm/khugepaged.cpp): small pages copied into a THP, the old table flushed
// and deposited, the old pages freed; the refusals; the era's sync IPI.
#include "mm/khugepaged.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

sim::Task<void> enter_and_write(PerCpu& self, MmStruct& mm, std::uint64_t addr, int pages) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  for (int i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> collapse(PerCpu& self, MmStruct& mm, std::uint64_t haddr, bool& ok) {
  ok = co_await collapse_huge_page(self, mm, haddr);
}

// cpu0 has written 3 small pages of a 2 MiB-aligned anonymous mapping, cpu1 the first; then MADV_HUGEPAGE.
struct Small {
  explicit Small(bool hugepage = true) : s(load_kernel_profile("linux-6.13").config), mm(s.k.new_mm()) {
    x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    vma = &mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, enter_and_write(s.cpu(0), mm, x, 3));
    s.run_on(1, enter_and_write(s.cpu(1), mm, x, 1));
    vma->hugepage = hugepage;
  }
  bool run_collapse() {
    bool ok = false;
    s.run_on(0, collapse(s.cpu(0), mm, x, ok));
    return ok;
  }
  Scenario s;
  MmStruct& mm;
  Vma* vma = nullptr;
  std::uint64_t x = 0;
};

TEST(Khugepaged, CollapseCopiesIntoATHpDepositsTheOldTableAndFreesTheOldPages) {
  Small t;
  const Pfn table = t.mm.pgd.table(vpn_of(t.x))->frame;
  const Pfn old = t.mm.pgd.lookup(vpn_of(t.x))->pfn;
  const std::uint64_t frees = t.s.k.frames().frees();
  ASSERT_TRUE(t.run_collapse());
  const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->deposit, table) << "the old PTE table is deposited, not freed";
  EXPECT_EQ(t.s.k.frames().frees() - frees, 3u) << "the three old pages";
  EXPECT_EQ(t.s.k.frames().use(old), FrameUse::kFree);
  EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x)).has_value())
      << "pmdp_collapse_flush reached cpu1";
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

TEST(Khugepaged, ARangeWithoutMadvHugepageIsNotCollapsed) {
  Small t(false);
  EXPECT_FALSE(t.run_collapse());
  EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr);
  EXPECT_NE(t.mm.pgd.table(vpn_of(t.x)), nullptr);
}

TEST(Khugepaged, AFileBackedPteRefusesTheCollapseAndTheTableGoesBack) {
  Small t;
  // A page-cache page mapped into the range (as a private file mapping's unmodified page would be).
  const Pfn cached = t.s.k.frames().alloc(FrameUse::kPageCache);
  t.mm.pgd.set(vpn_of(t.x + 10 * kPageSize), Pte{cached, true, false, false});
  EXPECT_FALSE(t.run_collapse());
  ASSERT_NE(t.mm.pgd.table(vpn_of(t.x)), nullptr) << "pmd_populate of the old table";
  EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.x))->present);
}

// tlb_remove_table_sync_one (v6.1) sends a real IPI where page tables are freed by RCU: powerpc and arm64 always,
// x86 from v6.15 (a37259732a7d; before, only a PARAVIRT kernel, which the model's bare-metal x86 is not).
TEST(Khugepaged, TheSyncIpiIsTheRcuTableFreeArchitecturesFromV6_1) {
  EXPECT_TRUE(collapse_sync_ipi(KernelVersion{6, 2}, Arch::kPowerpc));
  EXPECT_FALSE(collapse_sync_ipi(KernelVersion{4, 14}, Arch::kPowerpc));
  EXPECT_TRUE(collapse_sync_ipi(KernelVersion{6, 5}, Arch::kArm64));
  EXPECT_FALSE(collapse_sync_ipi(KernelVersion{6, 13}, Arch::kX86)) << "bare-metal x86: no RCU table free";
  EXPECT_TRUE(collapse_sync_ipi(KernelVersion{6, 15}, Arch::kX86));
  EXPECT_FALSE(collapse_sync_ipi(KernelVersion{5, 17}, Arch::kX86));
}

// __collapse_huge_page_isolate's reference count check (page_count beyond the mapping's: SCAN_PAGE_COUNT), in every
// era: a page that GUP pinned keeps its range from collapsing, and the table goes back.
TEST(Khugepaged, APinnedPageRefusesTheCollapse) {
  Small t;
  const Pfn pinned = t.mm.pgd.lookup(vpn_of(t.x + kPageSize))->pfn;
  t.s.k.frames().pin(pinned, CpuId{1});
  EXPECT_FALSE(t.run_collapse());
  ASSERT_NE(t.mm.pgd.table(vpn_of(t.x)), nullptr);
  EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.x + kPageSize))->pfn, pinned);
  t.s.k.frames().unpin(pinned);
  EXPECT_TRUE(t.run_collapse());
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::kernel
