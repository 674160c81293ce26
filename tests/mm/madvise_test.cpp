// Scenario tests pinning madvise(MADV_PAGEOUT) of shmem (mm/madvise.c, mm/vmscan.c, v6.5/v6.6): every page of the
// range is unmapped, written to swap and freed; the unmap flushes each page at once (v6.5 arm64, ptep_clear_flush)
// or defers the flush to one DSB at the end of shrink_folio_list (v6.6); a dirty PTE flushes before its pageout; and
// arm64's tlb_end_vma flushes the young-bit range.
#include "mm/madvise.h"

#include <gtest/gtest.h>

#include "arch/arm64/mm/context.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/shmem.h"
#include "model/options.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

KernelConfig profile(const char* name) { return load_kernel_profile(name).config; }

arm64::Arm64Stats& arm64_stats(Scenario& s) { return static_cast<arm64::Arm64Mmu&>(s.k.arch()).stats; }

sim::Task<void> mmap_shmem(PerCpu& self, MmStruct& mm, File& file, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, file.size, true, &file, 0);
}
sim::Task<void> touch_all(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t pages, bool write) {
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, write);
}
sim::Task<void> pageout(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_madvise_pageout(self, mm, addr, len);
}

// One task on cpu0 with a shmem mapping of `pages` pages (MAP_SHARED | MAP_ANONYMOUS), every page written.
struct Shmem {
  Shmem(Scenario& s, std::uint64_t pages) : mm(s.k.new_mm()), file(s.k.new_file(pages * kPageSize)), n(pages) {
    file.shmem = true;
    s.run_on(0, testing::switch_to_mm(s.cpu(0), mm));
    s.run_on(0, mmap_shmem(s.cpu(0), mm, file, addr));
    s.run_on(0, touch_all(s.cpu(0), mm, addr, n, true));
  }
  std::uint64_t mapped() const {
    std::uint64_t m = 0;
    for (std::uint64_t i = 0; i < n; ++i) m += mm.pgd.lookup(vpn_of(addr + i * kPageSize)).has_value();
    return m;
  }
  MmStruct& mm;
  File& file;
  std::uint64_t n;
  std::uint64_t addr = 0;
};

