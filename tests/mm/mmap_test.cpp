// Scenario tests of munmap (mm/mmap.cpp) on arm64, which does not merge VMAs in its mmu_gather: unmap_vmas flushes
// each VMA's range at its tlb_end_vma, and tlb_finish_mmu flushes the page tables free_pgtables freed.
#include <gtest/gtest.h>

#include "arch/arm64/mm/context.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/mprotect.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

arm64::Arm64Stats& arm64_stats(Scenario& s) { return static_cast<arm64::Arm64Mmu&>(s.k.arch()).stats; }

sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> protect(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_mprotect(self, mm, addr, len, false);
}
sim::Task<void> unmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_munmap(self, mm, addr, len);
}

// One VMA of 4 written pages, alone in its page table: tlb_end_vma's flush (a TLBI VALE1IS per page, leaf only, and
// its DSB ISH), then tlb_finish_mmu's of the freed table (a TLBI VAE1IS, all levels, and a DSB ISH). The same pages
// as two VMAs (the first half read-only) flush each VMA at its own tlb_end_vma: one DSB ISH more.
TEST(Munmap, Arm64FlushesEachVmaAtItsTlbEndVmaAndTheFreedTableAtTheFinish) {
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "two VMAs" : "one VMA");
    Scenario s(load_kernel_profile("linux-6.6-arm64").config, "rpi4-a72-4c");
    MmStruct& mm = s.k.new_mm();
    s.oracle().set_user_context(CpuId{0}, mm.id());
    std::uint64_t addr = 0;
    s.run_on(0, testing::switch_to_mm(s.cpu(0), mm));
    s.run_on(0, map_and_write(s.cpu(0), mm, 4, addr));
    if (split) s.run_on(0, protect(s.cpu(0), mm, addr, 2 * kPageSize));
    ASSERT_EQ(mm.vmas.size(), split ? 2u : 1u);
    const arm64::Arm64Stats before = arm64_stats(s);
    s.run_on(0, unmap(s.cpu(0), mm, addr, 4 * kPageSize));
    const arm64::Arm64Stats& after = arm64_stats(s);
    EXPECT_EQ(after.tlbi_vale1is - before.tlbi_vale1is, 4u);
    EXPECT_EQ(after.tlbi_vae1is - before.tlbi_vae1is, 1u);
    EXPECT_EQ(after.dsb_ish - before.dsb_ish, split ? 3u : 2u);
    EXPECT_TRUE(mm.vmas.empty());
    EXPECT_TRUE(s.oracle().violations().empty());
  }
}

}  // namespace
}  // namespace tlbsim::kernel