TEST(Madvise, PageoutSwapsEveryShmemPageOutAndAReadBringsItBack) {
  Scenario s(profile("linux-6.6-arm64"), "rpi4-a72-4c");
  Shmem m(s, 8);
  ASSERT_EQ(m.mapped(), 8u);
  const std::uint64_t frees = s.k.frames().frees();
  s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 8 * kPageSize));
  EXPECT_EQ(m.mapped(), 0u);
  EXPECT_TRUE(m.file.pages.empty());
  EXPECT_EQ(m.file.swap_entries.size(), 8u);
  EXPECT_EQ(s.k.shmem_swap().stats.pswpout, 8u);
  EXPECT_EQ(s.k.frames().frees(), frees + 8);  // freed after the flush
  // Each read faults the page back in from swap: one major fault each, the swap slot freed.
  s.run_on(0, touch_all(s.cpu(0), m.mm, m.addr, 3, false));
  EXPECT_EQ(s.k.shmem_swap().stats.pswpin, 3u);
  EXPECT_EQ(s.k.shmem_swap().stats.pgmajfault, 3u);
  EXPECT_EQ(m.file.swap_entries.size(), 5u);
  EXPECT_EQ(m.file.pages.size(), 3u);
  EXPECT_EQ(m.mapped(), 3u);
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Madvise, TwoFaultsOnOneSwappedPageReadItInOnce) {
  Scenario s(profile("linux-6.6-arm64"), "rpi4-a72-4c");
  Shmem m(s, 1);
  s.run_on(1, testing::switch_to_mm(s.cpu(1), m.mm));
  s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, kPageSize));
  const std::uint64_t frees = s.k.frames().frees();
  // Both CPUs fault on the page at once: the page is read in once and mapped once (the model's faults hold the PTE
  // lock across the swap-in, so the second finds the PTE set; shmem_swapin_folio would give back a frame it read
  // in second).
  s.cpu(0).cpu.start(touch_all(s.cpu(0), m.mm, m.addr, 1, false));
  s.cpu(1).cpu.start(touch_all(s.cpu(1), m.mm, m.addr, 1, false));
  s.sys.scheduler().run(s.sys.scheduler().now() + sim::milliseconds(50));
  EXPECT_EQ(s.k.shmem_swap().stats.pswpin, 1u);
  EXPECT_TRUE(m.file.swap_entries.empty());
  EXPECT_EQ(m.file.pages.size(), 1u);
  EXPECT_EQ(m.mapped(), 1u);
  EXPECT_LE(s.k.frames().frees(), frees + 1);
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Madvise, PageoutLeavesAPageThatAnotherProcessMapsToo) {
  Scenario s(profile("linux-6.6-arm64"), "rpi4-a72-4c");
  Shmem m(s, 2);
  // A second process maps the same shmem file and reads its first page; the fault maps the second page around it
  // (do_fault_around): folio_mapcount is 2 for both.
  MmStruct& other = s.k.new_mm();
  std::uint64_t addr = 0;
  s.run_on(1, testing::switch_to_mm(s.cpu(1), other));
  s.run_on(1, mmap_shmem(s.cpu(1), other, m.file, addr));
  s.run_on(1, touch_all(s.cpu(1), other, addr, 1, false));
  s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 2 * kPageSize));
  EXPECT_EQ(other.pgd.lookup(vpn_of(addr + kPageSize)).has_value(), true);
  EXPECT_EQ(s.k.shmem_swap().stats.pswpout, 0u);
  EXPECT_EQ(m.mapped(), 2u);
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Madvise, V65FlushesEachPageAndV66OnceAtTheEndOfShrinkFolioList) {
  for (const char* kernel : {"linux-6.5-arm64", "linux-6.6-arm64"}) {
    SCOPED_TRACE(kernel);
    Scenario s(profile(kernel), "rpi4-a72-4c");
    Shmem m(s, 8);
    // A first round swaps the written (dirty) pages out; the second round's pages were only read back (clean PTEs).
    s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 8 * kPageSize));
    s.run_on(0, touch_all(s.cpu(0), m.mm, m.addr, 8, false));
    const std::uint64_t dsb = arm64_stats(s).dsb_ish, tlbi = arm64_stats(s).tlbi_vale1is;
    s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 8 * kPageSize));
    // Every page: one TLBI VALE1IS as it is unmapped and one in tlb_end_vma's flush of the young-bit range.
    EXPECT_EQ(arm64_stats(s).tlbi_vale1is - tlbi, 16u);
    // v6.5: flush_tlb_page's DSB ISH for each page, and tlb_end_vma's; v6.6: shrink_folio_list's
    // try_to_unmap_flush and tlb_end_vma's (flush_tlb_batched_pending's DSB finds no TLBI outstanding).
    EXPECT_EQ(arm64_stats(s).dsb_ish - dsb, std::string(kernel) == "linux-6.5-arm64" ? 9u : 2u);
    EXPECT_EQ(s.k.shmem_swap().stats.pswpout, 16u);
    EXPECT_TRUE(s.oracle().violations().empty());
  }
}

TEST(Madvise, V66FlushesBeforeThePageoutOfAPageItsPteDirtied) {
  Scenario s(profile("linux-6.6-arm64"), "rpi4-a72-4c");
  Shmem m(s, 4);  // written: dirty PTEs
  const std::uint64_t dsb = arm64_stats(s).dsb_ish;
  s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 4 * kPageSize));
  // try_to_unmap_flush_dirty before each pageout (4), then tlb_end_vma's flush (1); the final try_to_unmap_flush has
  // nothing left.
  EXPECT_EQ(arm64_stats(s).dsb_ish - dsb, 5u);
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Madvise, PageoutOnX86FlushesOnceInTlbFinishMmuAfterReclaimsFlushes) {
  hw::Machine machine = hw::load_machine("small-2s2c");  // no swap costs of its own: the test gives some
  machine.kernel.swap_out = machine.kernel.swap_in = sim::nanoseconds(500);
  Scenario s(machine, profile("linux-6.13"));
  Shmem m(s, 4);
  const auto local = [&] {
    return s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE) +
           s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL);
  };
  const std::uint64_t before = local();
  s.run_on(0, pageout(s.cpu(0), m.mm, m.addr, 4 * kPageSize));
  EXPECT_EQ(s.k.shmem_swap().stats.pswpout, 4u);
  EXPECT_EQ(m.mapped(), 0u);
  // x86 defers reclaim's flush only when another CPU is in mm_cpumask: each page is flushed by ptep_clear_flush, and
  // tlb_finish_mmu flushes the young-bit range (tlb_end_vma flushes nothing on x86).
  EXPECT_GT(local(), before);
  EXPECT_TRUE(s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::kernel
